"""Applying a code action (issue 32 §4): `lsp code_actions` gives each action an id and
`lsp_rename apply=ID` writes its edit through the checked, all-or-nothing write, the project's
checker clean after. Real typescript-language-server (add a missing import) and gopls (organize
imports); a stale id, an unknown id and a changed file are refused with nothing written."""

from __future__ import annotations

import asyncio
import sys
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


async def test_typescript_actions_by_kind(tmp_path: Path) -> None:
    """`apply` with a kind and a file: organize imports (sorted), remove the unused one, add
    the missing one; `tsc --noEmit` clean after."""
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = require_binary("tsc", "npm install -g typescript@6")
    write(tmp_path / "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')
    write(
        tmp_path / "a.ts",
        "export const one = 1;\nexport function helper(): number {\n  return 1;\n}\n",
    )
    write(tmp_path / "z.ts", "export const zed = 26;\n")
    write(
        tmp_path / "b.ts",
        'import { zed } from "./z";\nimport { one } from "./a";\n\n'
        "export const x: number = one + helper();\n",
    )
    async with lsp_run(tmp_path, ["typescript-language-server"]) as run:
        r = await run.call("lsp_rename", {"apply": "source.organizeImports", "file": "b.ts"})
        assert not r.is_error, r.text
        assert read(tmp_path / "b.ts").startswith('import { one } from "./a";\nimport { zed }')
        r = await run.call("lsp_rename", {"apply": "source.removeUnusedImports.ts", "file": "b.ts"})
        assert not r.is_error, r.text
        assert "zed" not in read(tmp_path / "b.ts")
        r = await run.call("lsp_rename", {"apply": "source.addMissingImports.ts", "file": "b.ts"})
        assert not r.is_error, r.text
        r = await run.call("lsp_rename", {"apply": "source.fixAll.nothing", "file": "b.ts"})
        assert r.is_error and "offered no source.fixAll.nothing action for b.ts" in r.text
        r = await run.call("lsp_rename", {"apply": "quickfix"})
        assert r.is_error and "needs file" in r.text, r.text
    assert 'import { helper, one } from "./a";' in read(tmp_path / "b.ts"), read(tmp_path / "b.ts")
    code, out = await checker([tsc, "--noEmit", "-p", "."], tmp_path)
    assert code == 0, out


async def test_a_linter_fix_applies_beside_the_server(tmp_path: Path) -> None:
    """ruff, as a linter beside basedpyright, lists its own fix at the line (labelled) and
    `apply="source.fixAll.ruff"` applies its fixes; `ruff check` is clean after."""
    ruff = require_binary("ruff", "uv sync")
    require_binary("basedpyright", "uv sync")
    write(tmp_path / "pyproject.toml", "[project]\nname = 'f'\nversion = '0'\n\n[tool.ruff]\n")
    write(tmp_path / "m.py", "import os\nimport sys\n\nprint(sys.argv)\n")
    servers = {
        "ruff-lint": {
            "command": ["ruff", "server"],
            "extensions": [".py"],
            "root_markers": ["pyproject.toml:[tool.ruff"],
            "linter": True,
        }
    }
    async with lsp_run(tmp_path, ["basedpyright"], servers=servers) as run:
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "m.py", "line": 1, "symbol": "os"}
        )
        assert "[ruff-lint]" in listed.text, listed.text
        r = await run.call("lsp_rename", {"apply": "source.fixAll.ruff", "file": "m.py"})
        assert not r.is_error, r.text
    assert read(tmp_path / "m.py") == "import sys\n\nprint(sys.argv)\n"
    code, out = await checker([ruff, "check", "--no-cache", "m.py"], tmp_path)
    assert code == 0, out


GO_POINT = """package main

import "fmt"

type Point struct {
\tX    int
\tY    int
\tName string
}

func main() {
\tp := Point{}
\tfmt.Println(p)
}
"""


