"""A FIFO in the root never hangs a tool: every tool that reads or writes files of the tree is
driven at a FIFO and must answer (an error is fine) within its bound, with the event loop free.

A synchronous `open()` of a FIFO blocks the event loop, so no asyncio timeout could fire: the run
is driven on its own thread and a watchdog on this one unblocks the FIFO (opens it for writing)
when the call overstays, so a hang fails the test instead of the suite.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from livetools import Host
from livetools.faces import harness

BOUND = 60.0  # a FIFO must be refused long before; generous for a loaded machine

PY = "def greet(name):\n    return name\n\n\nprint(greet('x'))\n"

# (tool, args): each one points at the FIFO `pipe.py`, or works on a tree that holds it.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("write", {"path": "pipe.py", "content": "x = 1\n"}),
    ("edit", {"path": "pipe.py", "old": "a", "new": "b"}),
    ("ast_grep", {"pattern": "greet($A)", "path": "pipe.py"}),
    ("ast_grep", {"pattern": "greet($A)"}),
    ("ast_edit", {"pattern": "greet($A)", "rewrite": "hello($A)", "path": "pipe.py"}),
    ("ast_edit", {"pattern": "greet($A)", "rewrite": "hello($A)"}),
    ("lsp", {"action": "hover", "file": "pipe.py", "line": 1, "symbol": "x"}),
    ("lsp", {"action": "diagnostics", "file": "pipe.py"}),
    ("lsp", {"action": "symbols", "file": "pipe.py"}),
    ("lsp", {"action": "diagnostics", "file": "*"}),
    ("lsp", {"action": "symbols", "query": "greet"}),
    ("lsp", {"action": "references", "file": "main.py", "line": 1, "symbol": "greet"}),
    ("lsp_rename", {"file": "pipe.py", "line": 1, "symbol": "x", "new_name": "y"}),
    ("lsp_rename", {"file": "main.py", "line": 1, "symbol": "greet", "new_name": "hello"}),
    ("debug", {"op": "launch", "program": "pipe.py"}),
    ("debug", {"op": "breakpoints", "file": "pipe.py", "lines": [1]}),
]


def unblock(fifo: Path) -> None:
    """Let a reader stuck in open() of `fifo` through (it then reads EOF)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return  # no reader waiting
    os.close(fd)


def drive(
    root: Path, tool: str, args: dict[str, Any], before: Any = None
) -> tuple[Any, float, float]:
    """(result, seconds, longest stall of the event loop) of one call, on its own thread."""
    out: dict[str, Any] = {}

    async def main() -> None:
        host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
        stall = 0.0

        async def ticker() -> None:
            nonlocal stall
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.05)
                now = time.monotonic()
                stall = max(stall, now - last)
                last = now

        async with host.open_run(root) as run:
            if run.registry.get(tool) is None or tool not in {t.name for t in run.tools()}:
                out["skip"] = f"{tool} is not offered here"
                return
            if before is not None:
                await before(run)
            tick = asyncio.ensure_future(ticker())
            start = time.monotonic()
            out["result"] = await run.call(tool, args)
            out["seconds"] = time.monotonic() - start
            tick.cancel()
            out["stall"] = stall

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    thread.join(BOUND)
    hung = thread.is_alive()
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        unblock(root / "pipe.py")
        thread.join(0.2)
    if "skip" in out:
        pytest.skip(out["skip"])
    assert not hung, f"{tool} {args} hung on a FIFO past {BOUND:g}s"
    return out["result"], out["seconds"], out["stall"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\nversion = "0"\n')
    (tmp_path / "main.py").write_text(PY)
    os.mkfifo(tmp_path / "pipe.py")
    return tmp_path


@pytest.mark.parametrize(("tool", "args"), CASES, ids=[f"{t}-{a}" for t, a in CASES])
def test_fifo_never_hangs_a_tool(tree: Path, tool: str, args: dict[str, Any]):
    result, seconds, stall = drive(tree, tool, args)
    assert seconds < BOUND
    assert stall < 20.0, f"the event loop stalled {stall:.1f}s during {tool}"
    if args.get("path") == "pipe.py" or args.get("file") == "pipe.py":
        assert result.is_error, result.text
    assert "failed: " not in result.text or "approval" in result.text, result.text
    assert str(tree) not in result.text
    assert os.path.exists(tree / "pipe.py") and not (tree / "pipe.py").is_file()
    assert not [p for p in os.listdir(tree) if p.endswith(".livetools")]


def test_resolve_accept_of_a_file_turned_fifo_is_refused(tree: Path):
    async def stage(run: Any) -> None:
        staged = await run.call("ast_edit", {"pattern": "greet($A)", "rewrite": "hello($A)"})
        assert not staged.is_error, staged.text
        os.unlink(tree / "main.py")
        os.mkfifo(tree / "main.py")

    result, _, stall = drive(tree, "resolve", {"edit_id": "edit_1", "action": "accept"}, stage)
    assert result.is_error and "main.py changed since the edit was staged" in result.text
    assert stall < 20.0
    assert not [p for p in os.listdir(tree) if p.endswith(".livetools")]
