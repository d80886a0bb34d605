"""Breakpoints beyond file:line and exception stops (issue 31 §1), on real debugpy: a condition,
a hit count and a logpoint on a small program; pytest on sqlparse's own suite (a PyPI sdist) with
one failing test stops at the failing assert with the test's locals when the `userUnhandled`
filter is on (it stopped only at `SystemExit` before); `just_my_code: false` stops inside an
installed package; unknown filters and empty conditions are refused, naming what exists."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.corpus import corpus_copy
from tests.debug.conftest import copy_project, line_of

FAILING = """import sqlparse


def test_keywords_upper():
    formatted = sqlparse.format("select a from b", keyword_case="upper")
    expected = "SELECT a FROM c"
    assert formatted == expected
"""
RUNNER = """import sys

import pytest

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "tests/test_format.py", "tests/test_zz.py"]))
"""


def venv_of_this_python(root: Path) -> None:
    """The project's interpreter is this one (which has pytest): debugpy launches the project's
    `.venv/bin/python`."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)


async def test_condition_hit_count_and_logpoint(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    app = root / "app.py"
    acc, ret = line_of(app, "acc += v"), line_of(app, "return acc")
    dbg = await open_debugger(root)

    async def value_of(name: str) -> str:
        frame = (await dbg.ok("stack")).data["frames"][0]["id"]
        return (await dbg.ok("evaluate", expression=name, frame_id=frame)).data["result"]

    r = await dbg.ok(
        "breakpoints",
        file="app.py",
        lines=[{"line": acc, "hit_count": 3}, {"line": ret, "log_message": "acc={acc}"}],
    )
    assert "hit 3" in r.text and "log 'acc={acc}'" in r.text and "pending" in r.text
    r = await dbg.ok("launch", program="app.py")
    assert f"app.py:{acc}" in r.text and "stopped" in r.text, r.text
    assert await value_of("v") == "2"  # the third pass
    r = await dbg.ok("breakpoints", file="app.py", lines=[{"line": acc, "condition": "v == 4"}])
    assert "if v == 4" in r.text and "verified" in r.text
    await dbg.ok("continue")
    assert await value_of("v") == "4"
    await dbg.ok("breakpoints", file="app.py", lines=[{"line": ret, "log_message": "acc={acc}"}])
    r = await dbg.ok("continue")  # a logpoint prints and does not stop: on to the exit
    assert f"app.py:{ret}" not in r.text and "acc=10" in r.text, r.text


async def test_refusals_name_what_exists(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root)
    r = await dbg.err("breakpoints", file="app.py", lines=[{"line": 5, "condition": " "}])
    assert "lines[0].condition is empty" in r.text
    r = await dbg.err("breakpoints", file="app.py", lines=[{"line": 5, "when": "x"}])
    assert "when" in r.text
    await dbg.ok("breakpoints", file="app.py", lines=[line_of(root / "app.py", "call total")])
    await dbg.ok("launch", program="app.py")
    r = await dbg.err("exceptions", filters=["raised", "nonsense"])
    assert "unknown filters for debugpy: nonsense" in r.text and "userUnhandled" in r.text, r.text
    r = await dbg.ok("exceptions", filters=["raised"])
    assert "set on debugpy" in r.text
    status = await dbg.ok("status")
    assert "exception filters: raised; debugpy has: raised (" in status.text, status.text
    await dbg.ok("terminate")


async def test_pytest_stops_at_the_failing_assert_of_sqlparse(
    tmp_path: Path, open_debugger
) -> None:
    root = corpus_copy("sqlparse", tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'sq'\nversion = '0'\n")
    (root / "tests" / "test_zz.py").write_text(FAILING)
    (root / "run_tests.py").write_text(RUNNER)
    venv_of_this_python(root)
    dbg = await open_debugger(root)
    r = await dbg.ok("exceptions", filters=["userUnhandled"])
    assert "pending" in r.text
    r = await dbg.ok("launch", program="run_tests.py")
    # userUnhandled also stops where a test expects the exception (`pytest.raises` is library
    # code): go on past those to the failing assert.
    for _ in range(30):
        if "test_zz.py:7" in r.text or "stopped" not in r.text:
            break
        r = await dbg.ok("continue")
    assert "stopped" in r.text and "test_zz.py:7" in r.text, r.text
    assert "AssertionError" in r.text
    frame = (await dbg.ok("stack")).data["frames"][0]["id"]
    formatted = await dbg.ok("evaluate", expression="formatted", frame_id=frame)
    assert "SELECT a FROM b" in formatted.text, formatted.text
    await dbg.ok("terminate")


async def test_just_my_code_false_stops_in_a_library(venv_project: Path, open_debugger) -> None:
    """A breakpoint inside an installed package (the project's own `.venv` site-packages) is
    skipped by debugpy's default and honoured with `just_my_code: false`."""
    root = venv_project
    (site,) = (root / ".venv" / "lib").glob("python3*/site-packages")
    (site / "helper.py").write_text("def twice(x):\n    y = x * 2\n    return y\n")
    (root / "main.py").write_text("import helper\nprint(helper.twice(21))\n")
    lib = site.relative_to(root).as_posix() + "/helper.py"
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file=lib, lines=[2])
    r = await dbg.ok("launch", program="main.py")
    # library code: debugpy leaves the breakpoint out, saying why, and the program runs through
    assert "excluded" in r.text and "exited with code 0" in r.text and "42" in r.text, r.text
    await dbg.ok("terminate")
    r = await dbg.ok("launch", program="main.py", just_my_code=False)
    assert f"{lib}:2" in r.text and "stopped" in r.text, r.text
    await dbg.ok("terminate")
