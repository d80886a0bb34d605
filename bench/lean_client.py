"""A lean MCP client for the load benchmark: tools/call as one POST on a kept-alive HTTP/1.1
connection, written and read with asyncio streams; no SDK, no HTTP library.

Measured on this 2-core machine: the `mcp` SDK's client spends ~3 ms of CPU per call and a bare
httpx2 POST 1.4-2.5 ms, as much as the server's whole work for an ast_grep call (~2 ms). With
50 runs' clients on the machine that hosts the server, that CPU is a load of its own and its
queue shows up in the tail measured, though in the field those clients run elsewhere. This one
sends the same requests (the 2026 era's per-request envelope and headers, or the 2025-11-25
era's session) and reads the answer, JSON or SSE, plain or chunked. Which client measured a
figure is part of the figure (`http_load.py --client`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any
from urllib.parse import urlsplit

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
CLIENT_INFO = {"name": "livetools-http-load", "version": "1"}
ACCEPT = "application/json, text/event-stream"


class Connection:
    """One kept-alive HTTP/1.1 connection, opened again when the server has closed it."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path = parts.path
        self.head = f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None

    async def request(
        self, method: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        data = (
            f"{method} {self.path} HTTP/1.1\r\n{self.head}{lines}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        for attempt in (1, 2):
            if self.streams is None or self.streams[0].at_eof():
                await self.close()
                self.streams = await asyncio.open_connection(self.host, self.port)
            reader, writer = self.streams
            writer.write(data)
            await writer.drain()
            status_line = await reader.readline()
            if status_line:
                break
            await self.close()  # closed while idle, before it read this request: send again
            if attempt == 2:
                raise ConnectionError(f"{method}: the server closed the connection")
        status = int(status_line.split()[1])
        found: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            found[name.strip().lower()] = value.strip()
        if "content-length" in found:
            payload = await reader.readexactly(int(found["content-length"]))
        elif found.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int((await reader.readline()).split(b";")[0], 16):
                chunks.append(await reader.readexactly(size))
                await reader.readline()
            await reader.readline()
            payload = b"".join(chunks)
        else:
            payload = await reader.read()
            await self.close()
        if found.get("connection", "").lower() == "close":
            await self.close()
        return status, found, payload


class LeanClient:
    """One run's MCP client; `url` is the run's full URL, `token` its bearer token."""

    def __init__(self, url: str, token: str, era: str) -> None:
        self.conn = Connection(url, token)
        self.era = era
        self.ids = itertools.count(1)
        self.headers = {"Accept": ACCEPT, "Content-Type": "application/json"}

    async def __aenter__(self) -> LeanClient:
        if self.era == "legacy":
            params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO}
            answer, headers = await self._post("initialize", params)
            if "result" not in answer:
                raise RuntimeError(f"initialize: {answer.get('error')}")
            self.headers["Mcp-Session-Id"] = headers["mcp-session-id"]
            self.headers["MCP-Protocol-Version"] = LEGACY
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
            status, _, _ = await self.conn.request("POST", self.headers, note.encode())
            if status != 202:
                raise RuntimeError(f"notifications/initialized: HTTP {status}")
        else:
            self.headers["MCP-Protocol-Version"] = MODERN
            self.headers["Mcp-Method"] = "tools/call"
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if "Mcp-Session-Id" in self.headers:
                await self.conn.request("DELETE", self.headers)
        finally:
            await self.conn.close()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(failed, why): a tool error, a JSON-RPC error or an unexpected answer fails."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        extra = {}
        if self.era != "legacy":
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
            }
            extra = {"Mcp-Name": name}
        answer, _ = await self._post("tools/call", params, extra)
        result = answer.get("result")
        if not isinstance(result, dict):
            return True, str(answer.get("error", answer))[:200]
        return bool(result.get("isError")), str(result.get("content", [])[:1])[:200]

    async def _post(
        self, method: str, params: dict[str, Any], extra: dict[str, str] | None = None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        request_id = next(self.ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        headers = {**self.headers, **extra} if extra else self.headers
        status, found, payload = await self.conn.request("POST", headers, json.dumps(body).encode())
        if status != 200:
            raise RuntimeError(f"{method}: HTTP {status}: {payload[:200]!r}")
        if found.get("content-type", "").startswith("application/json"):
            return json.loads(payload), found
        for event in payload.decode().replace("\r\n", "\n").split("\n\n"):  # SSE
            lines = event.split("\n")
            data = [line[5:].removeprefix(" ") for line in lines if line.startswith("data:")]
            if data:
                message = json.loads("\n".join(data))
                if message.get("id") == request_id:
                    return message, found
        raise RuntimeError(f"{method}: no answer in the response")
