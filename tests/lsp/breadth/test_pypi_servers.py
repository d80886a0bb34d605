"""The servers installed from PyPI (plugins/lsp/deps/pypi.sh), each on real code from a registry:
pyright, pylsp, jedi-language-server, ty and pyrefly on click and requests (PyPI sdists), fortls
on MINPACK (Debian's source), cmake-language-server on CMake's own modules (Debian's cmake-data),
systemd-language-server on systemd's own units (Debian's systemd).

Each differential compares our `lsp` answers with a raw client of a second process of the same
server (tests/lsp/differential.py); where the server has a CLI checker, our `lsp diagnostics` of
unmodified files are counted against it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import tokenize
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import tests.lsp.differential as harness
from livetools_lsp.pyenv import find_interpreter
from tests.corpus import corpus_copy, realworld, sample
from tests.lsp.conftest import lsp_run
from tests.lsp.differential import Case, binary, check, differential, our_diagnostics

PY = ("python", (".py",))
NAV = ("definition", "references", "hover")
PYREFLY = ("pyrefly", "lsp", "--indexing-mode", "lazy-blocking")  # as the spec starts it


def _py(project: str, server: str, argv: tuple[str, ...], package: str, **kw: object) -> Case:
    under = "src" if project in ("click", "requests") else ""
    return Case(project, server, argv, *PY, under, package=package, files=3, **kw)  # type: ignore[arg-type]


CASES = [
    _py("click", "pyright", ("pyright-langserver", "--stdio"), "uv sync (pyright)"),
    _py("requests", "pyright", ("pyright-langserver", "--stdio"), "uv sync (pyright)"),
    _py("click", "pylsp", ("pylsp",), "uv sync (python-lsp-server)"),
    _py("requests", "pylsp", ("pylsp",), "uv sync (python-lsp-server)"),
    _py("click", "jedi-language-server", ("jedi-language-server",), "plugins/lsp/deps/pypi.sh"),
    _py("requests", "jedi-language-server", ("jedi-language-server",), "plugins/lsp/deps/pypi.sh"),
    _py("click", "ty", ("ty", "server"), "plugins/lsp/deps/pypi.sh"),
    _py("requests", "ty", ("ty", "server"), "plugins/lsp/deps/pypi.sh"),
    _py("click", "pyrefly", PYREFLY, "plugins/lsp/deps/pypi.sh"),
    _py("requests", "pyrefly", PYREFLY, "plugins/lsp/deps/pypi.sh"),
    Case(
        "minpack",
        "fortls",
        ("fortls", "--disable_autoupdate"),
        "fortran",
        (".f",),
        actions=("symbols", *NAV),
        files=3,
        package="plugins/lsp/deps/pypi.sh",
    ),
    Case(
        "lapack-f90",
        "fortls",
        ("fortls", "--disable_autoupdate"),
        "fortran",
        (".f90",),
        actions=("symbols", *NAV),
        files=3,
        package="plugins/lsp/deps/pypi.sh",
    ),
    Case(
        "systemd-units",
        "systemd-language-server",
        ("systemd-language-server",),
        "systemd",
        (".service", ".socket", ".timer"),
        actions=("hover",),
        files=4,
        positions=10,
        package="plugins/lsp/deps/pypi.sh",
    ),
    Case(
        "cmake-modules",
        "cmake-language-server",
        ("cmake-language-server",),
        "cmake",
        (".cmake",),
        actions=("hover",),
        files=4,
        positions=16,  # hover answers only for commands, variables and modules it documents
        package="plugins/lsp/deps/pypi.sh",
    ),
]


def _python_names(path: Path) -> set[tuple[int, int]]:
    """(line, column) of every name token: code, not docstrings or comments."""
    with path.open("rb") as f:
        tokens = list(tokenize.tokenize(f.readline))
    return {t.start for t in tokens if t.type == tokenize.NAME}


def _fortran_code(path: Path) -> set[int]:
    """Lines that are not comments (fixed form: c, C, * or ! in column 1; free form: leading !)."""
    lines = path.read_text().splitlines()
    return {
        n
        for n, line in enumerate(lines, 1)
        if line[:1] not in ("c", "C", "*", "!") and not line.lstrip().startswith("!")
    }


def _in_code(original: Any, language: str) -> Any:
    """The harness's position sampler, keeping only positions in code (it skips comment lines
    by their first characters, which Python docstrings and Fortran 77 comments escape)."""

    def positions(root: Path, files: list[Path], count: int) -> list[harness.Position]:
        kept = []
        for spot in original(root, files, 10**9):
            if language == "python":
                ok = (spot.line, spot.column) in _python_names(root / spot.rel)  # BMP text
            else:
                ok = spot.line in _fortran_code(root / spot.rel)
            if ok:
                kept.append(spot)
        return sample(kept, count, seed=12)

    return positions


@realworld
@pytest.mark.parametrize("case", CASES, ids=[f"{c.server}-{c.project}" for c in CASES])
async def test_navigation_agrees_with_a_raw_client(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.language in ("python", "fortran"):
        monkeypatch.setattr(harness, "positions", _in_code(harness.positions, case.language))
    check(await differential(case, tmp_path), case)


# -- diagnostics of unmodified files vs the server's own CLI -----------------------------------

Found = dict[str, Counter[tuple[int, str | None]]]


def _rel(root: Path, path: str) -> str:
    return os.path.relpath(os.path.realpath(root / path), os.path.realpath(root)).replace(
        os.sep, "/"
    )


def _pyright(out: bytes, root: Path, files: list[str]) -> Found:
    found: Found = {f: Counter() for f in files}
    for d in json.loads(out)["generalDiagnostics"]:
        if d["severity"] == "error":
            found[_rel(root, d["file"])][(d["range"]["start"]["line"] + 1, d.get("rule"))] += 1
    return found


def _ty(out: bytes, root: Path, files: list[str]) -> Found:
    found: Found = {f: Counter() for f in files}
    for d in json.loads(out):
        if d["severity"] == "major":  # ty's errors; "minor" are its warnings
            where = d["location"]
            found[_rel(root, where["path"])][
                (where["positions"]["begin"]["line"], d["check_name"])
            ] += 1
    return found


def _pyrefly(out: bytes, root: Path, files: list[str]) -> Found:
    found: Found = {f: Counter() for f in files}
    for d in json.loads(out)["errors"]:
        if d.get("severity", "error") == "error":
            found[_rel(root, d["path"])][(d["line"], d["name"])] += 1
    return found


def _pyflakes(out: bytes, root: Path, files: list[str]) -> Found:
    found: Found = {f: Counter() for f in files}
    for line in out.decode().splitlines():
        match = re.match(r"(.+?):(\d+):\d+:? ", line)
        if match:
            found[_rel(root, match.group(1))][(int(match.group(2)), None)] += 1
    return found


@dataclass(frozen=True)
class Cli:
    """A server's own checker: argv before the files, how its output reads, which of our
    items it is counted against (`errors`: only severity error; `codes`: compare codes too).
    pylsp's are pyflakes's (the spec turns pycodestyle off; its other linters are off by
    default)."""

    server: str
    argv: tuple[str, ...]
    parse: Callable[[bytes, Path, list[str]], Found]
    project: str = "click"
    errors: bool = True
    codes: bool = True
    include: tuple[str, ...] = ()  # always checked beside the sample (a file the CLI flags)


CLIS = [
    Cli("pyright", ("pyright", "--outputjson"), _pyright),
    Cli("ty", ("ty", "check", "--output-format", "gitlab"), _ty, project="requests"),
    Cli(
        "pyrefly",
        ("pyrefly", "check", "--output-format", "json"),
        _pyrefly,
        project="requests",
        include=("src/requests/help.py",),
    ),
    Cli(
        "pylsp",
        ("pyflakes",),
        _pyflakes,
        project="requests",
        errors=False,
        codes=False,
        include=("src/requests/__init__.py",),
    ),
]


async def _run_cli(argv: list[str], root: Path) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 180)
    return out


@realworld
@pytest.mark.parametrize("cli", CLIS, ids=[c.server for c in CLIS])
async def test_diagnostics_agree_with_the_cli(tmp_path: Path, cli: Cli) -> None:
    root = corpus_copy(cli.project, tmp_path)
    pool = sorted(p.relative_to(root).as_posix() for p in (root / "src" / cli.project).glob("*.py"))
    files = sorted({*sample(pool, 3, seed=5), *cli.include})
    argv = [binary(cli.argv[0], "plugins/lsp/deps/pypi.sh or uv sync"), *cli.argv[1:]]
    if cli.server == "pyright":  # as the spec's python_env pushes it
        interpreter, _ = find_interpreter(root)
        argv += ["--pythonpath", interpreter] if interpreter else []
    theirs = cli.parse(await _run_cli([*argv, *files], root), root, files)
    ours: Found = {}
    async with lsp_run(root, [cli.server]) as run:
        for rel in files:
            items = await our_diagnostics(run, rel)
            ours[rel] = Counter(
                (d["line"], d.get("code") if cli.codes else None)
                for d in items
                if d["severity"] == "error" or not cli.errors
            )
    agreed = sum(ours[f] == theirs[f] for f in files)
    print(f"\n{cli.server} diagnostics vs its CLI on {cli.project}: {agreed}/{len(files)} agree")
    for f in files:
        print(f"  {f}: ours {sorted(ours[f].elements())} CLI {sorted(theirs[f].elements())}")
    assert agreed == len(files)


@realworld
async def test_ruff_linter_items_agree_with_ruff_check(tmp_path: Path) -> None:
    """The built-in ruff linter, beside basedpyright, where the project configures ruff: its
    items (labelled ruff) against `ruff check` over the same files."""
    ruff = binary("ruff", "uv sync")
    root = corpus_copy("requests", tmp_path)
    (root / "ruff.toml").write_text('[lint]\nselect = ["F", "E9", "B"]\n')
    pool = sorted(p.relative_to(root).as_posix() for p in (root / "src/requests").glob("*.py"))
    files = sample(pool, 4, seed=7)
    out = await _run_cli([ruff, "check", "--output-format", "json", "--no-cache", *files], root)
    theirs: Found = {f: Counter() for f in files}
    for item in json.loads(out):
        theirs[_rel(root, item["filename"])][(item["location"]["row"], item["code"])] += 1
    counts: dict[str, int] = {}
    shown: Found = {}
    async with lsp_run(root, ["basedpyright"]) as run:
        for rel in files:
            # The answer lists at most 100 items (basedpyright's fill it); the header counts all.
            r = await run.call("lsp", {"action": "diagnostics", "file": rel})
            assert not r.is_error, r.text
            items = (r.data or {}).get("diagnostics", [])
            shown[rel] = Counter((d["line"], d["code"]) for d in items if d["source"] == "ruff")
            part = next((p for p in r.text.splitlines()[0].split(";") if "(ruff)" in p), "")
            counts[rel] = sum(int(n) for n in re.findall(r"(\d+) \w+", part))
    agreed = sum(counts[f] == theirs[f].total() and not shown[f] - theirs[f] for f in files)
    print(f"\nruff linter vs ruff check on requests: {agreed}/{len(files)} files agree")
    for f in files:
        listed = sorted(shown[f].elements())[:6]
        print(f"  {f}: ours {counts[f]} ({listed}), CLI {sorted(theirs[f].elements())[:6]}")
    assert sum(theirs.values(), Counter()), "ruff check found nothing: no comparison"
    assert agreed == len(files)


@realworld
async def test_ruff_linter_waits_for_the_projects_ruff_configuration(tmp_path: Path) -> None:
    """Without ruff.toml or [tool.ruff], ruff's defaults would be noise: no ruff items."""
    binary("ruff", "uv sync")
    root = corpus_copy("requests", tmp_path)
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "src/requests/utils.py"})
    assert not r.is_error, r.text
    assert "(ruff)" not in r.text.splitlines()[0], r.text.splitlines()[0]
