"""`callers` / `callees` (call hierarchy) against the real servers on the shapes project in each
language; a server without it answers "does not support", never an empty list."""

from __future__ import annotations

import pytest

from tests.lsp.conftest import lsp_run
from tests.lsp.test_other_servers import INSTALL, write_compile_commands
from tests.support import require_binary

# server -> (fixture, binary, file, line, symbol, caller row, callee row or None = unsupported)
CASES = {
    "basedpyright": (
        "py",
        "basedpyright-langserver",
        "shapes.py",
        22,
        "total_area",
        "app.py:",  # module-level calls: the caller is the module
        "shapes.py:9: method area; at 24",
    ),
    "typescript-language-server": (
        "ts",
        "typescript-language-server",
        "src/shapes.ts",
        15,
        "totalArea",
        "src/app.ts:",
        "src/shapes.ts:",
    ),
    "gopls": (
        "go",
        "gopls",
        "shapes.go",
        19,
        "TotalArea",
        "main.go:5: function main; at 8",
        "shapes.go:5: function Area; at 22",
    ),
    # clangd 14 has incoming calls only (outgoing came in clangd 20).
    "clangd": (
        "c",
        "clangd",
        "src/shapes.c",
        3,
        "square_area",
        "src/main.c:4: function main; at 7, 8",
        None,
    ),
}


@pytest.mark.parametrize("server", sorted(CASES))
async def test_callers_and_callees(server: str, project) -> None:
    fixture, binary, file, line, symbol, caller, callee = CASES[server]
    require_binary(binary, INSTALL)
    root = project(fixture)
    if server == "clangd":
        write_compile_commands(root)
    where = {"file": file, "line": line, "symbol": symbol}
    async with lsp_run(root, [server]) as run:
        r = await run.call("lsp", {"action": "callers", **where})
        assert not r.is_error, r.text
        assert caller in r.text, r.text
        assert r.data["calls"] and "complete" not in r.data, r.data
        r = await run.call("lsp", {"action": "callees", **where})
        if callee is None:
            assert r.is_error and f"{server} does not support callees" in r.text, r.text
        else:
            assert not r.is_error, r.text
            assert callee in r.text, r.text
        # The path filter leaves out what lies elsewhere, and says so.
        r = await run.call("lsp", {"action": "callers", **where, "path": file})
        assert not r.is_error, r.text
        assert caller.split(":")[0] == file or "no callers found under" in r.text, r.text


async def test_server_without_call_hierarchy(project) -> None:
    require_binary("pylsp", INSTALL)
    root = project("py")
    async with lsp_run(root, ["pylsp"]) as run:
        r = await run.call(
            "lsp", {"action": "callers", "file": "shapes.py", "line": 22, "symbol": "total_area"}
        )
    assert r.is_error and "pylsp does not support call hierarchy (callers)" in r.text, r.text
