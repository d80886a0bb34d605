"""Content-Length framed JSON over asyncio streams: the base protocol LSP and DAP share.

A frame is `Content-Length: N\\r\\n`, optional other headers, `\\r\\n`, then N bytes of UTF-8 JSON.
The LSP and DAP clients differ only above this layer (JSON-RPC ids vs DAP seq/request_seq).
After a WireError the stream is out of sync: close it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Callable
from typing import Any, Protocol

DEFAULT_MAX_SIZE = 64 * 1024 * 1024
_SHOW = 80  # bytes of a bad input quoted in errors


Transform = Callable[[Any], Any]


class ByteWriter(Protocol):
    """What a writer must offer: an asyncio StreamWriter does, and so can a sandbox adapter's
    stdin over a remote process API (see livetools.sandbox.Process)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


class WireError(Exception):
    """The peer sent something that is not a valid frame; the message quotes what arrived."""


class FramedReader:
    """Reads one framed JSON message at a time from a stream (a child's stdout, a socket)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        transform: Transform | None = None,
    ) -> None:
        self._reader = reader
        self._max_size = max_size
        self._transform = transform  # e.g. a sandbox's path mapping of every message read

    async def read(self) -> dict[str, Any] | list[Any] | None:
        """The next message; None on a clean EOF between messages."""
        length = await self._read_headers()
        if length is None:
            return None
        try:
            body = await self._reader.readexactly(length)
        except asyncio.IncompleteReadError as exc:
            raise WireError(
                f"stream ended inside a message body: got {len(exc.partial)} of {length} bytes: "
                f"{exc.partial[:_SHOW]!r}"
            ) from None
        try:
            message = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise WireError(f"message body is not JSON ({exc}): {body[:_SHOW]!r}") from None
        if not isinstance(message, dict | list):
            raise WireError(f"message body is not a JSON object or array: {body[:_SHOW]!r}")
        return message if self._transform is None else self._transform(message)

    async def _read_headers(self) -> int | None:
        """The Content-Length of the next frame, or None on EOF before any header byte."""
        length: int | None = None
        seen: list[bytes] = []
        while True:
            try:
                raw = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if not seen and not exc.partial.strip():
                    return None
                got = b"".join(seen) + exc.partial
                raise WireError(f"stream ended inside the headers: {got[:_SHOW]!r}") from None
            except asyncio.LimitOverrunError:
                head = await self._reader.read(_SHOW)
                raise WireError(f"header line too long: {head!r}") from None
            line = raw.rstrip(b"\r\n")
            if not line:
                if not seen:
                    continue  # tolerate blank lines between frames
                break
            seen.append(raw)
            name, sep, value = line.partition(b":")
            if not sep or not name.strip():
                raise WireError(f"invalid header line: {raw[:_SHOW]!r}")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = -1
                if length < 0:
                    raise WireError(f"invalid Content-Length: {raw[:_SHOW]!r}")
        if length is None:
            got = b"".join(seen)
            raise WireError(f"headers without Content-Length: {got[:_SHOW]!r}")
        if length > self._max_size:
            raise WireError(f"message of {length} bytes is above the {self._max_size} byte cap")
        return length


class FramedWriter:
    """Writes framed JSON messages; concurrent writers never interleave frames."""

    def __init__(self, writer: ByteWriter, *, transform: Transform | None = None) -> None:
        self._writer = writer
        self._lock = asyncio.Lock()
        self._transform = transform  # e.g. a sandbox's path mapping of every message written

    async def write(self, message: object) -> None:
        if self._transform is not None:
            message = self._transform(message)
        body = json.dumps(
            message, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode("utf-8")
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        async with self._lock:
            self._writer.write(frame)
            await self._writer.drain()

    async def aclose(self) -> None:
        """Close the stream; bounded, and quiet if the peer is already gone."""
        self._writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)


async def open_tcp(
    host: str,
    port: int,
    *,
    timeout: float = 10.0,  # noqa: ASYNC109 (the retry loop needs the deadline itself)
    retry_interval: float = 0.05,
) -> tuple[FramedReader, FramedWriter]:
    """Connect to a loopback port, retrying until `timeout`: adapters open their port a moment
    after they start. Raises ConnectionError naming host:port and the last OS error."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: OSError | None = None
    while (remaining := deadline - loop.time()) > 0:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), remaining)
            return FramedReader(reader), FramedWriter(writer)
        except TimeoutError:  # before OSError: TimeoutError is one
            break
        except OSError as exc:
            last = exc
        await asyncio.sleep(min(retry_interval, max(deadline - loop.time(), 0)))
    raise ConnectionError(
        f"could not connect to {host}:{port} within {timeout:g}s: {last or 'timed out'}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the usual race applies: use it at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
