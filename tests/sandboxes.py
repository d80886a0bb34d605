"""A real bubblewrap sandbox for the sandbox suites of every family: the run root bind-mounted at
/workspace (another path than the host's, so the path mapping is exercised), /tmp private (the
host root, under pytest's tmp folder, is not visible inside at its host path), no network."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from livetools.procs import reaper_pid
from livetools.sandbox import BwrapSandbox
from tests.support import alive, missing, plugin_env, require_binary

# Processes inside a sandbox have pids of another namespace: a test marks the ones it starts with
# this variable (a unique value) and finds them on the host by their environment.
TOKEN_ENV = "LIVETOOLS_TEST_SANDBOX_TOKEN"


@functools.cache
def _userns_works() -> str | None:
    try:
        probe = subprocess.run(
            ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if probe.returncode == 0 else probe.stderr.decode(errors="replace").strip()


def require_bwrap() -> None:
    """Skip (fail in CI) without bwrap or without the namespaces it needs."""
    require_binary("bwrap", "apt-get install bubblewrap (core/test-deps.sh)")
    why = _userns_works()
    if why is not None:
        missing(f"bwrap cannot make its namespaces here: {why}")


@contextmanager
def bwrap_sandbox(root: Path, **options: object) -> Iterator[BwrapSandbox]:
    """A bwrap sandbox for `root`, its shared folder removed afterwards."""
    require_bwrap()
    sandbox = BwrapSandbox(root, **options)  # type: ignore[arg-type]
    try:
        yield sandbox
    finally:
        sandbox.close()


def marked(token: str, but: frozenset[int] | set[int] = frozenset()) -> list[int]:
    """Host pids of every live process whose environment holds TOKEN_ENV=`token`, but this
    process, its reaper (either may have started with the token set) and `but`."""
    needle = f"{TOKEN_ENV}={token}".encode()
    ours = {os.getpid(), reaper_pid(), *but}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in ours:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0") and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def sandboxed_session(root: Path, plugins: str | None = None) -> subprocess.Popen[str]:
    """A `livetools session --sandbox bwrap` host on `root` (text pipes), the one a SIGKILL test
    kills: `plugins` allow-lists them (LIVETOOLS_PLUGINS; the testkit is discoverable)."""
    require_bwrap()
    cli = ["-m", "livetools.faces.cli", "session", "--root", str(root), "--sandbox", "bwrap"]
    env = plugin_env(LIVETOOLS_PLUGINS=plugins) if plugins else None
    return subprocess.Popen(
        [sys.executable, *cli], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
