"""A dropped stream cancels its call, in both eras.

2026-07-28: closing the response stream is the cancellation; the SDK cancels the handler when
the client disconnects. 2025-11-25: the SDK keeps a session's requests running when their POST
stream drops (the era allows resuming, but no event store ships, so the answer is lost). Here
the POST body is watched on its way to the SDK, and when its response did not finish, each
request it carried is cancelled with a `notifications/cancelled` handed to the same session,
as if the client had sent it. The tool call then stops the way a timeout stops it (the kernel
is interrupted, the LSP request cancelled, the search told to stop) and the run stays usable."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("livetools.serve.http")

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
KEPT_HEADERS = {SESSION_HEADER, VERSION_HEADER, b"host"}
INJECT_WAIT = 5.0


class DropWatch:
    """Around one POST to a run's MCP endpoint: what it carried and whether it was answered."""

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self._receive = receive
        self._send = send
        self.body = bytearray()
        self.finished = False
        headers = dict(scope.get("headers") or [])
        self.session = headers.get(SESSION_HEADER)
        version = headers.get(VERSION_HEADER, b"").decode("latin-1")
        self.legacy = scope.get("method") == "POST" and self.session is not None
        self.legacy = self.legacy and (not version or version.startswith("2025-"))

    async def receive(self) -> Message:
        message = await self._receive()
        if self.legacy and message["type"] == "http.request" and len(self.body) < (1 << 22):
            self.body.extend(message.get("body", b""))
        return message

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self._send(message)

    def dropped_requests(self) -> list[Any]:
        """Ids of the requests of a handshake-era POST whose response never finished."""
        if not self.legacy or self.finished:
            return []
        try:
            parsed = json.loads(self.body)
        except ValueError:
            return []
        messages = parsed if isinstance(parsed, list) else [parsed]
        return [
            m["id"]
            for m in messages
            if isinstance(m, dict) and "method" in m and m.get("id") is not None
        ]


async def cancel_dropped(app: ASGIApp, watch: DropWatch) -> None:
    """Hand `notifications/cancelled` for each dropped request to its session, through the
    same ASGI entry the client's own POSTs take."""
    ids = watch.dropped_requests()
    if not ids:
        return
    headers = [(k, v) for k, v in watch.scope["headers"] if k in KEPT_HEADERS]
    headers += [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    for request_id in ids:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the client's stream dropped"},
        }
        scope = {**watch.scope, "headers": headers, "method": "POST"}
        with anyio.move_on_after(INJECT_WAIT), anyio.CancelScope(shield=True):
            try:
                await _post(app, scope, json.dumps(note).encode())
            except Exception:
                log.debug("cancelling a dropped request failed", exc_info=True)
        log.info("request %r: its stream dropped, cancelled", request_id)


async def _post(app: ASGIApp, scope: Scope, body: bytes) -> None:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError

    async def discard(message: Message) -> None:
        return None

    await app(scope, receive, discard)
