"""Helpers shared by the test packages. Process assertions read /proc; a zombie counts as dead
(only its parent can reap it, and in a container PID 1 may never do so)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from livetools.procs import process_state

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PLUGINS_DIR = TESTS / "fixtures" / "plugins"
REQUIRE_ENV = "LIVETOOLS_REQUIRE_SERVERS"


def plugin_env(**extra: str) -> dict[str, str]:
    """Environment for a livetools subprocess that discovers the testkit plugin."""
    env = dict(os.environ)
    parts = [str(PLUGINS_DIR), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    env.update(extra)
    return env


def missing(message: str) -> None:
    """Skip saying what to install, or fail when LIVETOOLS_REQUIRE_SERVERS=1 (CI)."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 turns this skip into a failure)")
    pytest.skip(message)


def require_binary(name: str, install: str) -> str:
    """The path of `name`, or skip saying how to install it (fail instead in CI)."""
    path = shutil.which(name)
    if path:
        return path
    missing(f"{name} not installed: {install}")
    raise AssertionError("unreachable")


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        cmd = "?"
    return f"{pid} ({process_state(pid)}): {cmd}"


def assert_gone(pids: Iterable[int], within: float = 5.0) -> None:
    """Wait up to `within` seconds for every pid to be dead; survivors are SIGKILLed (so a failing
    test does not leak them) and named in the failure."""
    pids = list(pids)
    deadline = time.monotonic() + within
    while (survivors := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if survivors:
        report = "; ".join(describe(p) for p in survivors)
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"still alive after {within}s: {report}")
