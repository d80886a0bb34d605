"""ChildProcess, session kills and the reaper, against real processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import livetools_testkit
from livetools import Host
from livetools.procs import (
    ChildProcess,
    ProcessStartError,
    kill_session,
    session_members,
    tracked_sessions,
)
from tests.support import alive, assert_gone, plugin_env

PY = sys.executable

# A child that ignores SIGTERM and starts a grandchild that also ignores it and leaves the
# child's process group (as debuggees do). Both print "<role> <pid>"; argv[1] == "exit" makes the
# child exit at once, leaving the grandchild behind.
TREE = r"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
GRAND = (
    "import os, signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "os.setpgid(0, 0)\n"
    "print('G', os.getpid(), flush=True)\n"
    "time.sleep(600)\n"
)
subprocess.Popen([sys.executable, "-c", GRAND])
print("C", os.getpid(), flush=True)
if sys.argv[1:] != ["exit"]:
    time.sleep(600)
"""

# A host that starts TREE through ChildProcess and reports the pids, then waits (to be SIGKILLed)
# or returns without closing anything (the atexit handler and the reaper must clean up). With
# "replace-reaper" it first kills its reaper, so the next start must start one that knows TREE.
HOST = r"""
import asyncio, os, signal, sys
from pathlib import Path
from livetools.procs import ChildProcess, reaper_pid

async def main():
    before = reaper_pid()
    argv = [sys.executable, "-c", sys.argv[1]]
    child = await ChildProcess.start(argv, cwd=Path.cwd(), stdin=False)
    for _ in range(2):
        sys.stdout.write((await child.stdout.readline()).decode())
    if "replace-reaper" in sys.argv:
        os.kill(reaper_pid(), signal.SIGKILL)
        while reaper_pid() is not None:
            await asyncio.sleep(0.01)
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        await ChildProcess.start(sleeper, cwd=Path.cwd(), stdin=False)
    print("R", before, reaper_pid(), flush=True)
    if "wait" in sys.argv:
        await asyncio.sleep(600)

asyncio.run(main())
"""


@contextlib.asynccontextmanager
async def running(argv: Sequence[str], **kwargs: Any) -> AsyncIterator[ChildProcess]:
    """A child that is closed even when the test fails."""
    child = await ChildProcess.start(argv, cwd=Path.cwd(), **kwargs)
    try:
        yield child
    finally:
        await child.aclose(grace=0)


async def read_roles(child: ChildProcess, count: int = 2) -> dict[str, int]:
    """Parse the "<role> <pid>" lines of TREE."""
    assert child.stdout is not None
    roles = {}
    for _ in range(count):
        line = await asyncio.wait_for(child.stdout.readline(), 10)
        role, pid = line.decode().split()
        roles[role] = int(pid)
    return roles


def stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # state, ppid, pgrp, session, ...


async def test_echo_over_stdin_and_stdout() -> None:
    echo = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)"
    async with running([PY, "-c", echo], name="echo") as child:
        assert child.name == "echo" and child.returncode is None
        assert child.pid in tracked_sessions()
        assert child.stdin is not None and child.stdout is not None
        for word in ("hello", "wörld"):
            child.stdin.write(f"{word}\n".encode())
            await child.stdin.drain()
            answer = await asyncio.wait_for(child.stdout.readline(), 10)
            assert answer == f"{word.upper()}\n".encode()
        await child.aclose()  # closing stdin is enough for this one
        assert child.returncode == 0
    assert child.pid not in tracked_sessions()


