"""The host's registry of child sessions: killed at exit, and mirrored to the reaper process so
they are killed even when the host is SIGKILLed."""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

from .sessions import kill_session

_lock = threading.RLock()  # reentrant: kill paths may run from a signal handler in the same thread
_sids: set[int] = set()
_reaper: subprocess.Popen[bytes] | None = None
_atexit_registered = False


def track(sid: int) -> None:
    """Remember a child's session: killed by the atexit handler and by the reaper."""
    global _atexit_registered
    with _lock:
        _sids.add(sid)
        if not _atexit_registered:
            atexit.register(_kill_all_at_exit)
            _atexit_registered = True
        _send([f"+{sid}"])


def forget(sid: int) -> None:
    """Drop a session that was closed, so a later process reusing the number is never touched."""
    with _lock:
        _sids.discard(sid)
        _send([f"-{sid}"])


def tracked_sessions() -> frozenset[int]:
    with _lock:
        return frozenset(_sids)


def reaper_pid() -> int | None:
    """Pid of this host's reaper, None before the first child was started."""
    with _lock:
        return _reaper.pid if _reaper is not None and _reaper.poll() is None else None


def ensure_reaper() -> None:
    """Start the reaper if it is not running (lazily: the first child start, never at import)."""
    with _lock:
        if _reaper is None or _reaper.poll() is not None:
            _send([])


def _send(lines: list[str]) -> None:
    """Write lines to the reaper; a new reaper (first use, or the old one died) gets the whole
    set instead. Best effort: without a reaper, PDEATHSIG and the atexit handler still apply."""
    global _reaper
    for _ in range(2):
        fresh = _reaper is None or _reaper.poll() is not None
        if fresh:
            try:
                _reaper = _start_reaper()
            except OSError:
                _reaper = None
                return
        batch = [f"+{sid}" for sid in sorted(_sids)] if fresh else lines
        if not batch:
            return
        try:
            assert _reaper is not None and _reaper.stdin is not None
            _reaper.stdin.write(("\n".join(batch) + "\n").encode("ascii"))
            _reaper.stdin.flush()
            return
        except OSError:
            _reaper = None  # died under us: start another with every tracked session


def _start_reaper() -> subprocess.Popen[bytes]:
    script = Path(__file__).with_name("reaper.py")
    return subprocess.Popen(
        [sys.executable, "-E", "-s", "-S", str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a kill of the host's group or session must not take it first
        close_fds=True,
    )


def _kill_all_at_exit() -> None:
    with _lock:
        for sid in list(_sids):
            kill_session(sid)
        _sids.clear()
        if _reaper is not None and _reaper.stdin is not None:
            with contextlib.suppress(OSError):
                _reaper.stdin.close()  # EOF: the reaper finds nothing left and exits


def _after_fork_in_child() -> None:
    """A forked copy of the host owns none of its parent's children: it must neither kill them at
    exit nor hold the reaper's pipe open (the reaper would then miss the parent's death)."""
    global _reaper, _lock
    _lock = threading.RLock()
    _sids.clear()
    if _reaper is not None and _reaper.stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            _reaper.stdin.close()
    _reaper = None


os.register_at_fork(after_in_child=_after_fork_in_child)
