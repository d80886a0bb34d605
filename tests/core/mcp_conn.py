"""One MCP client connection for the face tests, the same calls in both protocol eras (stdio in
test_mcp_face, streamable HTTP in http_serving): list and call tools, wait for list_changed."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp import Client, ClientSession
from mcp.client.subscriptions import Subscription, ToolsListChanged

WAIT = 60  # seconds; every wait on the server is bounded by this (generous: a loaded machine)
# A raw 2025-11-25 handshake request, for the tests that speak the wire themselves.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Conn:
    """One connected client, same calls in both eras; `tools_changed()` waits for the era's
    tools/list_changed delivery."""

    def __init__(self, era: str) -> None:
        self.era = era
        self.session: ClientSession | None = None
        self.client: Client | None = None
        self.subscription: Subscription | None = None
        self._changed = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._changed.set()

    async def list_tools(self) -> dict[str, types.Tool]:
        with anyio.fail_after(WAIT):
            if self.client is not None:
                result = await self.client.list_tools(cache_mode="bypass")
            else:
                assert self.session is not None
                result = await self.session.list_tools()
        return {tool.name: tool for tool in result.tools}

    async def call(self, name: str, args: dict[str, Any] | None = None) -> types.CallToolResult:
        with anyio.fail_after(WAIT):
            target = self.client or self.session
            assert target is not None
            return await target.call_tool(name, args or {})

    async def tools_changed(self) -> None:
        with anyio.fail_after(WAIT):
            if self.subscription is not None:
                async for event in self.subscription:
                    if isinstance(event, ToolsListChanged):
                        return
            else:
                await self._changed.wait()


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))
