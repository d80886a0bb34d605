"""Reading a file of the tree without letting it stall the run.

A FIFO, socket or device in the root blocks a plain `open()` forever, and a synchronous open on the
event loop stops every timeout from firing. So a file is checked to be regular before it is opened
(and opened with O_NONBLOCK, so a FIFO swapped in between check and open cannot block either), and
the async forms read in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from .paths import PathError, relpath

# Larger than any source file a tool should parse or send to a server.
DEFAULT_LIMIT = 16 * 1024 * 1024


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def check_regular(path: Path, root: Path | None = None) -> os.stat_result:
    """The file's stat if it is a regular file (symlinks followed); PathError otherwise."""
    shown = relpath(root, path) if root is not None else str(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise PathError(f"no such file: {shown}") from None
    except OSError as exc:
        raise PathError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise PathError(f"{shown} is {_kind(st.st_mode)}; pass a regular file") from None
    return st


def check_target(path: Path, root: Path | None = None) -> os.stat_result | None:
    """What a write may replace: None when nothing is there, the stat of a regular file, else
    PathError (a write never opens, or silently replaces, a FIFO, socket, device or directory)."""
    try:
        path.stat()
    except FileNotFoundError:
        return None
    except OSError:
        pass  # check_regular words it
    return check_regular(path, root)


def read_bytes_sync(path: Path, root: Path | None = None, *, limit: int = DEFAULT_LIMIT) -> bytes:
    """The whole content of a regular file of at most `limit` bytes (PathError otherwise).

    Never blocks on a FIFO: the open is non-blocking and the opened file is checked again."""
    shown = relpath(root, path) if root is not None else str(path)
    check_regular(path, root)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise PathError(f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathError(f"{shown} is {_kind(st.st_mode)}; pass a regular file")
        if st.st_size > limit:
            raise PathError(
                f"{shown} is {st.st_size} bytes, over the {limit}-byte limit for this tool"
            )
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise PathError(f"{shown} is over the {limit}-byte limit for this tool")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_sync(path: Path, root: Path | None = None, *, limit: int = DEFAULT_LIMIT) -> str:
    """UTF-8 text of a regular file; undecodable bytes become U+FFFD (never an exception)."""
    return read_bytes_sync(path, root, limit=limit).decode("utf-8", errors="replace")


async def read_bytes(path: Path, root: Path | None = None, *, limit: int = DEFAULT_LIMIT) -> bytes:
    """`read_bytes_sync` in a worker thread, so a slow disk never stalls the event loop."""
    return await asyncio.to_thread(read_bytes_sync, path, root, limit=limit)


async def read_text(path: Path, root: Path | None = None, *, limit: int = DEFAULT_LIMIT) -> str:
    """`read_text_sync` in a worker thread."""
    return await asyncio.to_thread(read_text_sync, path, root, limit=limit)
