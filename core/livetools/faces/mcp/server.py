"""`livetools serve`: one run behind an MCP server over stdio, one run per process.

Built on the low-level `mcp.server.Server` (mcp >= 2.3, < 3) over the run's own registry, so the
surface filter, call-time refusal and write wrapping stay the run's job and the server only
translates. It serves both protocol eras on one stdio pipe (the SDK picks the era from the client's
first request): the 2025-11-25 `initialize` handshake and the 2026-07-28 per-request envelope.
When the run's tool set changes, handshake clients get `notifications/tools/list_changed` on the
connection's standalone channel and 2026 clients get it on their `subscriptions/listen` stream.

A client that declares form elicitation gets ask_user: the face then hands the run an
elicitation question port (`elicit`), which asks mid-call in the handshake era and through
`InputRequiredResult` rounds in the 2026 era.

`mcp` is imported inside functions only: `import livetools` and `livetools tools` must not pay for
it (about two seconds of pydantic model building).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...host import Host
from ...results import Result, plain_json, scrub
from ...run import Run
from ...schemas import export_one
from ...tiers import Surface
from ...tools import Tool
from .elicit import (
    TARGET_SPACE,
    ElicitationPort,
    ParkedCalls,
    asking_through_session,
    declares_form,
)

if TYPE_CHECKING:
    import anyio.abc
    import mcp_types as types
    from mcp.server.context import HandlerResult, ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.models import InitializationOptions
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
        # ask_user: the port handed to the run once the client declares elicitation, the lock
        # that makes the hand-over happen once, and the 2026-era calls waiting for answers.
        self._question_port: ElicitationPort | None = None
        self._offering = asyncio.Lock()
        self.parked = ParkedCalls()
        # The handshake era has exactly one connection per stdio process; any of its
        # ServerSessions reaches the connection's standalone channel, which outlives the request
        # it was built for, so a change that happens between requests can still be announced.
        self._handshake_session: ServerSession | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._schemas: dict[str, tuple[Tool, dict[str, Any]]] = {}
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
            get_tool_input_schema=self._input_schema,
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
        async with self.hosting():
            await self.server.run(read_stream, write_stream, self.init_options())

    def init_options(self) -> InitializationOptions:
        """What the handshake era answers `initialize` with (every transport the same)."""
        from mcp.server.lowlevel import NotificationOptions

        # tools_changed=True is what the handshake era advertises as tools.listChanged; the 2026
        # era derives it from the subscriptions/listen handler instead.
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    @contextlib.asynccontextmanager
    async def hosting(self) -> AsyncIterator[None]:
        """The face's lifetime on its serving loop, around however many connections the
        transport brings (stdio: one; HTTP: the run's endpoint): announcements of tool changes
        run in its task group, and questions still parked for a 2026 client fail at the end."""
        import anyio

        self._loop = asyncio.get_running_loop()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()
                # Questions parked for a 2026 client's retry will get no answer now.
                with anyio.CancelScope(shield=True):
                    await self.parked.detach_all("the MCP client disconnected")

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
        # Before the handler, so the message that first shows the capability (handshake:
        # `notifications/initialized`; 2026: any request, its envelope carries them) already
        # sees ask_user, and so does every later one.
        capabilities = ctx.session.client_capabilities
        if capabilities is not None:
            await self._client_declared(capabilities)
        return await call_next(ctx)

    async def _client_declared(self, capabilities: types.ClientCapabilities) -> None:
        """ask_user is offered only to a client that can show an elicitation form.

        The first time the capability shows up, the run gets the elicitation question port
        (target space "mcp"); its resource discovery then connects ask_user and the run calls
        `_tools_changed`, which announces the new tool in both eras. Messages that arrive while
        that happens wait on the lock, so none of them sees the tool set half-changed. A client
        without form elicitation never gets the port: ask_user is not listed and calling it is
        an unknown tool."""
        if self._question_port is not None or not declares_form(capabilities):
            return
        async with self._offering:
            if self._question_port is not None:
                return
            port = ElicitationPort()
            await self.run.update_ports(question=port, target_space=TARGET_SPACE)
            self._question_port = port
            self.client_can_elicit = True

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

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        """The schema a 2026-era tools/call's `Mcp-Param-*` headers are checked against, from the
        run's tools: without it the SDK lists every tool through the whole dispatch path on each
        call (a seventh of the server's CPU under load in bench/http_load.py). Kept per tool
        object: building a pydantic JSON schema is most of the cost, and a changed tool set
        brings new objects."""
        for tool in self.run.tools(self.surface):
            if tool.name == name:
                cached = self._schemas.get(name)
                if cached is None or cached[0] is not tool:
                    cached = self._schemas[name] = (tool, tool.parameters())
                return cached[1]
        return None

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run the call with the question port bound to this request. Handshake era: the port
        sends `elicitation/create` on this request's session. 2026 era (once ask_user is
        offered): the call runs in the background and a question comes back as an
        `InputRequiredResult`; the client's retry carries the answer and `requestState`."""
        import mcp_types as types
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        arguments = params.arguments or {}
        can_elicit = declares_form(ctx.session.client_capabilities)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            outcome = await self.modern_outcome(
                params.name,
                arguments,
                can_elicit=can_elicit,
                request_state=params.request_state,
                input_responses=params.input_responses,
            )
            if isinstance(outcome, types.InputRequiredResult):
                return outcome
            return to_call_result(outcome)
        with asking_through_session(ctx.session, ctx.request_id, can_elicit=can_elicit):
            return to_call_result(await self._run_call(params.name, arguments))

    async def modern_outcome(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        can_elicit: bool,
        request_state: str | None = None,
        input_responses: dict[str, Any] | None = None,
    ) -> Result | types.InputRequiredResult:
        """A 2026-era call: a retry carrying `requestState` resumes its parked call; once
        ask_user is offered, the call runs parked so a question can come back as input
        required; else it simply runs."""
        if request_state is not None:
            return await self.parked.resume(name, arguments, request_state, input_responses)
        if self._question_port is not None:
            return await self.parked.call(
                name, arguments, lambda: self._run_call(name, arguments), can_elicit=can_elicit
            )
        return await self._run_call(name, arguments)

    async def _run_call(self, name: str, arguments: dict[str, Any]) -> Result:
        try:
            return await self.run.call(name, arguments, surface=self.surface)
        except Exception as exc:  # run.call reports caller errors as results; our bug
            log.exception("tool call %s raised", name)
            return Result.error(f"{name} failed: {type(exc).__name__}: {exc}")

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


DATA_META_KEY = "livetools/data"


def to_call_result(result: Result) -> types.CallToolResult:
    """A run `Result` as MCP content: the text, each PNG as image content, and `data` in
    `_meta["livetools/data"]` for programs.

    Not as structured content: agent frameworks (pydantic-ai, openai-agents) hand
    `structuredContent` to the model *instead of* the text when it is there, and `data` is
    metadata, not what the text says (eval's 42 would reach the model as `{"status": "ok"}`).
    Leaving it off means every framework's model reads the text."""
    import mcp_types as types

    content: list[types.ContentBlock] = []
    if result.text or not result.images:
        content.append(types.TextContent(text=scrub(result.text)))
    content.extend(
        types.ImageContent(data=base64.b64encode(png).decode("ascii"), mime_type="image/png")
        for png in result.images
    )
    meta = None if result.data is None else {DATA_META_KEY: plain_json(result.data)}
    return types.CallToolResult(content=content, is_error=result.is_error, _meta=meta)


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

    from .. import harness
    from ..surface import UsageError, resolve_surface
    from .stdio import stdio_transport

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
        async with stdio_transport() as (read_stream, write_stream):
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
                # The stdin reader thread only returns on the next line or EOF; the run is
                # closed, so die by the signal now.
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
