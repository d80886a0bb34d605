"""Fixtures for the debug tests: sample projects copied into tmp dirs (so every test has its own
root), real adapters, and a small driver that fails loudly on unexpected errors."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from livetools import Host, Result, Run
from livetools.detection import which_any
from livetools.ports import Ports
from livetools.procs import process_state, session_members
from livetools_debug.adapters import lldb_names
from tests.support import REPO, require_binary

PROJECTS = REPO / "tests" / "fixtures" / "projects" / "debug"


def line_of(path: Path, marker: str) -> int:
    """The 1-based line of the first line containing `marker` (tests never hard-code lines)."""
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


def copy_project(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(PROJECTS / name, root)
    return root


def require_lldb() -> str:
    found = which_any(lldb_names())
    if found:
        return found
    return require_binary("lldb-dap", "apt-get install lldb-16 (provides lldb-vscode-16)")


def require_delve() -> None:
    require_binary("dlv", "apt-get install delve")
    require_binary("go", "apt-get install golang-go")


def build_c(root: Path, *flags: str, output: str = "app") -> Path:
    require_binary("cc", "apt-get install gcc")
    binary = root / output
    subprocess.run(["cc", *flags, "-o", str(binary), str(root / "main.c")], check=True, timeout=60)
    return binary


class Debugger:
    """Calls the debug tool of one run; `ok` asserts success, `err` asserts an error."""

    def __init__(self, run: Run) -> None:
        self.run = run

    async def __call__(self, op: str, **args: Any) -> Result:
        return await self.run.call("debug", {"op": op, **args})

    async def ok(self, op: str, **args: Any) -> Result:
        result = await self(op, **args)
        assert not result.is_error, f"{op} {args} failed: {result.text}"
        return result

    async def err(self, op: str, **args: Any) -> Result:
        result = await self(op, **args)
        assert result.is_error, f"{op} {args} should have failed: {result.text}"
        return result

    @property
    def supervisor(self) -> Any:
        return self.run.resource("debug")

    def processes(self) -> tuple[list[int], int | None]:
        """The adapter's session ids and the debuggee's pid of the current session."""
        session = self.supervisor.session
        assert session is not None
        return list(session.pids), session.debuggee_pid


async def wait_listening(port: int, within: float = 60.0) -> None:
    """Until something listens on 127.0.0.1:`port` (read from /proc/net/tcp, so no connection
    is spent: a `--wait-for-client` listener takes exactly one)."""
    want = f"0100007F:{port:04X}"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as f:  # noqa: ASYNC230 (procfs never blocks)
            if any(line.split()[1] == want and line.split()[3] == "0A" for line in list(f)[1:]):
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after {within:g}s")


def assert_gone(sids: list[int], pid: int | None = None) -> None:
    for sid in sids:
        assert session_members(sid) == [], f"processes left in session {sid}"
    if pid is not None:
        assert process_state(pid) in (None, "Z"), f"debuggee {pid} still alive"


@pytest.fixture
def venv_project(tmp_path: Path) -> Path:
    """The py sample with its own .venv (no debugpy in it: the debuggee does not need it)."""
    root = copy_project("py", tmp_path)
    venv = [sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")]
    subprocess.run(venv, check=True, timeout=120)
    return root


@pytest.fixture
async def open_debugger(tmp_path: Path) -> AsyncIterator[Any]:
    """`dbg = await open_debugger(root, **options)`; every run is closed at the end."""
    runs: list[Run] = []

    async def opener(
        root: Path, plugins: tuple[Any, ...] = (), ports: Ports | None = None, **options: Any
    ) -> Debugger:
        host = Host(plugins=plugins)
        run = await host.open_run(root, conversation_id="test", ports=ports, options=options)
        runs.append(run)
        return Debugger(run)

    yield opener
    for run in runs:
        await run.aclose()
