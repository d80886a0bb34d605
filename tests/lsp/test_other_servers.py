"""Every action against real typescript-language-server, clangd and gopls (installed by
plugins/lsp/test-deps.sh), on the same little shapes project in each language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lsp.conftest import lsp_run
from tests.lsp.test_on_write import new_diagnostics
from tests.support import require_binary

INSTALL = "bash plugins/lsp/test-deps.sh"


def write_compile_commands(root: Path) -> None:
    entries = [
        {
            "directory": str(root),
            "file": f"src/{name}",
            "arguments": ["cc", "-Iinclude", "-std=c11", "-c", f"src/{name}"],
        }
        for name in ("main.c", "shapes.c")
    ]
    (root / "compile_commands.json").write_text(json.dumps(entries))


# (fixture, server, binary, {action: (args, expected substring or None = unsupported)})
CASES = {
    "typescript-language-server": (
        "ts",
        "typescript-language-server",
        {
            "definition": (
                {"file": "src/app.ts", "line": 3, "symbol": "Square"},
                "src/shapes.ts:7: export class Square implements Shape {",
            ),
            "references": (
                {"file": "src/shapes.ts", "line": 15, "symbol": "totalArea"},
                "src/app.ts:5: console.log(totalArea([unit, big]), totalArea([big])); "
                "(2 on this line)",
            ),
            "hover": ({"file": "src/app.ts", "line": 5, "symbol": "totalArea"}, "Sum of the areas"),
            "type_definition": (
                {"file": "src/app.ts", "line": 3, "symbol": "unit"},
                "src/shapes.ts:7:",
            ),
            "implementation": (
                {"file": "src/shapes.ts", "line": 2, "symbol": "Shape"},
                "src/shapes.ts:7: export class Square implements Shape {",
            ),
            "symbols": ({"file": "src/shapes.ts"}, "15: function totalArea"),
            "workspace": ({"query": "Squ"}, "src/shapes.ts:7: class Square"),
            "non_ascii": (
                {"file": "src/app.ts", "line": 6, "symbol": "Square"},
                "src/shapes.ts:7:",
            ),
            "rename": (
                {"file": "src/app.ts", "line": 3, "symbol": "Square", "new_name": "Box"},
                "edits in 2 files",
            ),
            "break": (
                "src/app.ts",
                "const big",
                'const bad: number = "x";\nconst big',
                "src/app.ts:4: error [2322]",
            ),
        },
    ),
    "clangd": (
        "c",
        "clangd",
        {
            "definition": (
                {"file": "src/main.c", "line": 7, "symbol": "square_area"},
                "square_area(const struct square *sq)",
            ),
            "references": (
                {"file": "include/shapes.h", "line": 10, "symbol": "square_area"},
                "src/main.c:7:",
            ),
            "hover": (
                {"file": "src/main.c", "line": 7, "symbol": "square_area"},
                "The area of a square.",
            ),
            "type_definition": (
                {"file": "src/main.c", "line": 5, "symbol": "unit"},
                "include/shapes.h:5: struct square {",
            ),
            "implementation": (
                {"file": "src/main.c", "line": 7, "symbol": "square_area"},
                "no implementation found",
            ),
            "symbols": ({"file": "src/main.c"}, "4: function main"),
            "workspace": ({"query": "square_area"}, ": function square_area"),
            "non_ascii": (
                {"file": "src/main.c", "line": 8, "symbol": "square_area"},
                "square_area(const struct square *sq)",
            ),
            "rename": (
                {"file": "src/main.c", "line": 7, "symbol": "square_area", "new_name": "sq_area"},
                "5 edits in 3 files",
            ),
            # An implicit declaration is a warning in clangd 14 and an error from 16 on.
            "break": (
                "src/main.c",
                "return 0;",
                "undefined_call();\n    return 0;",
                "src/main.c:9: ",
            ),
        },
    ),
    "gopls": (
        "go",
        "gopls",
        {
            "definition": (
                {"file": "main.go", "line": 6, "symbol": "Square"},
                "shapes.go:9: type Square struct {",
            ),
            "references": (
                {"file": "shapes.go", "line": 19, "symbol": "TotalArea"},
                "main.go:8: fmt.Println(TotalArea([]Shape{unit, big}), "
                "TotalArea([]Shape{big})) (2 on this line)",
            ),
            "hover": (
                {"file": "main.go", "line": 8, "symbol": "TotalArea"},
                "TotalArea sums the areas",
            ),
            "type_definition": (
                {"file": "main.go", "line": 6, "symbol": "unit"},
                "shapes.go:9: type Square struct {",
            ),
            "implementation": (
                {"file": "shapes.go", "line": 4, "symbol": "Shape"},
                "shapes.go:9: type Square struct {",
            ),
            "symbols": ({"file": "shapes.go"}, "function TotalArea"),
            "workspace": ({"query": "TotalArea"}, "shapes.go:19: function TotalArea"),
            "non_ascii": (
                {"file": "main.go", "line": 9, "symbol": "Square"},
                "shapes.go:9: type Square struct {",
            ),
            "rename": (
                {"file": "main.go", "line": 6, "symbol": "Square", "new_name": "Box"},
                "edits in 2 files",
            ),
            "break": ("main.go", "\tbig :=", '\tvar bad int = "x"\n\tbig :=', "main.go:7: error"),
        },
    ),
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, project):
    fixture, binary, expected = CASES[request.param]
    require_binary(binary, INSTALL)
    root = project(fixture)
    if request.param == "clangd":
        write_compile_commands(root)
    return request.param, root, expected


async def test_every_action(case) -> None:
    server, root, expected = case
    async with lsp_run(root, [server]) as run:
        for action in (
            "definition",
            "references",
            "hover",
            "type_definition",
            "implementation",
            "symbols",
        ):
            args, want = expected[action]
            r = await run.call("lsp", {"action": action, **args})
            assert not r.is_error, f"{action}: {r.text}"
            assert want in r.text, f"{action}: {r.text}"
        args, want = expected["workspace"]
        r = await run.call("lsp", {"action": "symbols", **args})
        assert want in r.text, r.text
        args, want = expected["non_ascii"]
        r = await run.call("lsp", {"action": "definition", **args})
        assert want in r.text, r.text
        r = await run.call(
            "lsp", {"action": "diagnostics", "file": expected["definition"][0]["file"]}
        )
        assert "no diagnostics" in r.text, r.text
        r = await run.call("lsp", {"action": "code_actions", **expected["hover"][0]})
        assert not r.is_error, r.text
        r = await run.call("lsp", {"action": "status"})
        assert f"running: {server} root=." in r.text, r.text


async def test_rename_and_diagnostics_on_write(case) -> None:
    server, root, expected = case
    async with lsp_run(root, [server]) as run:
        args, want = expected["rename"]
        r = await run.call("lsp_rename", args)
        assert not r.is_error, r.text
        assert want in r.text.splitlines()[0], r.text
        assert "new diagnostics" not in r.text, r.text
        path, old, new, want = expected["break"]
        r = await run.call("edit", {"path": path, "old": old, "new": new})
        news = new_diagnostics(r.text)
        assert news and news[0].startswith(want), r.text
        r = await run.call("edit", {"path": path, "old": new, "new": old})
        assert new_diagnostics(r.text) == [] and "not ready" not in r.text, r.text


async def test_project_checker(case) -> None:
    server, root, _ = case
    binary = {"typescript-language-server": "tsc", "clangd": "clangd", "gopls": "go"}[server]
    require_binary(binary, INSTALL)
    async with lsp_run(root, [server]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
        assert not r.is_error, r.text
        assert ": clean" in r.text, r.text


async def test_clangd_refuses_a_rename_it_cannot_complete(project) -> None:
    require_binary("clangd", INSTALL)
    root = project("c")  # compile_flags.txt only: clangd indexes nothing beyond open files
    before = (root / "src" / "shapes.c").read_text()
    async with lsp_run(root, ["clangd"]) as run:
        r = await run.call(
            "lsp_rename",
            {"file": "src/main.c", "line": 7, "symbol": "square_area", "new_name": "sq_area"},
        )
        assert r.is_error and "needs compile_commands.json" in r.text, r.text
    root = project("c_noflags")  # .clangd without the include path: 'shapes.h' not found
    async with lsp_run(root, ["clangd"]) as run:
        r = await run.call(
            "lsp_rename",
            {"file": "src/main.c", "line": 7, "symbol": "square_area", "new_name": "sq_area"},
        )
        assert r.is_error, r.text
    assert (root / "src" / "shapes.c").read_text() == before
