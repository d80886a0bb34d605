"""A real bubblewrap sandbox for the sandbox suites of every family: the run root bind-mounted at
/workspace (another path than the host's, so the path mapping is exercised), /tmp private (the
host root, under pytest's tmp folder, is not visible inside at its host path), no network."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from livetools.sandbox import BwrapSandbox
from tests.support import missing, require_binary


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
