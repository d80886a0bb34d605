"""The project checker (`lsp diagnostics file="*"`) against the real tools: tsc is skipped where
there is no tsconfig.json, the project's node_modules typescript wins over a global one, `clangd
--check` is reduced to its diagnostic lines with its exit code read for what it means, a cut
output is flagged in the data, and tsgo is not usable on a tsc without --lsp."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from livetools_lsp.checker import _read_clangd
from tests.lsp.conftest import lsp_run
from tests.support import missing, require_binary

_TSC = "npm install -g typescript@6"


async def test_tsc_skipped_without_tsconfig(tmp_path: Path) -> None:
    require_binary("tsc", _TSC)
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    # A C repository's test folder with a package.json only (the case that gave 5 KB of help).
    (tmp_path / "package.json").write_text('{"name": "t", "version": "1.0.0"}\n')
    (tmp_path / "run.js").write_text("console.log(1);\n")
    async with lsp_run(tmp_path, ["typescript-language-server"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    assert "tsc --noEmit --pretty false (in .): skipped, no tsconfig.json there" in r.text, r.text
    assert "Usage" not in r.text and "exit 1" not in r.text and len(r.text) < 300, r.text
    check = next(c for c in r.data["checks"] if c["checker"].startswith("tsc"))
    assert check["skipped"] == "no tsconfig.json"


def _global_typescript() -> Path:
    tsc = Path(require_binary("tsc", _TSC)).resolve()  # .../typescript/bin/tsc
    package = tsc.parent.parent
    if not (package / "package.json").exists():
        pytest.skip(f"tsc at {tsc} is not inside an npm typescript package")
    return package


async def test_project_node_modules_typescript_wins(project) -> None:
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    package = _global_typescript()
    root = project("ts")
    # The project's own typescript, as `npm install` lays it out (linked, not copied).
    (root / "node_modules" / ".bin").mkdir(parents=True)
    (root / "node_modules" / "typescript").symlink_to(package, target_is_directory=True)
    (root / "node_modules" / ".bin" / "tsc").symlink_to("../typescript/bin/tsc")
    (root / "src" / "bad.ts").write_text("const n: number = 'text';\n")
    async with lsp_run(root, ["typescript-language-server"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    head = r.text.splitlines()[0]
    assert head.startswith("$ tsc --noEmit --pretty false (node_modules/.bin/tsc) (in .)"), r.text
    assert "src/bad.ts(1,7): error TS2322" in r.text, r.text
    check = next(c for c in r.data["checks"] if c["checker"].startswith("tsc"))
    assert check["exit"] == 2 and "output_truncated" not in check


async def test_clangd_check_reduced_to_diagnostics(project) -> None:
    require_binary("clangd", "apt-get install clangd")
    root = project("c")
    (root / "src" / "bad.c").write_text("int f(void) { return undefined_x; }\n")
    async with lsp_run(root, ["clangd"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    head, *body = r.text.splitlines()
    assert head.startswith("$ clangd --log=error --check={file} (in .)"), r.text
    assert head.endswith(": 1 errors"), r.text
    assert body == [
        "src/bad.c:1: error [undeclared_var_use]: use of undeclared identifier 'undefined_x'"
    ], r.text
    check = r.data["checks"][0]
    assert check["errors"] == 1 and check["exit"] == 1
    # The real tool's own exit code for this: 3 ("check failed"), the same as for a failed
    # refactoring self-test, which is why it is not taken as the verdict.
    argv = ["clangd", "--log=error", "--check=src/bad.c"]
    proc = await asyncio.to_thread(subprocess.run, argv, cwd=root, capture_output=True, timeout=120)
    assert proc.returncode == 3
    (root / "src" / "bad.c").unlink()
    async with lsp_run(root, ["clangd"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    assert r.text.splitlines()[0].endswith(": clean"), r.text


def test_clangd_tweak_failures_are_not_code_errors() -> None:
    # clangd --check's own lines (format of clangd 14-22 check.cpp): a refactoring that fails at
    # some token is logged at error level and makes it exit 3, with no code error at all.
    output = (
        "E[10:00:00.000]     tweak: ExtractVariable ==> FAIL: Failed to apply\n"
        "E[10:00:00.001]     tweak: ExpandAutoType ==> FAIL: Could not deduce type\n"
    )
    reading = _read_clangd("src/a.c", 3, output)
    assert reading.errors == 0 and reading.lines == []
    assert reading.note == "src/a.c: 2 clangd self-test failures (not code errors)"
    # A file it could not check at all is not "clean" either.
    reading = _read_clangd("src/a.c", 1, "E[10:00:00.000] Failed to compile, no AST\n")
    assert reading.errors is None and "exit 1: Failed to compile, no AST" in reading.lines[0]


async def test_truncated_output_is_flagged(project) -> None:
    require_binary("basedpyright", "uv sync")
    root = project("py")
    body = "".join(f"value_{i} = undefined_name_{i}\n" for i in range(200))
    (root / "many.py").write_text(body)
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    check = r.data["checks"][0]
    assert check["checker"] == "basedpyright", r.data
    assert check["output_truncated"].startswith("first "), check
    assert len(check["output"]) == 6000
    assert "truncated" in r.text


async def test_tsgo_not_usable_without_tsc_lsp(project) -> None:
    tsc = require_binary("tsc", _TSC)
    proc = await asyncio.to_thread(subprocess.run, [tsc, "--version"], capture_output=True)
    version = proc.stdout.decode()
    if version.startswith("Version 7"):
        pytest.skip("the tsc on PATH is TypeScript 7 (has --lsp)")
    root = project("ts")
    async with lsp_run(root, ["tsgo"]) as run:
        r = await run.call("lsp", {"action": "status"})
    tsgo = next(s for s in r.data["servers"] if s["server"] == "tsgo")
    assert tsgo["usable"] is False, tsgo
    assert "--lsp" in tsgo["reason"], tsgo


async def test_tsgo_usable_with_typescript_7() -> None:
    """TypeScript 7's tsc has --lsp: tsgo is usable with it. plugins/lsp/test-deps.sh puts it in
    the user cache (LIVETOOLS_TS7_BIN names another folder holding its tsc)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    default = cache / "livetools" / "ts7" / "node_modules" / ".bin"
    folder = os.environ.get("LIVETOOLS_TS7_BIN") or str(default)
    if not (Path(folder) / "tsc").exists():
        missing(f"TypeScript 7's tsc not in {folder}: run plugins/lsp/test-deps.sh")
    from livetools.detection import health_probe
    from livetools_lsp.servers import BUILTIN

    spec = next(s for s in BUILTIN if s.id == "tsgo")
    result = await health_probe(str(Path(folder) / "tsc"), spec.probe_argv[1:])
    assert result.ok, result
