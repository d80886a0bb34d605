"""Replacing one file only if it still holds what we expect: a compare-and-swap on a path.

A staged change knows what each file held when it was staged. Checking that once and then
writing leaves the whole write phase open to another process's save, which the write would
overwrite. Here each file is checked right before its own replace, and the replace itself is an
atomic exchange (`renameat2(RENAME_EXCHANGE)`) that hands back what it displaced: if that is not
what we expected, a save landed between the check and the exchange, and it is exchanged back at
once, so the save is never lost. A file that did not exist is created with `RENAME_NOREPLACE`, so
a file created meanwhile is never overwritten.

The residual window: a writer that opened the file in place (not temp + rename) before the
exchange and writes into it after we compared the displaced copy writes into a file no longer at
the path. That is microseconds wide and no tool on POSIX can close it; a temp + rename save (what
editors do) is always kept. Where the kernel or file system has no `renameat2` (EINVAL, ENOSYS)
the swap falls back to check-then-`os.replace`, whose window is the same microseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from .owner import temp_name

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
AT_FDCWD = -100


class Moved(Exception):
    """The file no longer holds what the change expects (a save landed); nothing of it written."""


@dataclass(frozen=True)
class Seen:
    """What a file looked like when its content was read: equal fields mean the same content
    unless the file was written within the timestamp granularity of that read (git's "racily
    clean" rule), in which case the content itself is compared."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    dev: int
    read_ns: int

    @classmethod
    def of(cls, st: os.stat_result, read_ns: int) -> Seen:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, read_ns)

    def same(self, st: os.stat_result) -> bool:
        racy = max(st.st_mtime_ns, st.st_ctime_ns) >= self.read_ns - RACY_NS
        return not racy and (
            (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
            == (self.size, self.mtime_ns, self.ctime_ns, self.ino, self.dev)
        )


# File-system timestamps come from a coarse clock (a jiffy, up to 10 ms): a write in the same
# tick as our read can leave every stat field equal.
RACY_NS = 50_000_000

_libc: ctypes.CDLL | bool | None = False


def _renameat2(src: str, dst: str, flags: int) -> bool:
    """True when done; False when this system has no renameat2 (use the fallback)."""
    global _libc
    if _libc is False:
        name = ctypes.util.find_library("c")
        lib = ctypes.CDLL(name, use_errno=True) if name else None
        _libc = lib if lib is not None and hasattr(lib, "renameat2") else None
    if _libc is None:
        return False
    fn = _libc.renameat2  # type: ignore[union-attr]
    rc = fn(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


def holds(path: Path, expected: bytes | None, seen: Seen | None = None) -> bool:
    """Whether `path` holds `expected` (None: absent). Stat first; content when stat can't tell."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return expected is None
    if expected is None:
        return False
    if seen is not None and seen.same(st):
        return True
    if st.st_size != len(expected):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(len(expected) + 1) == expected
    except OSError:
        return False


def _just_written(path: Path) -> bool:
    """An empty file written within the timestamp granularity: most likely a save in place
    caught between its truncate and its write (whose write would then land in the file we
    displace, and be lost). Refused as changed; staging again a moment later sees the save.
    Under load, 1 save in ~160 was lost that way in tests/core/test_edits_race.py."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return max(st.st_mtime_ns, st.st_ctime_ns) >= time.time_ns() - RACY_NS


def swap_in(temp: str, path: Path, expected: bytes | None, seen: Seen | None = None) -> None:
    """Move `temp` to `path` if `path` still holds `expected`; raise Moved otherwise (temp is
    then removed and `path` holds whatever the other writer saved)."""
    try:
        if not holds(path, expected, seen) or (expected == b"" and _just_written(path)):
            raise Moved(path)
        if expected is None:
            if not _renameat2(temp, str(path), RENAME_NOREPLACE):
                if path.exists():
                    raise Moved(path)
                os.replace(temp, path)
            return
        try:
            exchanged = _renameat2(temp, str(path), RENAME_EXCHANGE)
        except FileNotFoundError:
            raise Moved(path) from None  # deleted between the check and the exchange
        if not exchanged:
            os.replace(temp, path)
            return
        # `temp` now holds what was displaced: if that is not what we expected, a save landed
        # between the check and the exchange; put it back (the newest save wins).
        if not holds(Path(temp), expected, None):
            _renameat2(temp, str(path), RENAME_EXCHANGE)
            raise Moved(path)
    except FileExistsError:
        raise Moved(path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def remove_if(path: Path, expected: bytes, seen: Seen | None = None) -> None:
    """Delete `path` if it still holds `expected` (moved aside first, checked, then removed, so
    a save that lands meanwhile is put back instead of deleted)."""
    if not holds(path, expected, seen):
        raise Moved(path)
    aside = str(path.parent / temp_name(path.name, secrets.token_hex(4)))
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        raise Moved(path) from None
    if holds(Path(aside), expected, None):
        os.unlink(aside)
        return
    # a save landed between the check and the move: put it back unless a new file took its place
    try:
        if not _renameat2(aside, str(path), RENAME_NOREPLACE):
            os.replace(aside, path)
    except FileExistsError:
        os.unlink(aside)  # a still newer file is at the path: it supersedes the one moved aside
    raise Moved(path)
