"""A call cancelled while its request is at the server (an HTTP client whose stream dropped, a
cancelled task) sends the server $/cancelRequest, so it stops computing an answer nobody reads.
The pygls fake hangs on hover on demand, which no real server does."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from tests.lsp.conftest import lsp_run
from tests.lsp.test_faults import FakeServers

WAIT = 60.0  # seconds; generous for a loaded machine


def seen(trace: Path, what: str) -> bool:
    return trace.exists() and what in trace.read_text()


async def traced(trace: Path, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not seen(trace, what):
        assert time.monotonic() < deadline, f"no {what} in the trace"
        await asyncio.sleep(0.02)


async def test_cancelled_call_cancels_its_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "trace"
    monkeypatch.setenv("LIVETOOLS_LSP_TRACE", str(trace))
    marker = tmp_path / "misbehave"
    marker.touch()
    (tmp_path / "a.fake").write_text("hello world\n")
    plugin = FakeServers("hang", marker)
    async with lsp_run(tmp_path, plugins=[("fake", plugin)], request_timeout=WAIT) as run:
        hover = {"action": "hover", "file": "a.fake", "line": 1, "symbol": "world"}
        call = asyncio.create_task(run.call("lsp", hover))
        await traced(trace, "-> textDocument/hover")
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await traced(trace, "-> $/cancelRequest")
