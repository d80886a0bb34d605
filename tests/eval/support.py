"""Shared pieces of the eval tests: a plugin with a read tool, run openers, a wheel builder."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import livetools_eval
import livetools_testkit
from livetools import (
    CallContext,
    Host,
    Ports,
    Result,
    Run,
    Tier,
    Tool,
    ToolError,
    hookimpl,
    relpath,
    resolve_path,
)

DESC = "run a cell for this test case"


class ReadArgs(BaseModel):
    path: str


class StallArgs(BaseModel):
    seconds: float


async def stall(ctx: CallContext, args: StallArgs) -> str:
    await asyncio.sleep(args.seconds)
    return f"slept {args.seconds}"


class MeetArgs(BaseModel):
    size: int


MEET_WAIT = 60.0  # only a call that is never joined waits this long


class Meeting:
    """`meet` calls of a run wait for each other: each returns "met N" once N are in flight
    together, so a batch shows its calls overlap by a condition, not by a wall-clock bound
    that a loaded machine can miss. Calls that run one after another never meet."""

    def __init__(self) -> None:
        self.count = 0
        self.full = asyncio.Event()

    async def __call__(self, ctx: CallContext, args: MeetArgs) -> str:
        self.count += 1
        if self.count >= args.size:
            self.full.set()
        try:
            await asyncio.wait_for(self.full.wait(), MEET_WAIT)
        except TimeoutError:
            return f"alone: {self.count} of {args.size} after {MEET_WAIT:g}s"
        return f"met {args.size}"


async def read(ctx: CallContext, args: ReadArgs) -> Result:
    path = resolve_path(ctx.run.root, args.path)
    if not path.is_file():
        raise ToolError(f"no file {args.path}")
    return Result(path.read_text(), data={"path": relpath(ctx.run.root, path)})


class Files:
    """A read tool, so a cell can read a file through another tool of the run; a parallel-safe
    sleeper, and `meet`, so a batch can show its calls overlap."""

    @hookimpl
    def livetools_register_tools(self, register: Any) -> None:
        register(Tool("read", Tier.READ, ReadArgs, read, "Read a file."))
        register(Tool("stall", Tier.READ, StallArgs, stall, "Sleep, concurrently."))
        register(Tool("meet", Tier.READ, MeetArgs, Meeting(), "Wait for the others."))


def host(*extra: tuple[str, object]) -> Host:
    h = Host(
        plugins=[
            ("testkit", livetools_testkit),
            ("files", Files()),
            ("eval", livetools_eval),
            *extra,
        ],
        entry_points=False,
    )
    h.define_surface("runner", ["read", "exec"])  # may run cells, may not write
    return h


@asynccontextmanager
async def open_run(
    root: Path, *, host_: Host | None = None, ports: Ports | None = None, **options: Any
) -> AsyncIterator[Run]:
    async with (host_ or host()).open_run(root, ports=ports, options=options) as run:
        yield run


async def cell(run: Run, code: str, surface: str = "agent", **args: Any) -> Result:
    return await run.call("eval", {"code": code, "description": DESC, **args}, surface=surface)


def kernel_pids(run: Run) -> list[int]:
    return [k.pid for k in run.resource("eval").started if k.pid]


def wheel(folder: Path, name: str, version: str, body: str) -> Path:
    """A pure-Python wheel built by hand: `%pip` tests need no network and no build backend."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": body,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: livetools-tests\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/top_level.txt": f"{name}\n",
    }
    record = []
    for path, text in files.items():
        raw = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(raw)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    out = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return out


@contextmanager
def cpu_hog() -> Iterator[None]:
    """One busy process per core for the length of the block: the load the races show under."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
