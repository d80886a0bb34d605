"""A file's server root is the topmost project that includes it (issue 32 §1): in a TypeScript
solution (root tsconfig `"files": []` + references core ← animals ← zoo, the shape of the public
project-references demo) references reach every sub-project and a rename changes every file that
uses the name, `tsc -b` clean after; a go.work module set is served at its go.work. The layout
parser is checked on every declaration kind; an undeclared nested project keeps its own root."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from livetools_lsp.workspaces import declares, topmost
from tests.lsp.conftest import lsp_run
from tests.support import require_binary

COMPOSITE = {"compilerOptions": {"composite": True, "strict": True, "declaration": True}}


def solution(root: Path) -> None:
    def project(name: str, refs: list[str], files: dict[str, str]) -> None:
        folder = root / name
        folder.mkdir()
        config = {**COMPOSITE, "references": [{"path": f"../{r}"} for r in refs]}
        (folder / "tsconfig.json").write_text(json.dumps(config))
        for file, text in files.items():
            (folder / file).write_text(text)

    (root / "tsconfig.json").write_text(
        '{\n  // the solution\n  "files": [],\n  "references": [{"path": "./core"}, '
        '{"path": "./animals"}, {"path": "./zoo"},],\n}\n'
    )
    project(
        "core",
        [],
        {"utilities.ts": "export function makeRandomName(): string {\n  return 'Bob';\n}\n"},
    )
    project(
        "animals",
        ["core"],
        {
            "dog.ts": (
                'import { makeRandomName } from "../core/utilities";\n\n'
                "export interface Dog {\n  name: string;\n}\n\n"
                "export function createDog(): Dog {\n  return { name: makeRandomName() };\n}\n"
            )
        },
    )
    project(
        "zoo",
        ["animals"],
        {
            "zoo.ts": (
                'import { createDog } from "../animals/dog";\n\n'
                "export function createZoo() {\n  return [createDog(), createDog()];\n}\n"
            )
        },
    )


def listing(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*"))


async def tsc_build(tsc: str, root: Path) -> tuple[int | None, str]:
    proc = await asyncio.create_subprocess_exec(
        tsc, "-b", "--pretty", "false", cwd=root, stdout=asyncio.subprocess.PIPE, stderr=-2
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 180)
    return proc.returncode, out.decode()


async def test_solution_references_and_rename_reach_every_sub_project(tmp_path: Path) -> None:
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = require_binary("tsc", "npm install -g typescript@6")
    solution(tmp_path)
    async with lsp_run(tmp_path, ["typescript-language-server"]) as run:
        r = await run.call(
            "lsp",
            {"action": "references", "file": "animals/dog.ts", "line": 7, "symbol": "createDog"},
        )
        assert not r.is_error, r.text
        paths = {(p["path"], p["line"]) for p in r.data["locations"]}
        assert ("zoo/zoo.ts", 1) in paths and ("zoo/zoo.ts", 4) in paths, r.text
        status = await run.call("lsp", {"action": "status"})
        assert "typescript-language-server root=." in status.text, status.text
        r = await run.call(
            "lsp_rename",
            {
                "file": "core/utilities.ts",
                "line": 1,
                "symbol": "makeRandomName",
                "new_name": "makeName",
            },
        )
        assert not r.is_error, r.text
        assert sorted(r.data["edits"]) == ["animals/dog.ts", "core/utilities.ts"], r.text
    code, out = await tsc_build(tsc, tmp_path)
    assert code == 0, out


async def test_go_work_modules_share_one_gopls(tmp_path: Path) -> None:
    require_binary("gopls", "apt-get install gopls")
    (tmp_path / "go.work").write_text("go 1.19\n\nuse (\n\t./lib\n\t./app\n)\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "go.mod").write_text("module example.com/lib\n\ngo 1.19\n")
    (tmp_path / "lib" / "lib.go").write_text("package lib\n\nfunc Decode() int { return 1 }\n")
    (tmp_path / "app").mkdir()
    # No `require`: in workspace mode the other module of go.work provides the package.
    (tmp_path / "app" / "go.mod").write_text("module example.com/app\n\ngo 1.19\n")
    (tmp_path / "app" / "main.go").write_text(
        'package main\n\nimport "example.com/lib"\n\nfunc main() { _ = lib.Decode() }\n'
    )
    async with lsp_run(tmp_path, ["gopls"]) as run:
        r = await run.call(
            "lsp", {"action": "references", "file": "lib/lib.go", "line": 3, "symbol": "Decode"}
        )
        assert not r.is_error, r.text
        assert any(p["path"] == "app/main.go" for p in r.data["locations"]), r.text
        status = await run.call("lsp", {"action": "status"})
        assert "gopls root=." in status.text, status.text


def test_declarations_of_each_kind(tmp_path: Path) -> None:
    (tmp_path / "packages" / "a").mkdir(parents=True)
    (tmp_path / "tools" / "b").mkdir(parents=True)
    (tmp_path / "loose").mkdir()
    member, loose = tmp_path / "packages" / "a", tmp_path / "loose"
    (tmp_path / "package.json").write_text('{"workspaces": ["packages/*"]}')
    assert declares(tmp_path, member) == "package.json workspaces"
    assert declares(tmp_path, loose) is None
    (tmp_path / "package.json").write_text('{"workspaces": {"packages": ["tools/**"]}}')
    assert declares(tmp_path, tmp_path / "tools" / "b") == "package.json workspaces"
    (tmp_path / "package.json").unlink()
    (tmp_path / "pnpm-workspace.yaml").write_text("packages:\n  - 'packages/*'\n  - '!**/test'\n")
    assert declares(tmp_path, member) == "pnpm-workspace.yaml"
    (tmp_path / "pnpm-workspace.yaml").unlink()
    (tmp_path / "Cargo.toml").write_text('[workspace]\nmembers = ["packages/*"]\n')
    assert declares(tmp_path, member) == "Cargo.toml [workspace]"
    (tmp_path / "Cargo.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.uv.workspace]\nmembers = ["packages/a"]\n')
    assert declares(tmp_path, member) == "pyproject.toml [tool.uv.workspace]"
    (tmp_path / "pyproject.toml").write_text("[project\nbroken")
    assert declares(tmp_path, member) is None  # unreadable: no lift, no error
    (tmp_path / "go.work").write_text("go 1.21\nuse ./packages/a // the library\n")
    assert declares(tmp_path, member) == "go.work"
    assert topmost(member, tmp_path) == tmp_path
    assert topmost(loose, tmp_path) == loose


async def test_project_check_of_a_solution_builds_every_reference(tmp_path: Path) -> None:
    """`lsp diagnostics "*"` on a solution: `tsc --noEmit` there checks `"files": []` and says
    clean on a broken tree; the check builds the references (`tsc -b`) in a scratch copy, so it
    finds the error and writes nothing into the project."""
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    require_binary("tsc", "npm install -g typescript@6")
    solution(tmp_path)
    zoo = tmp_path / "zoo" / "zoo.ts"
    zoo.write_text(zoo.read_text().replace("createDog(), createDog()", "createDog(1)"))
    before = listing(tmp_path)
    async with lsp_run(tmp_path, ["typescript-language-server"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    assert "tsc -b --pretty false" in r.text and "scratch copy" in r.text, r.text
    assert "zoo/zoo.ts(" in r.text and "TS2554" in r.text, r.text
    assert listing(tmp_path) == before
