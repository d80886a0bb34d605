"""The MCP face of one run over streamable HTTP: the stdio face's server (same tools, tiers,
results, list_changed and ask_user) behind the SDK's session manager, which serves both eras on
one endpoint (2025-11-25 sessions keyed by `Mcp-Session-Id`, 2026-07-28 single requests).

Differences from stdio, kept here: a run may have several handshake-era sessions at once (a
client that reconnects, or two clients of one run), so a tools/list_changed goes to each of
them; the session manager builds `initialize` answers itself, so the server's initialization
options are made to advertise `tools.listChanged`."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import anyio

from ....run import Run
from ....tiers import Surface, Tier
from ..elicit import declares_form
from ..server import McpFace, to_call_result
from .direct import Direct
from .framing import PerRequestJson

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import HandlerResult, ServerRequestContext
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger("livetools.serve.http")

ANNOUNCE_WAIT = 5.0  # seconds one session may take to accept a tools/list_changed


class HttpFace(McpFace):
    """One run's MCP server plus the session manager that carries it over HTTP."""

    def __init__(
        self,
        run: Run,
        surface: Surface,
        *,
        session_idle_timeout: float | None,
        max_sessions: int,
        max_body: int,
    ) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        super().__init__(run, surface)
        self.calls = 0
        self._listed: tuple[tuple[tuple[str, int], ...], types.ListToolsResult] | None = None
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        options = self.init_options()
        # The manager calls `create_initialization_options()` without arguments for each
        # handshake session; answer with the stdio face's options (tools.listChanged true).
        self.server.create_initialization_options = lambda *_a, **_k: options  # type: ignore[method-assign]
        # Host/Origin are checked by the app for every route before a request gets here.
        self.manager: StreamableHTTPSessionManager = StreamableHTTPSessionManager(
            app=self.server,
            security_settings=None,
            session_idle_timeout=session_idle_timeout,
            max_sessions=max_sessions,
            max_request_body_size=max_body,
            json_response=cast(bool, PerRequestJson()),  # JSON for `one_body` POSTs (framing)
        )
        self.direct = Direct(self, max_body)

    def asks_nothing(self, name: str) -> bool:
        """Whether a call of `name` cannot send the client a request before its answer. The
        client is asked through the question port (ask_user, or a tool that calls other tools,
        like eval's bridge, when the port is there) or for an approval."""
        tool = self.run.registry.get(name)
        if tool is None:
            return True  # the SDK's error answer
        if tool.resource == "ask" or self.run.approval.needed(tool):
            return False
        # Read tools that call others (vibe's workers) never reach ask_user.
        return tool.tier is Tier.READ or self.run.ports.question is None

    async def _observe(
        self,
        ctx: ServerRequestContext[Any, Any],
        call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]],
    ) -> HandlerResult:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and ctx.method != "initialize":
            self._sessions.add(ctx.session)
        return await super()._observe(ctx, call_next)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Cached per tool set: the SDK's 2026 path lists the tools on every tools/call (to
        check `x-mcp-header` parameters), and building the schemas costs ~40 ms."""
        key = tuple((tool.name, id(tool)) for tool in self.run.tools(self.surface))
        if self._listed is None or self._listed[0] != key:
            self._listed = (key, await super()._list_tools(ctx, params))
        return self._listed[1]

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self.calls += 1
        return await super()._call_tool(ctx, params)

    async def answer_direct(
        self, name: str, arguments: dict[str, Any], version: str, capabilities: Any
    ) -> dict[str, Any]:
        """A 2026-era tools/call for the direct path: what the SDK's dispatch would do around
        `_call_tool` (our middleware's capability check; the runner's surface sieve,
        `resultType` and `serverInfo` stamp), without its per-request objects."""
        import mcp_types as types
        from mcp_types import SERVER_INFO_META_KEY, methods
        from pydantic import ValidationError

        declared: types.ClientCapabilities | None = None
        if isinstance(capabilities, dict) and capabilities.get("elicitation") is not None:
            try:  # a mis-shaped value reads as not supplied, as in the SDK's Connection
                declared = types.ClientCapabilities.model_validate(capabilities)
            except ValidationError:
                declared = None
        if declared is not None:
            await self._client_declared(declared)
        self.calls += 1
        outcome = await self.modern_outcome(name, arguments, can_elicit=declares_form(declared))
        model = (
            outcome if isinstance(outcome, types.InputRequiredResult) else to_call_result(outcome)
        )
        dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = methods.serialize_server_result("tools/call", version, dumped)
        dumped.setdefault("resultType", "complete")
        meta = dumped.get("_meta")
        if meta is None or (isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None):
            dumped["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: self.server.server_info_stamp}
        return dumped

    async def _announce(self) -> None:
        from mcp.server.subscriptions import ToolsListChanged

        self._listed = None
        for session in list(self._sessions):
            try:
                with anyio.fail_after(ANNOUNCE_WAIT):
                    await session.send_tool_list_changed()
            except Exception:  # advisory: a gone session must not break the run
                self._sessions.discard(session)
                log.debug("tools/list_changed not delivered", exc_info=True)
        await self.bus.publish(ToolsListChanged())
