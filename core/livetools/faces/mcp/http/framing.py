"""A 2025-11-25 POST whose stream carries nothing but its answer is answered as JSON.

The SDK answers every handshake-era POST with an SSE stream: headers first, then the answer
as one event, then the end of the chunked body in a later write. Clients (the `mcp` SDK's,
the MCP Inspector's) close the response as soon as the answer event is parsed, before the
body's end is read, so the connection cannot be reused: under load most handshake-era calls
opened a new TCP connection (accept, handshake, close, 4 writes instead of 1), which is why
that era served about half the calls/s of the 2026 one, whose path answers plain JSON.

Here the SSE headers are held until the first event. When that event is the request's answer
and the stream then ends, the client gets `application/json` with a Content-Length in one
write, which the era allows (the server picks JSON or SSE per response) and which clients read
to the end. Anything else (a notification, a request to the client such as an elicitation,
a keep-alive ping, an event id for resuming) commits the stream as SSE, unchanged; the SDK
pings every 15 s, so headers are never held longer than the 2026 path holds them.

That still leaves the SDK's SSE machinery running for every such call: a task group of two
around an sse_starlette response with a task group of five (stream, pinger, shutdown watcher,
the SDK's event sender, disconnect listener), and zero-buffer streams handing each event from
task to task. Under 50 paced runs that per-call work on the one event loop was the
2025-11-25 era's tail (p99 2.0-2.2x the run alone against ~1.0x without it). So a POST whose
call cannot send the client anything before its answer (`one_body`: a tools/call that needs
no approval and cannot reach the question port, `HttpFace.asks_nothing`) is served in the
SDK's JSON-response mode, chosen per request: `PerRequestJson` stands in for the session
manager's `json_response` flag and reads true only in the task serving such a POST. The SDK
reads the flag there to pick its JSON branch and to stamp the request as having no back
channel, so a question asked anyway fails at once (elicit.py) instead of being lost. Its
message router reads the flag in the session's own task and sees false, which is right for
every other request, and means such a call must not send request-scoped notifications either
(none of ours does): the router would hand one to the JSON branch as the answer."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable

from starlette.types import Message, Receive, Send

from .direct import accepts_both, read_body

ONE_BODY: contextvars.ContextVar[bool] = contextvars.ContextVar("one_body", default=False)

EVENT_PREFIX = b"event: message\r\ndata: "
EVENT_END = b"\r\n\r\n"
ANSWER_PREFIX = b'{"jsonrpc":"2.0","id":'


def answer_payload(chunk: bytes) -> bytes | None:
    """The JSON of an SSE chunk that is exactly one `message` event carrying a JSON-RPC result
    or error (the SDK serializes `jsonrpc`, `id`, then `result`/`error`); None otherwise."""
    if not (chunk.startswith(EVENT_PREFIX) and chunk.endswith(EVENT_END)):
        return None
    payload = chunk[len(EVENT_PREFIX) : -len(EVENT_END)]
    if b"\n" in payload or b"\r" in payload or not payload.startswith(ANSWER_PREFIX):
        return None
    # The id is a number or a string, which cannot hold an unescaped quote: the first `,"`
    # after it starts the next key.
    rest = payload[len(ANSWER_PREFIX) :]
    comma = rest.find(b',"')
    if comma < 0:
        return None
    key = rest[comma + 2 :]
    return payload if key.startswith((b'result"', b'error"')) else None


def _is_sse(message: Message) -> bool:
    for key, value in message.get("headers") or ():
        if key.lower() == b"content-type":
            return bytes(value).startswith(b"text/event-stream")
    return False


class JsonAnswers:
    """An ASGI `send` in front of the SDK for one handshake-era POST (see the module)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None
        self._chunk: bytes | None = None  # the held answer event, as sent
        self._payload = b""
        self._passing = False
        self.converted = False

    async def send(self, message: Message) -> None:
        if self._passing:
            await self._send(message)
            return
        if message["type"] == "http.response.start":
            if _is_sse(message):
                self._start = message
                return
            self._passing = True
            await self._send(message)
            return
        if message["type"] == "http.response.body" and self._start is not None:
            body = bytes(message.get("body", b""))
            more = message.get("more_body", False)
            if self._chunk is None and more:
                payload = answer_payload(body)
                if payload is not None:
                    self._chunk, self._payload = body, payload
                    return
            elif self._chunk is not None and not more and not body:
                await self._answer_json(self._start)
                return
        await self.flush()
        await self._send(message)

    async def _answer_json(self, start: Message) -> None:
        headers = [
            (k, v)
            for k, v in start.get("headers") or ()
            if k.lower() not in (b"content-type", b"content-length", b"x-accel-buffering")
        ]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self._payload)).encode("ascii")),
        ]
        self._start = self._chunk = None
        self._passing = True
        self.converted = True
        await self._send({**start, "headers": headers})
        await self._send({"type": "http.response.body", "body": self._payload})

    async def flush(self) -> None:
        """Commit to SSE: whatever is held goes out as it came."""
        self._passing = True
        start, chunk = self._start, self._chunk
        self._start = self._chunk = None
        if start is not None:
            await self._send(start)
        if chunk is not None:
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})


class PerRequestJson:
    """The session manager's `json_response`: true in the task serving a `one_body` POST."""

    def __bool__(self) -> bool:
        return ONE_BODY.get()


async def one_body(
    headers: dict[bytes, bytes], receive: Receive, limit: int, asks_nothing: Callable[[str], bool]
) -> tuple[Receive, bool]:
    """Read a handshake-era POST of an open session; whether it is one tools/call whose tool
    `asks_nothing`. The body goes back to the SDK through the returned receive."""
    if b"mcp-session-id" not in headers:
        return receive, False  # an initialize (or a refusal the SDK words)
    if not accepts_both(headers.get(b"accept", b"").decode("latin-1")):
        return receive, False  # the SDK's SSE mode refuses it (406); so would this one
    replay, body = await read_body(receive, limit)
    if body is None:
        return replay, False
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return replay, False
    if not isinstance(decoded, dict) or decoded.get("method") != "tools/call":
        return replay, False  # a batch, a notification, another method
    params = decoded.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if not isinstance(name, str) or decoded.get("id") is None:
        return replay, False
    return replay, asks_nothing(name)
