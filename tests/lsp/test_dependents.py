"""Diagnostics on write reach dependents: a signature changed in one file reports the callers it
broke in the other files the server holds open, says which files were checked, and blames nothing
that was already broken. On real projects: click with basedpyright (pull), rxjs with
typescript-language-server (push)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.support import require_binary


def news(text: str) -> list[str]:
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("new diagnostics after")]
    return lines[starts[0] :] if starts else []


def in_file(lines: list[str], rel: str, severity: str = "error") -> list[str]:
    return [line for line in lines if re.match(rf"{re.escape(rel)}:\d+: {severity}", line)]


@realworld
async def test_click_signature_change_breaks_callers_in_open_files(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = corpus_copy("click", tmp_path)
    callers = ["src/click/formatting.py", "src/click/_termui_impl.py"]
    async with lsp_run(root, ["basedpyright"]) as run:
        for rel in callers:  # the agent has looked at them: the server holds them open
            r = await run.call("lsp", {"action": "diagnostics", "file": rel})
            assert not r.is_error, r.text
        old = "def term_len(x: str) -> int:"
        new = "def term_len(x: str, width: int) -> int:"
        r = await run.call("edit", {"path": "src/click/_compat.py", "old": old, "new": new})
        assert not r.is_error, r.text
        lines = news(r.text)
        # 8 calls in formatting.py, 2 in _termui_impl.py; nothing in _compat.py itself. Errors
        # come first in each file's cap of 10, before the follow-on "type is unknown" warnings.
        formatting = in_file(lines, callers[0])
        termui = in_file(lines, callers[1])
        assert len(formatting) == 8 and len(termui) == 2, r.text
        assert all("reportCallIssue" in line and '"width"' in line for line in formatting + termui)
        assert {line.split(":")[1] for line in termui} == {"245", "259"}, r.text
        # An import cycle through _compat.py comes and goes with which files the server has
        # checked (see test_python_env.py); anything else there would be blamed wrongly.
        own = in_file(lines, "src/click/_compat.py")
        assert all("reportImportCycles" in line for line in own), r.text
        assert "also checked 2 other files: " in lines[0], lines[0]
        assert all(rel in lines[0] for rel in callers), lines[0]

        # Fixed: nothing new anywhere; broken again: reported again (the ledger followed).
        r = await run.call("edit", {"path": "src/click/_compat.py", "old": new, "new": old})
        assert not [n for n in news(r.text)[1:] if "reportImportCycles" not in n], r.text
        r = await run.call("edit", {"path": "src/click/_compat.py", "old": old, "new": new})
        assert len(in_file(news(r.text), callers[1])) == 2, r.text


_RXJS_TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "target": "es2017",
        "lib": ["es2018", "dom"],
        "noEmit": True,
        "skipLibCheck": True,
        "baseUrl": ".",
        "paths": {"rxjs": ["./"], "rxjs/*": ["./*"]},
    },
    "include": ["./**/*.ts"],
}


@realworld
async def test_rxjs_signature_change_breaks_callers_in_open_files(tmp_path: Path) -> None:
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    root = corpus_copy("rxjs", tmp_path)
    (root / "src" / "tsconfig.json").write_text(json.dumps(_RXJS_TSCONFIG))
    callers = ["src/internal/util/isPromise.ts", "src/internal/util/isScheduler.ts"]
    async with lsp_run(root, ["typescript-language-server"]) as run:
        for rel in callers:
            r = await run.call("lsp", {"action": "diagnostics", "file": rel})
            assert not r.is_error, r.text
        target = "src/internal/util/isFunction.ts"
        old = "export function isFunction(value: any)"
        new = "export function isFunction(value: any, strict: boolean)"
        r = await run.call("edit", {"path": target, "old": old, "new": new})
        assert not r.is_error, r.text
        lines = news(r.text)
        for rel in callers:
            broken = in_file(lines, rel)
            assert broken and all("error [2554]" in line for line in broken), r.text
        assert not in_file(lines, target), r.text
        assert "also checked 2 other files: " in lines[0], r.text


async def test_gopls_file_not_open_but_republished(project) -> None:
    """gopls re-publishes the whole package after a change: main.go, never opened by the
    run and with no publish before (nothing to report then), is reported."""
    require_binary("gopls", "apt-get install gopls")
    root = project("go")
    async with lsp_run(root, ["gopls"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "shapes.go"})
        assert not r.is_error, r.text
        old = "func TotalArea(shapes []Shape) float64 {"
        new = "func TotalArea(shapes []Shape, scale float64) float64 {"
        r = await run.call("edit", {"path": "shapes.go", "old": old, "new": new})
        lines = news(r.text)
        broken = in_file(lines, "main.go")
        assert len(broken) == 2 and all("TotalArea" in line for line in broken), r.text
        assert "also checked 1 other file: main.go" in lines[0], r.text
        assert not in_file(lines, "shapes.go"), r.text
