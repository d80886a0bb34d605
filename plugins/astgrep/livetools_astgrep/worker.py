"""A parse worker: `python -m livetools_astgrep.worker`. Reads length-prefixed pickled requests on
stdin, answers on stdout, keeps its own parse cache for the run, and returns only match records
(spans, texts, bindings) or rewritten file contents, never trees."""

from __future__ import annotations

import gc
import os
import pickle
import sys
from typing import Any, BinaryIO

from .engine import Engine

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


def handle(engine: Engine, request: tuple[Any, ...]) -> Any:
    op = request[0]
    if op == "search":
        return engine.search(*request[1:])
    if op == "rewrite":
        return engine.rewrite(*request[1:])
    if op == "ping":
        return {"pid": os.getpid(), **engine.stats}
    raise ValueError(f"unknown request {op!r}")


def main() -> None:
    # Match records are many small objects and make no cycles: the cyclic collector would walk
    # the parse cache over and over while a large result is built (seconds per query).
    gc.disable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the frames
    engine = Engine(cache_bytes=int(os.environ.get("LIVETOOLS_ASTGREP_CACHE_BYTES", 96 << 20)))
    while True:
        header = read_exact(stdin, HEADER)
        if not header:
            return
        request = pickle.loads(read_exact(stdin, int.from_bytes(header, "big")))
        try:
            reply: tuple[str, Any] = ("ok", handle(engine, request))
        except Exception as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(len(data).to_bytes(HEADER, "big"))
        stdout.write(data)
        stdout.flush()


if __name__ == "__main__":
    main()