async def test_gopls_fill_struct_runs_its_command_through_the_checked_write(
    tmp_path: Path,
) -> None:
    """gopls 0.11 offers "Fill Point" as a command that answers with workspace/applyEdit: the
    edit it sends back is what gets written (checked, with diagnostics); `go vet` clean."""
    require_binary("gopls", "apt-get install gopls")
    go = require_binary("go", "apt-get install golang-go")
    write(tmp_path / "go.mod", "module example.com/fill\n\ngo 1.19\n")
    write(tmp_path / "main.go", GO_POINT)
    async with lsp_run(tmp_path, ["gopls"]) as run:
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "main.go", "line": 12, "symbol": "Point"}
        )
        applied = await run.call("lsp_rename", {"apply": pick(listed, "Fill Point")})
        assert applied.text.startswith('applied "Fill Point": 1 edits in 1 files'), applied.text
    assert '\t\tName: "",\n' in read(tmp_path / "main.go")
    code, out = await checker([go, "vet", "./..."], tmp_path)
    assert code == 0, out


async def test_clangd_tweaks_apply(tmp_path: Path) -> None:
    """clangd's tweaks are commands (clangd.applyTweak) whose edits come back as applyEdit."""
    require_binary("clangd", "apt-get install clangd")
    cxx = require_binary("c++", "apt-get install g++")
    write(tmp_path / "compile_flags.txt", "-std=c++17\n")
    write(tmp_path / "m.cpp", "int pick(int x) {\n  auto r = 0;\n  return r + x * 2;\n}\n")
    async with lsp_run(tmp_path, ["clangd"]) as run:
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "m.cpp", "line": 3, "symbol": "x * 2"}
        )
        applied = await run.call("lsp_rename", {"apply": pick(listed, "Extract subexpression")})
        assert not applied.is_error, applied.text
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "m.cpp", "line": 2, "symbol": "auto"}
        )
        applied = await run.call("lsp_rename", {"apply": pick(listed, "Expand auto type")})
        assert not applied.is_error, applied.text
    text = read(tmp_path / "m.cpp")
    assert "int r = 0;" in text and "placeholder = x * 2;" in text, text
    code, out = await checker([cxx, "-std=c++17", "-fsyntax-only", "m.cpp"], tmp_path)
    assert code == 0, out


COMMAND_SERVER = Path(__file__).with_name("command_server.py")


async def test_a_command_that_writes_by_itself_is_reported(tmp_path: Path) -> None:
    """A command's edits sent back through the client are written by the checked write; one
    that changes a file on disk by itself is named, and nothing more is written."""
    write(tmp_path / "a.fk", "one\n")
    servers = {
        "commands": {
            "command": [sys.executable, str(COMMAND_SERVER)],
            "extensions": [".fk"],
            "probe": [sys.executable, "-c", "import pygls"],
        }
    }
    async with lsp_run(tmp_path, servers=servers) as run:
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "a.fk", "line": 1, "symbol": "one"}
        )
        applied = await run.call("lsp_rename", {"apply": pick(listed, "through the client")})
        assert applied.text.startswith('applied "Edit through the client"'), applied.text
        assert read(tmp_path / "a.fk") == "# edited\none\n"
        listed = await run.call(
            "lsp", {"action": "code_actions", "file": "a.fk", "line": 2, "symbol": "one"}
        )
        refused = await run.call("lsp_rename", {"apply": pick(listed, "Write it myself")})
        assert refused.is_error, refused.text
        assert "changed written-by-the-server.txt on disk by itself" in refused.text


async def test_typescript_fix_all(tmp_path: Path) -> None:
    """`source.fixAll.ts` removes the unreachable code tsc rejects; `tsc --noEmit` clean."""
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = require_binary("tsc", "npm install -g typescript@6")
    config = '{"compilerOptions": {"strict": true, "allowUnreachableCode": false}}\n'
    write(tmp_path / "tsconfig.json", config)
    write(tmp_path / "u.ts", 'export function f(): number {\n  return 1;\n  console.log("x");\n}\n')
    code, _ = await checker([tsc, "--noEmit", "-p", "."], tmp_path)
    assert code != 0  # TS7027, unreachable code
    async with lsp_run(tmp_path, ["typescript-language-server"]) as run:
        r = await run.call("lsp_rename", {"apply": "source.fixAll.ts", "file": "u.ts"})
        assert not r.is_error, r.text
    code, out = await checker([tsc, "--noEmit", "-p", "."], tmp_path)
    assert code == 0, out
