"""Runs with the vibe plugin whose command backend is tests/vibe/worker.py, a real subprocess."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import livetools_testkit
import livetools_vibe
from livetools import Host, Ports, Run

WORKER = Path(__file__).with_name("worker.py")
WORKER_ARGV = [sys.executable, str(WORKER)]


def host(*extra: tuple[str, object]) -> Host:
    return Host(plugins=[("vibe", livetools_vibe), *extra], entry_points=False)


def kit_host(*extra: tuple[str, object]) -> Host:
    return host(("testkit", livetools_testkit), *extra)


@asynccontextmanager
async def vibe_run(
    root: Path,
    h: Host | None = None,
    ports: Ports | None = None,
    **config: Any,
) -> AsyncIterator[Run]:
    """A run in vibe mode; `config` is the vibe config (the command defaults to worker.py)."""
    config.setdefault("command", WORKER_ARGV)
    options = {"vibe": True, "vibe_config": config}
    async with (h or host()).open_run(root, ports=ports, options=options) as run:
        yield run


def lines(*steps: str) -> str:
    return "\n".join(steps) + "\n"


async def wait_for_file(path: Path, within: float = 15.0) -> str:
    """The file's text once a worker has written it (workers write it atomically)."""
    deadline = time.monotonic() + within
    while (text := _read(path)) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} never appeared")
        await asyncio.sleep(0.02)
    return text


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


async def ok(run: Run, tool: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    result = await run.call(tool, args or {}, **kw)
    assert not result.is_error, result.text
    return result
