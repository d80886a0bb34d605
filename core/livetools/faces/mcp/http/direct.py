"""2026-era `tools/call` answered without the SDK's per-request machinery.

A 2026-07-28 `tools/call` through the SDK builds a starlette Request, a Connection, a dispatch
context, a server runner with its middleware chain, a memory stream and a task group of two,
and validates and dumps the result through pydantic three times: ~1.5-2.5 ms of CPU on the one
event loop every run shares, more than most of our tools' own work. Under 50 paced runs that
CPU is the queue a call waits in (bench/http_load.py).

So a plain call is served here: the same checks in the same order, the SDK's own functions
doing them (envelope and header ladder, `Mcp-Param-*` headers, the request's surface
validation), the same handler as the SDK path (`McpFace.call_modern`), the same wire result
(the SDK's surface sieve, `resultType`, the `serverInfo` stamp), the same SSE upgrade with
pings for a call past the SDK's deferral window, and a dropped stream cancels the call. Anything
else — another method, a request any check would refuse, a retry carrying `requestState`,
`Mcp-Param-*` headers, an OpenTelemetry tracer to record spans in — goes to the SDK with the
body replayed, so every refusal and every rare shape keeps one implementation: the SDK's.
tests/core/test_http_direct.py holds the two paths to the same answers."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.types import Message, Receive, Scope, Send

if TYPE_CHECKING:
    from .face import HttpFace

PING_INTERVAL = 15.0  # the SDK's deferral window and ping period (_SSE_PING_INTERVAL)
PARAM_KEYS = frozenset({"name", "arguments", "_meta"})
META_KEYS = frozenset(
    {"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"}
    | {"io.modelcontextprotocol/clientInfo"}
)
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]


class Replay:
    """What was read of a request, handed out again before the rest: the SDK path then reads
    the same body the direct path looked at."""

    def __init__(self, messages: list[Message], receive: Receive) -> None:
        self._messages = messages
        self._receive = receive

    async def __call__(self) -> Message:
        if self._messages:
            return self._messages.pop(0)
        return await self._receive()


async def read_body(receive: Receive, limit: int) -> tuple[Replay, bytes | None]:
    """The whole body (None past `limit` bytes or when the client left), and a receive that
    hands the SDK what was read before the rest."""
    read: list[Message] = []
    body = bytearray()
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return Replay(read, receive), None
        body += message.get("body", b"")
        if len(body) > limit:
            return Replay(read, receive), None
        if not message.get("more_body", False):
            return Replay(read, receive), bytes(body)


def _modern_versions() -> frozenset[str]:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


def _tracing() -> bool:
    """An OpenTelemetry SDK is configured: the SDK path records a span per request."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def accepts_both(value: str) -> bool:
    """Both JSON and SSE acceptable (the SDK's SSE mode refuses anything else with 406)."""
    types = {part.split(";")[0].strip().lower() for part in value.split(",")}
    if "*/*" in types:
        return True
    json_ok = bool(types & {"application/json", "application/*"})
    return json_ok and bool(types & {"text/event-stream", "text/*"})


