"""Issue 14 §3: a FIFO in the root never blocks an lsp call; the call answers with a clear
error within its bound."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.lsp.conftest import lsp_run
from tests.support import require_binary


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("lsp", {"action": "hover", "line": 1, "symbol": "x"}),
        ("lsp", {"action": "diagnostics"}),
        ("lsp", {"action": "symbols"}),
        ("lsp_rename", {"line": 1, "symbol": "x", "new_name": "y"}),
    ],
)
async def test_a_fifo_is_refused_quickly(project, tool: str, args: dict) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = project("py")
    os.mkfifo(root / "pipe.py")
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await asyncio.wait_for(run.call(tool, {**args, "file": "pipe.py"}), 20)
        assert r.is_error and "pipe.py is a FIFO" in r.text, r.text
