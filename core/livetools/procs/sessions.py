"""Find and kill every process of a session by scanning /proc.

Killing a process group is not enough: debug adapters move their debuggee into a new group of the
same session, so the session id is what ties a child's whole tree together. This module imports
only the stdlib because the reaper process runs it too.
"""

from __future__ import annotations

import os
import signal
import time

_PROC = "/proc"
_DEAD_STATES = (b"Z", b"X")  # a zombie is already dead; only its parent can reap it


def stat_fields(pid: int | str, proc: str = _PROC) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name: state, ppid, pgrp, session, ...

    The name is in parentheses and may itself hold spaces or ')', hence the last ')'."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 1 :].split()


def process_state(pid: int) -> str | None:
    """The one-letter state of `pid` ('R', 'S', 'Z', ...), or None when there is no such process."""
    fields = stat_fields(pid)
    return fields[0].decode("ascii", "replace") if fields else None


def session_members(sid: int) -> list[int]:
    """Pids of the live (non-zombie) processes whose session id is `sid`."""
    if sid <= 0 or not os.path.isdir(_PROC):
        return []
    members = []
    for entry in os.listdir(_PROC):
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields and len(fields) > 3 and int(fields[3]) == sid and fields[0] not in _DEAD_STATES:
            members.append(int(entry))
    return members


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from one pass over /proc (children re-parented elsewhere are
    not followed): what tests and benches check is gone, or count the CPU of."""
    children: dict[int, list[int]] = {}
    if os.path.isdir(_PROC):
        for entry in os.listdir(_PROC):
            fields = stat_fields(entry) if entry.isdigit() else None
            if fields and len(fields) > 1:
                children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def signal_session(sid: int, sig: int = signal.SIGKILL) -> int:
    """Send `sig` to every live process of session `sid`; returns how many were signalled.

    Never touches our own session (that would kill the host) nor pid 0/1."""
    if sid <= 1 or sid == os.getsid(0):
        return 0
    if not os.path.isdir(_PROC):  # no /proc (macOS): the leader's group is the best we can do
        try:
            os.killpg(sid, sig)
        except OSError:
            return 0
        return 1
    count = 0
    for pid in session_members(sid):
        try:
            os.kill(pid, sig)
            count += 1
        except (ProcessLookupError, PermissionError):
            pass
    return count


def kill_session(sid: int, timeout: float = 1.0) -> None:
    """SIGKILL every process of session `sid` until none is left or `timeout` passes.

    Loops because a member may fork between the scan and the kill. Synchronous so it can run from
    atexit, a signal handler or the reaper."""
    deadline = time.monotonic() + timeout
    while signal_session(sid, signal.SIGKILL) and time.monotonic() < deadline:
        time.sleep(0.01)