class Direct:
    """The direct path of one run's endpoint."""

    def __init__(self, face: HttpFace, max_body: int) -> None:
        self.face = face
        self.max_body = max_body
        self.modern = _modern_versions()
        # An operator's escape hatch (and the differential test's other side).
        self.enabled = os.environ.get("LIVETOOLS_HTTP_DIRECT", "1") != "0"

    def _headers_qualify(self, scope: Scope) -> dict[str, str] | None:
        if scope.get("method") != "POST":
            return None
        headers: dict[str, str] = {}
        for key, value in scope.get("headers") or ():
            name = key.decode("latin-1")
            if name in headers or name.startswith("mcp-param-"):
                return None  # a repeated header, or parameters in headers: the SDK's checks
            headers[name] = value.decode("latin-1")
        if headers.get("mcp-protocol-version") not in self.modern:
            return None
        length = headers.get("content-length", "")
        if not length.isdigit() or int(length) > self.max_body:
            return None
        if not headers.get("content-type", "").lower().startswith("application/json"):
            return None
        if not accepts_both(headers.get("accept", "")):
            return None
        return headers

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer the request and return None; or return the receive to give the SDK (the body
        read so far first) when the request is not one this path answers."""
        headers = self._headers_qualify(scope) if self.enabled else None
        if headers is None or _tracing():
            return receive
        replay, body = await read_body(receive, self.max_body)
        call = None if body is None else self._parse(body, headers)
        if call is None:
            return replay
        await self._answer(call, receive, send)
        return None

    def _parse(self, body: bytes, headers: dict[str, str]) -> _Call | None:
        from mcp.shared.inbound import InboundModernRoute, classify_inbound_request
        from mcp_types import methods
        from pydantic import ValidationError

        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(decoded, dict) or decoded.get("method") != "tools/call":
            return None
        if set(decoded) != {"jsonrpc", "id", "method", "params"} or decoded["jsonrpc"] != "2.0":
            return None
        request_id = decoded["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return None
        params = decoded["params"]
        if not isinstance(params, dict) or not set(params) <= PARAM_KEYS:
            return None
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None
        meta = params.get("_meta")
        if not isinstance(meta, dict) or not set(meta) <= META_KEYS:
            return None
        verdict = classify_inbound_request(decoded, headers=headers)
        if not isinstance(verdict, InboundModernRoute):
            return None
        try:
            methods.validate_client_request("tools/call", verdict.protocol_version, params)
        except (ValidationError, KeyError, ValueError):
            return None
        if arguments and self._param_rejected(name, arguments, headers):
            return None
        version, capabilities = verdict.protocol_version, verdict.client_capabilities
        return _Call(request_id, name, arguments, version, capabilities)

    def _param_rejected(
        self, name: str, arguments: dict[str, Any], headers: dict[str, str]
    ) -> bool:
        """The tool declares `x-mcp-header` parameters, which no header here carries: what the
        SDK would refuse (or let through) is its to say."""
        from mcp.shared.inbound import validate_mcp_param_headers

        schema = self.face._input_schema(name)
        if schema is None:
            return False
        return validate_mcp_param_headers(schema, arguments, headers) is not None

    async def _answer(self, call: _Call, receive: Receive, send: Send) -> None:
        task = asyncio.ensure_future(self._result(call))
        watch = asyncio.ensure_future(_disconnected(receive))
        streaming = False
        try:
            while True:
                done, _ = await asyncio.wait(
                    {task, watch}, timeout=PING_INTERVAL, return_when=asyncio.FIRST_COMPLETED
                )
                if task in done:
                    break
                if watch in done:
                    task.cancel()  # closing the stream is the 2026 era's cancellation
                    await asyncio.gather(task, return_exceptions=True)
                    return
                if not streaming:
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS}
                    )
                    streaming = True
                await send(
                    {"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True}
                )
        finally:
            watch.cancel()
            if not task.done():
                task.cancel()
        status, message = task.result()
        data = json.dumps(message, separators=(",", ":"))
        if streaming:
            frame = f"event: message\r\ndata: {data}\r\n\r\n".encode()
            await send({"type": "http.response.body", "body": frame, "more_body": False})
            return
        payload = data.encode()
        start_headers = [
            (b"content-length", str(len(payload)).encode()),
            (b"content-type", b"application/json"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": start_headers})
        await send({"type": "http.response.body", "body": payload, "more_body": False})

    async def _result(self, call: _Call) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON-RPC message) as the SDK's modern entry words them."""
        from mcp.server.runner import modern_error_data
        from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

        try:
            result = await self.face.answer_direct(
                call.name, call.arguments, call.version, call.capabilities
            )
        except Exception as exc:
            error = modern_error_data(exc)
            dumped = error.model_dump(mode="json", by_alias=True, exclude_none=True)
            message = {"jsonrpc": "2.0", "id": call.request_id, "error": dumped}
            return ERROR_CODE_HTTP_STATUS.get(error.code, 200), message
        return 200, {"jsonrpc": "2.0", "id": call.request_id, "result": result}


@dataclass(frozen=True, slots=True)
class _Call:
    request_id: int | str
    name: str
    arguments: dict[str, Any]
    version: str
    capabilities: Any  # the envelope's raw value


async def _disconnected(receive: Receive) -> None:
    while (await receive()).get("type") != "http.disconnect":
        pass
