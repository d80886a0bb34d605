"""Linux inotify through ctypes: which paths under a tree the kernel saw change since the last look.

The bounded walk (watching.py) stats every candidate file at every call: on a large checkout
that costs up to its one-second bound per call, and a walk cut short cannot see a deletion past
the cut. With a watch per folder the kernel names what moved, and only those paths are stat'ed.

One inotify instance per process serves every tree (a user has 128 instances, and the language
servers draw on the same budget), with at most a quarter of the user's watch limit. Whatever
cannot be trusted - no inotify here, that cap reached, the kernel's event queue overflowed -
makes `Tree.drain` answer None, and the caller walks instead.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from pathlib import Path

MODIFY, CLOSE_WRITE, MOVED_FROM, MOVED_TO = 0x2, 0x8, 0x40, 0x80
CREATE, DELETE, DELETE_SELF, MOVE_SELF = 0x100, 0x200, 0x400, 0x800
Q_OVERFLOW, IGNORED, ISDIR = 0x4000, 0x8000, 0x40000000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
MASK = (
    MODIFY | CLOSE_WRITE | MOVED_FROM | MOVED_TO | CREATE | DELETE | DELETE_SELF | MOVE_SELF
) | (_ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK)
_NONBLOCK, _CLOEXEC = os.O_NONBLOCK, 0o2000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows

CAP = 65_536  # watches per process at most, and never more than a quarter of the user's limit


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


def _cap() -> int:
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        limit = 8192
    return min(CAP, limit // 4)


class _Hub:
    """The process's one inotify instance: a watch per folder, shared by the trees under it."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self.libc, self.fd = libc, fd
        self.lock = threading.Lock()
        self.cap = _cap()
        self.folders: dict[int, Path] = {}  # wd -> the folder it watches
        self.owners: dict[int, set[Tree]] = {}  # wd -> the trees that asked for it
        self.trees: set[Tree] = set()

    def add(self, tree: Tree, folder: Path) -> bool:
        if len(self.folders) >= self.cap:
            return False
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), MASK)
        if wd < 0:
            return ctypes.get_errno() != 28  # ENOSPC: the user's watch limit (else: gone)
        self.folders[wd] = folder  # the same inode again (a folder moved back) keeps its wd
        self.owners.setdefault(wd, set()).add(tree)
        tree.wds.add(wd)
        return True

    def release(self, tree: Tree, wds: set[int]) -> None:
        for wd in wds:
            owners = self.owners.get(wd)
            if owners is None:
                continue
            owners.discard(tree)
            if not owners:
                del self.owners[wd]
                self.folders.pop(wd, None)
                self.libc.inotify_rm_watch(self.fd, wd)
        tree.wds -= wds

    def pump(self) -> None:
        """Read every queued event and hand each path to the trees that watch its folder."""
        while True:
            try:
                data = os.read(self.fd, 256 * 1024)
            except BlockingIOError:
                return
            except OSError:
                for tree in self.trees:
                    tree.lost = True
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                self._one(wd, mask, os.fsdecode(name))

    def _one(self, wd: int, mask: int, name: str) -> None:
        if mask & Q_OVERFLOW:
            for tree in self.trees:
                tree.lost = True
            return
        folder = self.folders.get(wd)
        if folder is None:
            return
        if mask & IGNORED:  # the folder is gone (or was released): its wd may be reused
            for tree in self.owners.pop(wd, set()):
                tree.wds.discard(wd)
            del self.folders[wd]
            return
        path = folder / name if name else folder
        for tree in list(self.owners.get(wd, ())):
            tree.dirty[path] = tree.dirty.get(path, 0) | mask
            if mask & ISDIR and mask & (MOVED_FROM | DELETE):
                # A folder moved away keeps its watches under its old name: drop them, and
                # the walk of wherever it went watches it again.
                gone = [w for w in tree.wds if self.folders.get(w, path).is_relative_to(path)]
                self.release(tree, set(gone))


_hub: _Hub | None = None
_hub_lock = threading.Lock()


def _open_hub() -> _Hub | None:
    global _hub
    with _hub_lock:
        if _hub is None:
            libc = _libc()
            if libc is None:
                return None
            fd = libc.inotify_init1(_NONBLOCK | _CLOEXEC)
            if fd < 0:
                return None
            _hub = _Hub(libc, fd)
        return _hub


def _close_hub_if_idle() -> None:
    global _hub
    with _hub_lock:
        hub = _hub
        if hub is None:
            return
        with hub.lock:  # never while a look reads it
            if hub.trees:
                return
            os.close(hub.fd)
            hub.fd = -1
        _hub = None


class Tree:
    """One tree's share of the hub: the paths changed under its watched folders since `drain`."""

    def __init__(self, hub: _Hub) -> None:
        self.hub = hub
        self.wds: set[int] = set()
        self.dirty: dict[Path, int] = {}  # path -> the event bits seen for it
        self.lost = False  # events were missed: the next look must walk
        self.closed = False

    @classmethod
    def open(cls) -> Tree | None:
        """A tree on the process's inotify instance, or None where there is none."""
        hub = _open_hub()
        if hub is None:
            return None
        tree = cls(hub)
        with hub.lock:
            hub.trees.add(tree)
        return tree

    def watch(self, folder: Path) -> bool:
        """Watch `folder` (not its subfolders); False when the watch cap is reached."""
        with self.hub.lock:
            if not self.closed and self.hub.add(self, folder):
                return True
            self.lost = True
            return False

    def drain(self) -> dict[Path, int] | None:
        """The paths changed since the last drain with their event bits, or None when events
        were missed (the caller walks, and watches every folder again as it goes)."""
        with self.hub.lock:
            if self.closed:
                return None
            self.hub.pump()
            dirty, self.dirty = self.dirty, {}
            if self.lost:
                self.lost = False
                return None
            return dirty

    def close(self) -> None:
        with self.hub.lock:
            if self.closed:
                return
            self.closed = True
            self.hub.release(self, set(self.wds))
            self.hub.trees.discard(self)
        _close_hub_if_idle()


def watches() -> int:
    """How many folders this process watches (tests and bench/lsp_watching.py read it)."""
    hub = _hub
    return len(hub.folders) if hub is not None else 0