async def test_disabled_stdin_and_stdout_are_devnull(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = f"import sys\nopen({str(out)!r}, 'w').write(repr(sys.stdin.read()))\nprint('lost')"
    async with running([PY, "-c", script], stdin=False, stdout=False) as child:
        assert child.stdin is None and child.stdout is None
        assert await child.wait(10) == 0
    assert out.read_text() == "''"


async def test_stderr_ring_keeps_the_tail_of_a_chatty_child() -> None:
    # 10k lines (~150 KB) is far more than a pipe holds: without draining the child would block.
    chatty = "import sys\nfor i in range(10_000):\n    sys.stderr.write(f'line {i}\\n')"
    async with running([PY, "-c", chatty], stderr_lines=50) as child:
        assert await child.wait(10) == 0
        assert child.stderr_tail(3) == "line 9997\nline 9998\nline 9999"
        assert child.stderr_tail(1000).splitlines()[0] == "line 9950"  # bounded to 50 lines


async def test_stderr_ring_is_bounded_in_characters() -> None:
    flood = "import sys\nsys.stderr.write('x' * 2_000_000)\nsys.stderr.write('\\nboom')"
    async with running([PY, "-c", flood]) as child:
        assert await child.wait(10) == 0
        tail = child.stderr_tail()
        assert tail.endswith("\nboom") and len(tail) <= 64 * 1024 + 10


async def test_crash_leaves_its_reason_in_the_tail() -> None:
    async with running([PY, "-c", "raise SystemExit('fatal: no workspace')"]) as child:
        assert await child.wait(10) == 1
        assert child.stderr_tail() == "fatal: no workspace"


async def test_wait_times_out_with_none() -> None:
    async with running([PY, "-c", "import time; time.sleep(600)"]) as child:
        assert await child.wait(0.1) is None


async def test_missing_binary_is_a_readable_error(tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError) as info:
        await ChildProcess.start(["no-such-binary-livetools"], cwd=tmp_path)
    assert str(info.value) == (
        "cannot start 'no-such-binary-livetools': No such file or directory (not found on PATH)"
    )
    not_executable = tmp_path / "tool"
    not_executable.write_text("#!/bin/sh\n")
    with pytest.raises(ProcessStartError, match="Permission denied"):
        await ChildProcess.start([str(not_executable)], cwd=tmp_path)
    with pytest.raises(ProcessStartError, match="working directory"):
        await ChildProcess.start([PY], cwd=tmp_path / "missing")


async def test_aclose_kills_a_tree_that_ignores_sigterm() -> None:
    async with running([PY, "-c", TREE]) as child:
        pids = await read_roles(child)
        grand = stat_fields(pids["G"])
        assert grand[2] != str(child.pid) and grand[3] == str(child.pid)  # own group, same session
        started = time.monotonic()
        await child.aclose(grace=0.5)
        elapsed = time.monotonic() - started
        assert elapsed < 0.5 + 2.0, elapsed
        assert_gone(pids.values(), within=1.0)
        assert session_members(child.pid) == []
        await child.aclose()  # idempotent
        assert child.returncode == -signal.SIGKILL


async def test_aclose_kills_what_an_exited_child_left_behind() -> None:
    async with running([PY, "-c", TREE, "exit"]) as child:
        pids = await read_roles(child)
        assert await child.wait(10) == 0  # although the grandchild still holds the pipes
        assert alive(pids["G"])
        await child.aclose()
        assert_gone([pids["G"]], within=1.0)


def read_lines(fd: int, count: int, timeout: float) -> list[str]:
    buffer = b""
    deadline = time.monotonic() + timeout
    while buffer.count(b"\n") < count:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            raise AssertionError(f"host gave {buffer!r} before {'EOF' if ready else 'timeout'}")
        buffer += chunk
    return buffer.decode().splitlines()


def start_host(*modes: str) -> tuple[subprocess.Popen[bytes], dict[str, int], int]:
    """A HOST process, the pids of its child ("C") and grandchild ("G"), and its reaper's pid."""
    host = subprocess.Popen(
        [PY, "-c", HOST, TREE, *modes], stdout=subprocess.PIPE, start_new_session=True
    )
    assert host.stdout is not None
    lines = read_lines(host.stdout.fileno(), 3, timeout=20)
    pids = {role: int(pid) for role, pid in (line.split() for line in lines[:2])}
    _, reaper_before, reaper = lines[2].split()
    assert reaper_before == "None"  # lazy: not started at import
    if "wait" in modes:  # a host that returns may already be gone, its children with it
        assert all(alive(pid) for pid in pids.values())
    return host, pids, int(reaper)


@pytest.mark.parametrize(
    "modes",
    [("wait",), ("return",), ("replace-reaper", "wait")],
    ids=["sigkill", "exit", "respawn"],
)
def test_children_and_grandchildren_die_with_the_host(modes: tuple[str, ...]) -> None:
    host, pids, reaper = start_host(*modes)
    try:
        assert os.getsid(reaper) == reaper  # its own session: not killed with the host's
        if "wait" in modes:
            os.kill(host.pid, signal.SIGKILL)
        assert host.wait(10) in (0, -signal.SIGKILL)
        assert_gone([*pids.values(), reaper], within=5.0)
    finally:
        host.kill()
        host.wait()


def test_pdeathsig_kills_the_child_even_without_a_reaper() -> None:
    host, pids, reaper = start_host("wait")
    try:
        os.kill(reaper, signal.SIGKILL)
        assert_gone([reaper])
        os.kill(host.pid, signal.SIGKILL)
        host.wait(10)
        assert_gone([pids["C"]], within=5.0)  # the grandchild is the reaper's job
    finally:
        host.kill()
        host.wait()
        kill_session(pids["C"])


# -- through a run -----------------------------------------------------------------------------


async def test_nothing_survives_run_aclose(tmp_path):

    host = Host(plugins=[("testkit", livetools_testkit)], entry_points=False)
    async with host.open_run(tmp_path) as run:
        started = await run.call("stubborn", {})
        assert not started.is_error, started.text
        pids = started.data["pids"]
        assert all(alive(p) for p in pids)
    assert_gone(pids, within=5)


def test_nothing_survives_a_sigkilled_host(tmp_path):
    """A `livetools session` whose tool started a child that ignores SIGTERM (with a grandchild in
    its own process group) is SIGKILLed: within 5 s nothing it started is left."""
    host = subprocess.Popen(
        [sys.executable, "-m", "livetools.faces.cli", "session", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit"),
        text=True,
    )
    assert host.stdin and host.stdout
    host.stdin.write(json.dumps({"tool": "stubborn", "args": {}}) + "\n")
    host.stdin.flush()
    reply = json.loads(host.stdout.readline())
    pids = reply["data"]["pids"]
    assert all(alive(p) for p in pids)
    host.kill()
    host.wait(5)
    assert_gone(pids, within=5)
