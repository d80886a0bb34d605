"""Applying a code action (issue 32 §4): `lsp code_actions` gives each action an id and
`lsp_rename apply=ID` writes its edit through the checked, all-or-nothing write, the project's
checker clean after. Real typescript-language-server (add a missing import) and gopls (organize
imports); a stale id, an unknown id and a changed file are refused with nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.lsp.conftest import lsp_run
from tests.support import require_binary


def write(path: Path, text: str) -> None:
    path.write_text(text)


def read(path: Path) -> str:
    return path.read_text()


async def checker(argv: list[str], cwd: Path) -> tuple[int | None, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=-2
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 180)
    return proc.returncode, out.decode()


def pick(result, words: str) -> str:
    for action in result.data["actions"]:
        if words in action["title"]:
            return action["id"]
    raise AssertionError(f"no action with {words!r}: {result.text}")


async def test_typescript_add_missing_import(tmp_path: Path) -> None:
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = require_binary("tsc", "npm install -g typescript@6")
    write(tmp_path / "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')
    write(tmp_path / "a.ts", "export function helper(): number {\n  return 1;\n}\n")
    write(tmp_path / "b.ts", "export const x: number = helper();\n")
    async with lsp_run(tmp_path, ["typescript-language-server"]) as run:
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "b.ts", "line": 1, "symbol": "helper"}
        )
        assert not listed.is_error, listed.text
        ident = pick(listed, "import")
        applied = await run.call("lsp_rename", {"apply": ident})
        assert not applied.is_error, applied.text
        assert applied.text.startswith('applied "'), applied.text
        assert "import { helper } from" in read(tmp_path / "b.ts")
        again = await run.call("lsp_rename", {"apply": ident})
        assert again.is_error and "changed since" in again.text, again.text
        unknown = await run.call("lsp_rename", {"apply": "a999"})
        assert unknown.is_error and "no such code action" in unknown.text
    code, out = await checker([tsc, "--noEmit", "--pretty", "false"], tmp_path)
    assert code == 0, out


async def test_gopls_organize_imports(tmp_path: Path) -> None:
    require_binary("gopls", "apt-get install gopls")
    go = require_binary("go", "apt-get install golang-go")
    write(tmp_path / "go.mod", "module example.com/w\n\ngo 1.19\n")
    write(
        tmp_path / "main.go",
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() { fmt.Println(1) }\n',
    )
    async with lsp_run(tmp_path, ["gopls"]) as run:
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "main.go", "line": 5, "symbol": "os"}
        )
        assert not listed.is_error, listed.text
        applied = await run.call("lsp_rename", {"apply": pick(listed, "Organize Imports")})
        assert not applied.is_error, applied.text
    assert '"os"' not in read(tmp_path / "main.go")
    code, out = await checker([go, "build", "./..."], tmp_path)
    assert code == 0, out


async def test_rename_arguments_are_named_when_missing(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    write(tmp_path / "pyproject.toml", "[project]\nname = 'w'\nversion = '0'\n")
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        r = await run.call("lsp_rename", {"file": "a.py", "line": 1})
        assert r.is_error and "missing: symbol, new_name" in r.text, r.text
        r = await run.call("lsp_rename", {"apply": "a1", "new_name": "x"})
        assert r.is_error and "apply takes only the action id" in r.text
