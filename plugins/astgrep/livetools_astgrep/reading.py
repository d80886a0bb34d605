"""Reading a file of the tree in a parse worker or a worker thread, never blocking: the walk
passes only regular files, but a file can be swapped for a FIFO between the walk and the read,
and a plain `open()` of a FIFO waits for a writer forever."""

from __future__ import annotations

import errno
import os
import stat

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_regular(path: str, size: int = -1) -> bytes:
    """The bytes of a regular file; OSError for anything else. `size`, when known (the walk's
    stat), makes the common case one read call."""
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)")
        data = os.read(fd, (size if size >= 0 else st.st_size) + 1)
        if len(data) <= (size if size >= 0 else st.st_size):  # a short read is the end
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
