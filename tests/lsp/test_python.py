"""Every lsp action against real Python servers (basedpyright, the default, and pylsp with
pyflakes) on the sample project, including non-ASCII lines and ambiguous symbols."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import lsp_run, server_sessions
from tests.support import require_binary

SERVERS = {
    "basedpyright": ("basedpyright-langserver", "uv sync (basedpyright is a dependency)"),
    "pylsp": ("pylsp", "uv sync (python-lsp-server[pyflakes] is a test dependency)"),
}


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest) -> str:
    binary, install = SERVERS[request.param]
    require_binary(binary, install)
    return request.param


async def test_navigation_actions(project, server: str) -> None:
    root = project("py")
    async with lsp_run(root, [server]) as run:
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 3, "symbol": "Square"}
        )
        assert not r.is_error, r.text
        assert "shapes.py:15: class Square(Shape):" in r.text
        assert r.data["locations"][0] == {
            "path": "shapes.py",
            "line": 15,
            "text": "class Square(Shape):",
        }

        r = await run.call(
            "lsp", {"action": "references", "file": "shapes.py", "line": 22, "symbol": "total_area"}
        )
        assert not r.is_error, r.text
        assert "app.py:1: from shapes import Square, total_area" in r.text
        assert "app.py:5: print(total_area([unit, big]), total_area([big])) (2 on this line)" in (
            r.text
        )
        assert "shapes.py:22: def total_area" in r.text

        # The declaration first, then path order, the same on every call; the header names
        # the symbol, not its occurrence suffix.
        asked = {"action": "references", "file": "app.py", "line": 5, "symbol": "total_area#2"}
        answers = [await run.call("lsp", asked) for _ in range(3)]
        assert answers[0].text.startswith('4 references to "total_area" on 3 lines'), answers[0]
        first = answers[0].data["locations"]
        assert first[0]["path"] == "shapes.py" and first[0]["line"] == 22, first
        assert [p["path"] for p in first[1:]] == sorted(p["path"] for p in first[1:])
        assert all(a.data == answers[0].data for a in answers)

        r = await run.call(
            "lsp", {"action": "hover", "file": "app.py", "line": 5, "symbol": "total_area"}
        )
        assert not r.is_error, r.text
        assert "Sum of the areas" in r.text
        assert "occurs 2 times on line 5; used the 1st" in r.text
        assert "total_area#2" in r.text

        r = await run.call("lsp", {"action": "symbols", "file": "shapes.py"})
        assert not r.is_error, r.text
        assert "class Square" in r.text and "function total_area" in r.text
        assert any(s["name"] == "area" for s in r.data["symbols"])

        r = await run.call(
            "lsp", {"action": "type_definition", "file": "app.py", "line": 3, "symbol": "unit"}
        )
        if server == "pylsp" and r.is_error:
            assert "does not support type_definition" in r.text
        else:
            assert "shapes.py:15: class Square(Shape):" in r.text, r.text

        r = await run.call(
            "lsp", {"action": "implementation", "file": "shapes.py", "line": 9, "symbol": "area"}
        )
        if server == "pylsp":
            assert r.is_error and "pylsp does not support implementation" in r.text
        else:
            assert not r.is_error, r.text
            assert "shapes.py:18: def area(self) -> float:" in r.text

        r = await run.call("lsp", {"action": "symbols", "query": "Squ"})
        if server == "pylsp":
            assert r.is_error and "does not support workspace symbol search" in r.text
        else:
            assert not r.is_error, r.text
            assert "shapes.py:15: class Square" in r.text

        r = await run.call(
            "lsp", {"action": "code_actions", "file": "app.py", "line": 3, "symbol": "Square"}
        )
        assert not r.is_error or "does not support code actions" in r.text, r.text

        r = await run.call("lsp", {"action": "status"})
        assert f"running: {server} root=." in r.text
        assert r.data["running"][0]["pid"] == server_sessions(run)[0]


async def test_non_ascii_line(project, server: str) -> None:
    """Line 6 has multi-byte and astral characters before the symbol: the column must be
    counted in UTF-16 code units or the server lands on another name."""
    root = project("py")
    async with lsp_run(root, [server]) as run:
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 6, "symbol": "Square"}
        )
        assert "shapes.py:15: class Square(Shape):" in r.text, r.text
        # résumé occurs twice on line 6; the 2nd is the use in print(), its definition is the
        # assignment on the same line.
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 6, "symbol": "résumé#2"}
        )
        assert "app.py:6:" in r.text, r.text
        r = await run.call(
            "lsp", {"action": "hover", "file": "app.py", "line": 6, "symbol": "side"}
        )
        assert "side" in r.text and "float" in r.text, r.text


async def test_bad_positions_are_clear_errors(project, server: str) -> None:
    root = project("py")
    async with lsp_run(root, [server]) as run:
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 3, "symbol": "Circle"}
        )
        assert r.is_error
        assert 'symbol "Circle" is not on line 3 of app.py; the line is: "unit = Square(1.0)"' in (
            r.text
        )
        r = await run.call("lsp", {"action": "definition", "file": "app.py", "line": 3})
        assert r.is_error and "needs symbol" in r.text
        r = await run.call("lsp", {"action": "hover", "file": "app.py", "line": 99, "symbol": "x"})
        assert r.is_error and "line 99 is outside app.py, which has" in r.text
        r = await run.call(
            "lsp", {"action": "hover", "file": "app.py", "line": 5, "symbol": "total_area#3"}
        )
        assert r.is_error and "#3 does not exist" in r.text
        r = await run.call("lsp", {"action": "hover", "file": "nope.py", "line": 1, "symbol": "x"})
        assert r.is_error and "no such file" in r.text
        r = await run.call("lsp", {"action": "symbols", "query": "  "})
        assert r.is_error and "needs file" in r.text


async def test_diagnostics_action_and_reload(project, server: str) -> None:
    root = project("py")
    (root / "broken.py").write_text("import os\n\nprint(undefined_name)\n")
    async with lsp_run(root, [server]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "broken.py"})
        assert not r.is_error, r.text
        assert "3: error" in r.text and "undefined_name" in r.text, r.text
        assert "    print(undefined_name)" in r.text
        first = server_sessions(run)
        r = await run.call("lsp", {"action": "reload"})
        assert f"stopped {server} (.)" in r.text
        r = await run.call("lsp", {"action": "diagnostics", "file": "app.py"})
        assert "no diagnostics" in r.text, r.text
        assert server_sessions(run) != first


def test_marker_missing(tmp_path: Path) -> None:
    """Checked through the CLI: a one-shot call in a fresh run explains why no server serves."""
    import subprocess

    (tmp_path / "loose.py").write_text("x = 1\n")
    out = subprocess.run(
        [
            "livetools",
            "call",
            "lsp",
            '{"action":"hover","file":"loose.py","line":1,"symbol":"x"}',
            "--root",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "no usable language server for loose.py" in out.stdout
    # Said once for every Python server, naming the file to create.
    assert "no root marker: create pyproject.toml (or setup.cfg," in out.stdout
    assert "(basedpyright, pyright, pylsp, " in out.stdout and " need one)" in out.stdout
    assert out.stdout.count("pyproject.toml") == 1, out.stdout


async def test_status_says_which_python_server_answers(project) -> None:
    """Three Python servers are usable here: status names the one that answers .py files and
    the ones standing by, and lsp.prefer changes which."""
    require_binary("basedpyright-langserver", "uv sync")
    require_binary("pylsp", "uv sync")
    root = project("py")
    async with lsp_run(root) as run:
        text = (await run.call("lsp", {"action": "status"})).text
    answering = [line for line in text.splitlines() if "answers .py" in line]
    assert len(answering) == 1 and "basedpyright" in answering[0], text
    assert "pylsp (root .; starts at first use); stands by" in text, text
    async with lsp_run(root, ["pylsp"]) as run:
        text = (await run.call("lsp", {"action": "status"})).text
    assert "usable: pylsp (root .; starts at first use); answers .py .pyi" in text, text
