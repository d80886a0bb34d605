"""A worker's process tree, by parent links in /proc.

Killing the worker's session takes everything that stayed in it, but agent CLIs start their shell
tools detached (node's `detached: true` is setsid), so those leave the session. While a worker runs,
its descendants are sampled by parent link; at the end every sampled process still alive (checked
by start time, so a reused pid is never touched) is killed with its own descendants and session.
A process that leaves the tree between two samples (double fork, parent already gone) would be
missed, so each attempt also marks its environment with a token (`marked`): whatever inherited it
is found at the end however it left the tree, unless it cleared its environment.
"""

from __future__ import annotations

import functools
import os
import signal
import time

from livetools.procs import kill_session, stat_fields

_PROC = "/proc"
Ident = tuple[int, int]  # (pid, start time in clock ticks): a pid alone may be reused
Table = dict[int, tuple[int, int, int]]  # pid -> (ppid, session id, start time)


def snapshot() -> Table:
    """pid -> (ppid, session id, start time) of every live (non-zombie) process."""
    table: Table = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = stat_fields(entry, _PROC)
        if not fields or len(fields) < 20 or fields[0] in (b"Z", b"X"):
            continue
        table[int(entry)] = (int(fields[1]), int(fields[3]), int(fields[19]))
    return table


def marked(token: str, table: Table | None = None) -> set[Ident]:
    """Every live process whose environment holds `token` (an attempt's LIVETOOLS_VIBE_ATTEMPT)."""
    needle = token.encode()
    table = snapshot() if table is None else table
    found: set[Ident] = set()
    for pid, (_ppid, _sid, start) in table.items():
        try:
            with open(f"{_PROC}/{pid}/environ", "rb") as f:
                if needle in f.read():
                    found.add((pid, start))
        except OSError:
            continue
    return found


def descendants(roots: set[int], table: Table | None = None) -> set[Ident]:
    """Every live process below `roots` (not the roots themselves)."""
    table = snapshot() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _sid, _start) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[Ident] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            ident = (child, table[child][2])
            if ident not in found:
                found.add(ident)
                stack.append(child)
    return found


@functools.cache
def _children_files() -> bool:
    """Whether /proc/<pid>/task/<tid>/children exists (CONFIG_PROC_CHILDREN; not everywhere)."""
    pid = os.getpid()
    return os.path.exists(f"{_PROC}/{pid}/task/{pid}/children")


def sample(root: int) -> dict[int, tuple[int, int]]:
    """The live descendants of `root`: pid -> (session id, start time). Walks the children
    files when the kernel has them (a few reads per process of the tree), else scans /proc."""
    if not _children_files():
        table = snapshot()
        return {pid: table[pid][1:] for pid, _start in descendants({root}, table)}
    found: dict[int, tuple[int, int]] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            tids = os.listdir(f"{_PROC}/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"{_PROC}/{pid}/task/{tid}/children", "rb") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            for child in children:
                fields = stat_fields(child, _PROC)
                if child in found or not fields or len(fields) < 20 or fields[0] in (b"Z", b"X"):
                    continue
                found[child] = (int(fields[3]), int(fields[19]))
                stack.append(child)
    return found


def kill_tree(known: set[Ident], timeout: float = 1.0) -> int:
    """SIGKILL every still-alive process of `known`, their descendants and the sessions they
    lead; repeated until none is left or `timeout` passes. Returns how many were signalled."""
    deadline = time.monotonic() + timeout
    count = 0
    while True:
        now = snapshot()
        targets = {i for i in known if i[0] in now and now[i[0]][2] == i[1]}
        targets |= descendants({pid for pid, _ in targets}, now)
        if not targets:
            return count
        for pid, _start in targets:
            if now.get(pid, (0, 0, 0))[1] == pid and pid != os.getsid(0):
                kill_session(pid, timeout=0.1)  # it leads a session: take all of it
            try:
                os.kill(pid, signal.SIGKILL)
                count += 1
            except (ProcessLookupError, PermissionError):
                pass
        known = known | targets
        if time.monotonic() >= deadline:
            return count
        time.sleep(0.01)
