"""Content-Length framing over real pipes, sockets and StreamReaders fed chunk by chunk."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from pathlib import Path

import pytest

from livetools.procs import ChildProcess
from livetools.wire import FramedReader, FramedWriter, WireError, free_port, open_tcp

# A child with its own (synchronous, stdlib) framing that sends every body back, adding the
# optional Content-Type header: both sides must agree on byte lengths and header parsing.
ECHO = r"""
import sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    length = None
    while (line := inp.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    if line == b"":
        break
    body = inp.read(length)
    out.write(b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n%s" % (len(body), body))
    out.flush()
"""

UNICODE = {"text": "héllo — 日本語 🎉", "n": 1}


def feed(*chunks: bytes) -> FramedReader:
    """A real StreamReader receiving exactly these chunks, then EOF."""
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return FramedReader(reader)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_round_trip_through_a_child_process(tmp_path: Path) -> None:
    child = await ChildProcess.start([sys.executable, "-c", ECHO], cwd=tmp_path)
    try:
        assert child.stdin is not None and child.stdout is not None
        reader, writer = FramedReader(child.stdout), FramedWriter(child.stdin)
        await writer.write(UNICODE)
        assert await asyncio.wait_for(reader.read(), 10) == UNICODE
        # Concurrent writers: frames must not interleave.
        await asyncio.gather(*(writer.write({"id": i, "pad": "x" * 5000}) for i in range(50)))
        got = [await asyncio.wait_for(reader.read(), 10) for _ in range(50)]
        assert sorted(m["id"] for m in got if isinstance(m, dict)) == list(range(50))
        await writer.write([1, 2, 3])
        assert await asyncio.wait_for(reader.read(), 10) == [1, 2, 3]
        await writer.aclose()
        assert await asyncio.wait_for(reader.read(), 10) is None  # clean EOF
        assert await child.wait(10) == 0
    finally:
        await child.aclose(grace=0)


async def test_length_is_counted_in_utf8_bytes() -> None:
    left, right = socket.socketpair()
    _, left_writer = await asyncio.open_connection(sock=left)
    right_reader, _ = await asyncio.open_connection(sock=right)
    writer = FramedWriter(left_writer)
    await writer.write(UNICODE)
    await writer.aclose()
    raw = await asyncio.wait_for(right_reader.read(), 10)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert body.decode("utf-8") == json.dumps(UNICODE, ensure_ascii=False, separators=(",", ":"))
    assert head == b"Content-Length: %d" % len(body)
    assert len(body) > len(body.decode("utf-8"))  # bytes, not characters


async def test_many_messages_in_one_chunk_and_one_message_in_many_chunks() -> None:
    bodies = [json.dumps({"seq": i, "text": "é" * i}).encode() for i in range(3)]
    reader = feed(b"".join(frame(b) for b in bodies))
    assert [await reader.read() for _ in range(3)] == [json.loads(b) for b in bodies]
    assert await reader.read() is None

    data = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + frame(
        json.dumps(UNICODE, ensure_ascii=False).encode()
    )
    reader = feed(*(data[i : i + 1] for i in range(len(data))))  # one byte per chunk
    assert await reader.read() == UNICODE
    assert await reader.read() is None


async def test_bare_lf_headers_and_blank_lines_between_frames_are_accepted() -> None:
    reader = feed(b"\r\nContent-Length: 2\n\n{}" + b"\r\n" + frame(b"[]"))
    assert await reader.read() == {}
    assert await reader.read() == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"INFO server started\r\n\r\n{}", "invalid header line: b'INFO server started"),
        (b"Content-Type: x\r\n\r\n{}", "headers without Content-Length: b'Content-Type: x"),
        (b"Content-Length: ten\r\n\r\n{}", "invalid Content-Length: b'Content-Length: ten"),
        (b"Content-Length: 5\r\n\r\nhello", "message body is not JSON"),
        (b"Content-Length: 1\r\n\r\n7", "message body is not a JSON object or array: b'7'"),
        (b'Content-Length: 10\r\n\r\n{"a"', "stream ended inside a message body: got 4 of 10"),
        (b"Content-Length: 10\r\n", "stream ended inside the headers"),
    ],
)
async def test_bad_input_is_a_wire_error_quoting_it(data: bytes, expected: str) -> None:
    with pytest.raises(WireError) as info:
        await feed(data).read()
    assert expected in str(info.value)


async def test_non_json_body_is_quoted() -> None:
    with pytest.raises(WireError, match=r"b'hello'"):
        await feed(b"Content-Length: 5\r\n\r\nhello").read()


async def test_size_cap() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"Content-Length: 1000\r\n\r\n")
    with pytest.raises(WireError, match="1000 bytes is above the 100 byte cap"):
        await FramedReader(reader, max_size=100).read()


async def test_clean_eof_is_none() -> None:
    assert await feed().read() is None


async def test_tcp_connects_to_a_server_that_starts_late() -> None:
    port = free_port()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framed_reader, framed_writer = FramedReader(reader), FramedWriter(writer)
        while (message := await framed_reader.read()) is not None:
            await framed_writer.write({"echo": message})
        await framed_writer.aclose()

    connecting = asyncio.ensure_future(open_tcp("127.0.0.1", port, timeout=10))
    await asyncio.sleep(0.3)  # the client is already retrying
    assert not connecting.done()
    server = await asyncio.start_server(serve, "127.0.0.1", port)
    try:
        reader, writer = await asyncio.wait_for(connecting, 10)
        await writer.write(UNICODE)
        assert await asyncio.wait_for(reader.read(), 10) == {"echo": UNICODE}
        await writer.aclose()
    finally:
        server.close()
        await server.wait_closed()


async def test_tcp_timeout_names_the_address_and_the_os_error() -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ConnectionError) as info:
        await open_tcp("127.0.0.1", port, timeout=0.3)
    assert time.monotonic() - started < 2
    message = str(info.value)
    assert f"127.0.0.1:{port} within 0.3s" in message
    assert "Connect call failed" in message or "refused" in message.lower()
