"""`livetools serve`: one run behind an MCP server over stdio, one run per process.

Built on the low-level `mcp.server.Server` (mcp >= 2.3, < 3) over the run's own registry, so the
surface filter, call-time refusal and write wrapping stay the run's job and the server only
translates. It serves both protocol eras on one stdio pipe (the SDK picks the era from the client's
first request): the 2025-11-25 `initialize` handshake and the 2026-07-28 per-request envelope.
When the run's tool set changes, handshake clients get `notifications/tools/list_changed` on the
connection's standalone channel and 2026 clients get it on their `subscriptions/listen` stream.

`mcp` is imported inside functions only: `import livetools` and `livetools tools` must not pay for
it (about two seconds of pydantic model building).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..host import Host
from ..results import Result
from ..run import Run
from ..schemas import export_one
from ..tiers import Surface

if TYPE_CHECKING:
    import anyio.abc
    import mcp_types as types
    from mcp.server.context import HandlerResult, ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.session import ServerSession
    from mcp.server.subscriptions import InMemorySubscriptionBus
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

log = logging.getLogger("livetools.serve")

SERVER_NAME = "livetools"
INSTRUCTIONS = (
    "Tools bound to live resources of one run on this checkout (language servers, parsers, "
    "debuggers, kernels). Paths are relative to the project root; lines are 1-based."
)


class McpFace:
    """Translates between one run and one MCP connection. The run owns everything stateful; this
    object only keeps what is needed to reach the client outside a request (the handshake-era
    session and the 2026 subscription bus)."""

    def __init__(self, run: Run, surface: Surface) -> None:
        from mcp.server.lowlevel import Server
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.run = run
        self.surface = surface
        self.bus: InMemorySubscriptionBus = InMemorySubscriptionBus()
        self.client_can_elicit = False
        # The handshake era has exactly one connection per stdio process; any of its
        # ServerSessions reaches the connection's standalone channel, which outlives the request
        # it was built for, so a change that happens between requests can still be announced.
        self._handshake_session: ServerSession | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        self.server.middleware.append(self._observe)
        run.on_tools_changed(self._tools_changed)

    # -- serving -----------------------------------------------------------------------------

    async def serve(
        self,
        read_stream: ReadStream[SessionMessage | Exception],
        write_stream: WriteStream[SessionMessage],
    ) -> None:
        """Serve one connection until the client closes its end."""
        import anyio
        from mcp.server.lowlevel import NotificationOptions

        # tools_changed=True is what the handshake era advertises as tools.listChanged; the 2026
        # era derives it from the subscriptions/listen handler instead.
        init = self.server.create_initialization_options(NotificationOptions(tools_changed=True))
        self._loop = asyncio.get_running_loop()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                await self.server.run(read_stream, write_stream, init)
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()

    async def _observe(
        self,
        ctx: ServerRequestContext[Any, Any],
        call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]],
    ) -> HandlerResult:
        """Middleware on every inbound message: remember how to reach a handshake-era client and
        what the client can do, as early as the SDK lets us know (at `notifications/initialized`,
        not at the first tool call)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and ctx.method != "initialize":
            self._handshake_session = ctx.session
        result = await call_next(ctx)
        capabilities = ctx.session.client_capabilities
        if capabilities is not None:
            self._client_declared(capabilities)
        return result

    def _client_declared(self, capabilities: types.ClientCapabilities) -> None:
        """Seam for ask_user: it must be offered only to a client that can elicit.

        Handshake era: the capabilities come from `initialize` and are known from
        `notifications/initialized` on. 2026 era: every request's envelope carries them, and
        elicitation happens through an `InputRequiredResult` from the tool call, not a
        server-initiated request. The issue that adds ask_user connects its question resource
        here (`self.run.connect(...)`) the first time `client_can_elicit` turns true; the run then
        calls `_tools_changed`, which announces the new tool in both eras."""
        self.client_can_elicit = capabilities.elicitation is not None

    # -- tools/list and tools/call -------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        import mcp_types as types

        # Same objects as `livetools tools --format mcp`: annotations from the tier, tier in _meta.
        tools = self.run.tools(self.surface)
        return types.ListToolsResult(
            tools=[types.Tool.model_validate(export_one(t, "mcp")) for t in tools]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            result = await self.run.call(params.name, params.arguments or {}, surface=self.surface)
        except Exception as exc:  # run.call reports caller errors as results; this is our bug
            log.exception("tool call %s raised", params.name)
            result = Result.error(f"{params.name} failed: {type(exc).__name__}: {exc}")
        return to_call_result(result)

    # -- tools/list_changed --------------------------------------------------------------------

    def _tools_changed(self) -> None:
        """The run's listener is synchronous and may fire from any thread: hand the sends to the
        serving loop. Changes outside `serve` (while the run opens or closes) have no client."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            same_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            same_loop = False
        if same_loop:
            self._start_announce()
        else:
            loop.call_soon_threadsafe(self._start_announce)

    def _start_announce(self) -> None:
        if self._tasks is not None:
            self._tasks.start_soon(self._announce)

    async def _announce(self) -> None:
        from mcp.server.subscriptions import ToolsListChanged

        session = self._handshake_session
        if session is not None:
            try:
                await session.send_tool_list_changed()
            except Exception:  # advisory: a gone client must not break the run
                log.debug("tools/list_changed not delivered", exc_info=True)
        await self.bus.publish(ToolsListChanged())


def to_call_result(result: Result) -> types.CallToolResult:
    """A run `Result` as MCP content: the text, each PNG as image content, and `data` as
    structured content (the handshake era allows only an object there, so other values are
    wrapped as `{"result": ...}`)."""
    import mcp_types as types

    content: list[types.ContentBlock] = []
    if result.text or not result.images:
        content.append(types.TextContent(text=result.text))
    content.extend(
        types.ImageContent(data=base64.b64encode(png).decode("ascii"), mime_type="image/png")
        for png in result.images
    )
    return types.CallToolResult(
        content=content, structured_content=_structured(result.data), is_error=result.is_error
    )


def _structured(data: Any) -> dict[str, Any] | None:
    if data is None:
        return None
    # A tool may put a Path or a set in `data`; the wire must never fail on it.
    plain = json.loads(json.dumps(data, default=str))
    return plain if isinstance(plain, dict) else {"result": plain}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("livetools")
    except PackageNotFoundError:
        return "0"


# -- entry -----------------------------------------------------------------------------------


def main(root: Path, surface: str | None, options: dict[str, Any]) -> int:
    """Serve one run on `root` over stdio until the client disconnects (or SIGTERM). `surface`
    is a surface name or a comma list of tiers (None: the default); the inherited
    LIVETOOLS_SURFACE ceiling still applies. Returns the process exit code."""
    return asyncio.run(_serve_stdio(Path(root), surface, options))


async def _serve_stdio(root: Path, surface: str | None, options: dict[str, Any]) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from . import harness
    from .cli import UsageError, resolve_surface

    # stdout is the protocol pipe: a plugin that prints while loading or opening must not
    # corrupt it. While serving, stdio_server itself points fd 1 at stderr.
    with contextlib.redirect_stdout(sys.stderr):
        host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
        try:
            chosen = resolve_surface(host, surface)
        except UsageError as exc:
            print(f"livetools serve: {exc}", file=sys.stderr)
            return 2
        run = await host.open_run(root, options=options)
    try:
        face = McpFace(run, chosen)
        async with stdio_server() as (read_stream, write_stream):
            with anyio.CancelScope() as scope:
                # A client that gives up on us sends SIGTERM: stop serving and still close the
                # run, so no language server or kernel outlives this process.
                loop = asyncio.get_running_loop()
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(signal.SIGTERM, scope.cancel)
                try:
                    await face.serve(read_stream, write_stream)
                finally:
                    await _close(run)
            if scope.cancelled_caught:
                # Leaving stdio_server would wait for its stdin reader thread, which only
                # returns on the next line or EOF; the run is closed, so die by the signal now.
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
    finally:
        await _close(run)
    return 0


async def _close(run: Run) -> None:
    """Close the run even inside a cancelled scope (SIGTERM): aclose bounds itself."""
    import anyio

    with anyio.CancelScope(shield=True), contextlib.redirect_stdout(sys.stderr):
        await run.aclose()
