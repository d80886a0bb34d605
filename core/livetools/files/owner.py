"""Temp files and folders that say who made them, and the sweeps that remove those of dead
processes.

A write goes through a temp file beside its target. A writer killed mid-write (SIGKILL, OOM, a
lost machine) leaves those behind, and they show in `git status`. Each name carries the writer's
pid and its process start time (`/proc/PID/stat` field 22), so a later run can tell a dead
writer's leftovers from a live one's (and a reused pid from the original) and remove only those.
A host killed with runs open leaves its scratch folders (a sandbox's socket folder, a kernel's
connection files) in the system temp folder the same way: `owned_tempdir` names them alike and
clears a dead host's before making one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

SUFFIX = ".livetools"
# .NAME.PID-START.RAND.livetools
_OURS = re.compile(r"^\..+\.(\d+)-(\d+)\.[0-9a-f]+\.livetools$")
_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".hg", ".svn"})


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ")"
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


_ME = (os.getpid(), start_time(os.getpid()) or 0)


def temp_name(name: str, rand: str) -> str:
    pid = os.getpid()
    if pid != _ME[0]:  # a forked child writes under its own pid
        globals()["_ME"] = (pid, start_time(pid) or 0)
    return f".{name}.{_ME[0]}-{_ME[1]}.{rand}{SUFFIX}"


def is_dead(pid: int, started: int) -> bool:
    if not os.path.isdir("/proc/self"):
        return False  # no /proc: cannot tell, keep everything
    now = start_time(pid)
    return now is None or now != started


def sweep(root: Path, *, max_entries: int = 100_000, max_seconds: float = 0.5) -> list[Path]:
    """Remove leftover temp files of dead writers under `root`. Bounded in entries and time (a
    huge tree is swept partly, never stalls a run's opening); returns what it removed."""
    removed: list[Path] = []
    deadline = time.monotonic() + max_seconds
    seen = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > max_entries or time.monotonic() > deadline:
                        return removed
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in _SKIP:
                            stack.append(Path(entry.path))
                        continue
                    if not entry.name.endswith(SUFFIX):
                        continue
                    match = _OURS.match(entry.name)
                    if match and is_dead(int(match[1]), int(match[2])):
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def owned_tempdir(prefix: str, parent: str | None = None) -> str:
    """`tempfile.mkdtemp` named `PREFIX-PID-START-RAND`, after removing this user's folders of
    that prefix whose process is gone (bounded: one listing of `parent`)."""
    folder = parent or tempfile.gettempdir()
    sweep_dirs(folder, prefix)
    return tempfile.mkdtemp(prefix=f"{prefix}-{_me_now()}-", dir=folder)


def _me_now() -> str:
    pid = os.getpid()
    return f"{pid}-{start_time(pid) or 0}"


def sweep_dirs(parent: str, prefix: str, *, max_entries: int = 10_000) -> list[str]:
    """Remove `PREFIX-PID-START-*` folders in `parent` owned by this user whose process is
    gone; anything else (another user's, an older name without the pid) stays."""
    pattern = re.compile(re.escape(prefix) + r"-(\d+)-(\d+)-[^/]+$")
    removed: list[str] = []
    uid = os.getuid()
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for n, entry in enumerate(entries):
            if n >= max_entries:
                break
            match = pattern.match(entry.name)
            if not match or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if is_dead(int(match[1]), int(match[2])):
                    shutil.rmtree(entry.path)
                    removed.append(entry.path)
    return removed
