"""A parse worker: `python -m livetools_astgrep.worker`. Reads length-prefixed pickled requests on
stdin, answers on stdout, keeps its own parse cache for the run, and returns only match records
(spans, texts, bindings) or rewritten file contents, never trees.

Search answers travel as marshal data (plain tuples, lists, dicts and strings): a search can
return 500k match rows, and marshal writes them three times faster than pickle. Both ends are
the same interpreter (the host starts the worker with its own executable), which is what
marshal needs. Other answers are pickled."""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import pickle
import sys
from typing import Any, BinaryIO

from .engine import CACHE_BYTES, Engine, FileOutcome

HEADER = 8


def read_exact(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return b""
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe instead of 64 KiB: answers run to megabytes, and each full pipe is a pair
    of wake-ups between this process and the host (Linux only; elsewhere the default stays)."""
    try:
        import fcntl
    except ImportError:
        return
    command = getattr(fcntl, "F_SETPIPE_SZ", None)
    if command is not None:
        with contextlib.suppress(OSError):  # a cap below 1 MiB: keep the default
            fcntl.fcntl(fd, command, 1 << 20)


def encode_reply(status: str, op: str, value: Any) -> bytes:
    if status == "ok" and op == "search":
        return marshal.dumps((status, "search", [o.to_wire() for o in value]))
    return marshal.dumps((status, "pickle", pickle.dumps(value, pickle.HIGHEST_PROTOCOL)))


def decode_reply(body: bytes) -> tuple[str, Any]:
    status, kind, value = marshal.loads(body)
    if kind == "search":
        return status, [FileOutcome.from_wire(t) for t in value]
    return status, pickle.loads(value)


def handle(engine: Engine, request: tuple[Any, ...]) -> Any:
    op = request[0]
    if op == "search":
        return engine.search(*request[1:])
    if op == "rewrite":
        return engine.rewrite(*request[1:])
    if op == "ping":
        return {"pid": os.getpid(), **engine.stats, "held": engine.held}
    raise ValueError(f"unknown request {op!r}")


def main() -> None:
    # Match records are many small objects and make no cycles: the cyclic collector would walk
    # the parse cache over and over while a large result is built (seconds per query).
    gc.disable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    _widen_pipe(stdout.fileno())
    sys.stdout = sys.stderr  # a stray print must not corrupt the frames
    engine = Engine(cache_bytes=int(os.environ.get("LIVETOOLS_ASTGREP_CACHE_BYTES", CACHE_BYTES)))
    while True:
        header = read_exact(stdin, HEADER)
        if not header:
            return
        request = pickle.loads(read_exact(stdin, int.from_bytes(header, "big")))
        try:
            data = encode_reply("ok", request[0], handle(engine, request))
        except Exception as exc:
            data = encode_reply("error", request[0], f"{type(exc).__name__}: {exc}")
        stdout.write(len(data).to_bytes(HEADER, "big"))
        stdout.write(data)
        stdout.flush()


if __name__ == "__main__":
    main()
