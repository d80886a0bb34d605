"""The run: one conversation's session on one checkout. It owns the resources plugins connected,
decides which tools a surface sees, and is the only path by which a tool is called."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from .approvals import DEADLINE, ApprovalGate, Refused
from .files.owner import sweep as sweep_leftovers
from .files.paths import resolve_path, shown
from .files.staging import EditLedger
from .ports import Ports
from .resources import Resource
from .results import Result, ToolError, cap_value
from .sandbox import Sandbox, as_sandbox
from .sandbox.options import sandbox_from_option
from .tiers import Surface
from .tools import CallContext, DuplicateToolError, Registry, Tool

if TYPE_CHECKING:
    from .host import Host

T = TypeVar("T")

# Names of the serialized tools whose call is on the current task's stack: a tool that re-enters
# itself (a cell calling eval) would wait on its own lock forever.
_HELD: ContextVar[frozenset[str]] = ContextVar("livetools_held", default=frozenset())

RESOURCE_CLOSE_TIMEOUT = 15.0
OBSERVER_TIMEOUT = 30.0


async def maybe_await(value: T | Awaitable[T]) -> T:
    """Hooks and ports may answer with a value or an awaitable (datasette's convention)."""
    if inspect.isawaitable(value):
        return await value
    return value


def usage_error(text: str) -> Result:
    """An error in how the tool was called (unknown tool, not on this surface, bad arguments):
    the CLI exits 2 for these, 1 for errors the tool itself reports."""
    return Result(text=text, data={"error": "usage"}, is_error=True)


def is_usage_error(result: Result) -> bool:
    return result.is_error and isinstance(result.data, dict) and result.data.get("error") == "usage"


def format_validation_error(tool: Tool, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = err.get("input")
        shown = "" if err["type"] == "missing" else f" (got {got!r:.80})"
        problems.append(f"{where}: {err['msg']}{shown}")
    fields = ", ".join(tool.args.model_fields) or "no arguments"
    return f"invalid arguments for {tool.name}: " + "; ".join(problems) + f". Expected: {fields}."


_UNSET = object()


class Run:
    def __init__(
        self,
        host: Host,
        root: Path,
        conversation_id: str,
        ports: Ports,
        options: dict[str, Any],
    ) -> None:
        self.host = host
        self.root = root
        self.conversation_id = conversation_id
        self.ports = ports
        self.options = options
        self.resources: dict[str, Resource] = {}
        self._offered: dict[str, set[str]] = {}  # plugin -> keys it offered at last discovery
        self.problems: list[str] = []
        # plugin -> why its resource failed to connect: its tools stay listed and say so
        self.unavailable: dict[str, str] = {}
        self.registry = Registry()
        self.staged = EditLedger()  # edits staged for `resolve`, by any family
        self.option_sources: dict[str, str] = {}  # dotted option -> the layer it came from
        self._locks: dict[str, asyncio.Lock] = {}
        self._listeners: list[Callable[[], object]] = []
        self._inflight: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.approval = ApprovalGate(self)
        self._sandbox: tuple[Any, Sandbox | None] = (None, None)
        self._own_sandbox: Sandbox | object | None = _UNSET  # built from the option, ours to close

    @property
    def sandbox(self) -> Sandbox | None:
        """Where the run's processes start (None: on the host): `ports.sandbox`, else the run
        option `sandbox`; every family passes it to `livetools.sandbox.spawn`."""
        port = self.ports.sandbox
        if port is None:
            if self._own_sandbox is _UNSET:
                self._own_sandbox = sandbox_from_option(self.options.get("sandbox"), self.root)
            return self._own_sandbox  # type: ignore[return-value]
        if self._sandbox[0] is not port:
            self._sandbox = (port, as_sandbox(port, self.root))
        return self._sandbox[1]

    # -- opening -----------------------------------------------------------------------------

    async def _open(self) -> None:
        _ = self.sandbox  # a port of the wrong shape is the harness's TypeError, said at open
        # Temp files a killed writer left under the root go now, beside discovery (bounded).
        sweeping = asyncio.ensure_future(asyncio.to_thread(sweep_leftovers, self.root))
        await self._discover()
        for impl in self.host.plugins.impls("livetools_register_tools"):
            plugin = impl.plugin_name

            def register(tool: Tool, _plugin: str = plugin) -> None:
                self.registry.register(tool, _plugin)

            kwargs = {"register": register, "run": self}
            try:
                await maybe_await(impl.function(**{k: kwargs[k] for k in impl.argnames}))
            except DuplicateToolError as exc:
                self.problems.append(str(exc))
            except Exception as exc:
                self.problems.append(
                    f"plugin {plugin}: tool registration failed: {type(exc).__name__}: {exc}"
                )
        with suppress(OSError):  # an unreadable root is said by the tools that read it
            await sweeping
        self._check_call_timeouts()

    def _check_call_timeouts(self) -> None:
        """`call_timeouts.TOOL` names a tool of this run: a misspelled one would leave the real
        tool on its default bound without a word (the names are known only once registered)."""
        names = [t.name for t in self.registry.all()]
        wrong = [n for n in self.options.get("call_timeouts") or {} if n not in names]
        if wrong:
            from .options import OptionError, nearest

            raise OptionError(
                "; ".join(f"option call_timeouts.{n}: {nearest(n, names, 'tool')}" for n in wrong)
            )

    async def _discover(self) -> bool:
        """Ask every plugin which resources it offers now; connect the new ones and close the
        ones a plugin no longer offers. True when the set changed."""
        changed = False
        for impl in self.host.plugins.impls("livetools_resources"):
            plugin = impl.plugin_name
            try:
                offered = _as_list(await maybe_await(impl.function(run=self)))
            except Exception as exc:
                reason = cap_value(str(exc) or type(exc).__name__, 300)
                if self.unavailable.get(plugin) != reason:
                    self.problems.append(f"plugin {plugin}: resource discovery failed: {reason}")
                    changed |= plugin not in self.unavailable
                    self.unavailable[plugin] = reason
                continue
            changed |= self.unavailable.pop(plugin, None) is not None
            keys = {r.key for r in offered}
            for key in self._offered.get(plugin, set()) - keys:
                resource = self.resources.pop(key, None)
                if resource is not None:
                    await _close_bounded(resource, self.problems)
                    changed = True
            for resource in offered:
                if resource.key in self.resources and resource.key in self._offered.get(plugin, ()):
                    continue  # still offered: keep the live one
                changed |= self._attach(resource, plugin)
            self._offered[plugin] = keys
        return changed

    async def update_ports(self, **changes: Any) -> None:
        """Change the run's ports mid-run (e.g. an MCP client that turns out to be able to
        answer questions) and re-run resource discovery, so tools appear or go accordingly."""
        for name, value in changes.items():
            if not hasattr(self.ports, name):
                raise AttributeError(f"Ports has no {name!r}")
            setattr(self.ports, name, value)
        if await self._discover():
            self._changed()

    def _attach(self, resource: Resource, plugin: str) -> bool:
        if not resource.key:
            self.problems.append(f"plugin {plugin}: resource {resource!r} has no key")
        elif resource.key in self.resources:
            self.problems.append(f"plugin {plugin}: resource {resource.key!r} is already connected")
        else:
            self.resources[resource.key] = resource
            return True
        return False

    # -- the tool set ------------------------------------------------------------------------

    def connect(self, resource: Resource) -> None:
        """Connect a resource mid-run (e.g. vibe mode switched on); listeners hear the change."""
        self._attach(resource, "run")
        self._changed()

    async def disconnect(self, key: str) -> None:
        resource = self.resources.pop(key, None)
        if resource is not None:
            await _close_bounded(resource, self.problems)
            self._changed()

    def on_tools_changed(self, listener: Callable[[], object]) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def resource(self, key: str) -> Any:
        return self.resources.get(key)

    def _live(self, tool: Tool) -> bool:
        """Callable now, or listed to say why not (its family failed to connect)."""
        return (
            tool.resource is None
            or tool.resource in self.resources
            or tool.plugin in self.unavailable
        )

    def tools(self, surface: str | Surface = "agent") -> list[Tool]:
        s = self.host.surface(surface)
        return [t for t in self.registry.all() if self._live(t) and s.admits(t.name, t.tier)]

    def schemas(
        self, surface: str | Surface = "agent", format: str = "mcp"
    ) -> list[dict[str, Any]]:
        from .schemas import export

        return export(self.tools(surface), format)

    # -- calling -----------------------------------------------------------------------------

    async def call(
        self, name: str, args: dict[str, Any] | None = None, *, surface: str | Surface = "agent"
    ) -> Result:
        """Call a tool as `surface` sees it. Never raises for anything the caller did wrong:
        unknown tools, bad arguments, refusals, timeouts and handler failures are all results."""
        if self._closed:
            return Result.error("this run is closed; open a new run")
        try:
            s = self.host.surface(surface)
        except KeyError as exc:
            return usage_error(str(exc.args[0]))
        except TypeError:
            return usage_error(
                f"unknown surface {shown(surface, 80)}; surfaces: {', '.join(self.host.surfaces)}"
            )
        tool = self.registry.get(name) if isinstance(name, str) else None
        if tool is None or not self._live(tool) or not s.admits(tool.name, tool.tier):
            names = ", ".join(t.name for t in self.tools(s)) or "none"
            shown_name = name[:80] if isinstance(name, str) else shown(name, 80)
            return usage_error(
                f'unknown tool "{shown_name}" on surface "{s.name}"; tools here: {names}'
            )
        if tool.resource is not None and tool.resource not in self.resources:
            why = self.unavailable.get(tool.plugin, "its resource is not connected")
            return Result.error(
                f"{tool.plugin} is not available in this run: {why}; other tools still work "
                "(livetools status shows every family's state)",
                data={"error": "unavailable", "family": tool.plugin, "reason": why},
            )
        args = args if args is not None else {}
        fields = ", ".join(tool.args.model_fields) or "none"
        if not isinstance(args, dict):
            return usage_error(
                f"arguments for {tool.name} must be an object of named fields ({fields}); "
                f"got {_json_kind(args)} {shown(args, 80)}"
            )
        problem = _unencodable(args)
        if problem:
            return usage_error(f"invalid arguments for {tool.name}: {problem}")
        unknown = _unknown_arguments(tool, args)
        if unknown:
            return usage_error(
                f"unknown argument {', '.join(shown(k, 80) for k in unknown)} for {tool.name}; "
                f"arguments: {fields}"
            )
        try:
            model = tool.args.model_validate(args)
        except ValidationError as exc:
            return usage_error(format_validation_error(tool, exc))
        ctx = CallContext(self, tool, s, self.resources.get(tool.resource or ""))
        # After the surface and argument checks: a hidden tool or a bad call is never asked about.
        refusal = await self.approval.check(ctx, args, model)
        if refusal is not None:
            return refusal
        return await self._invoke(tool, ctx, model)

    async def _invoke(self, tool: Tool, ctx: CallContext, model: Any) -> Result:
        held = _HELD.get()
        if not tool.parallel_safe and tool.name in held:
            return Result.error(f"{tool.name} cannot be called from inside its own call")
        timeout = float(self.options.get("call_timeouts", {}).get(tool.name, tool.timeout))
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        # The lock and the held-set by hand, not through an AsyncExitStack: this is on every
        # call's path (a debugger step is a few milliseconds end to end).
        lock = None if tool.parallel_safe else self._locks.setdefault(tool.name, asyncio.Lock())
        try:
            if lock is None:
                async with asyncio.timeout(timeout) as deadline:
                    ctx.extra[DEADLINE] = deadline
                    out = await tool.handler(ctx, model)
            else:
                async with lock:
                    token = _HELD.set(held | {tool.name})
                    try:
                        async with asyncio.timeout(timeout) as deadline:
                            ctx.extra[DEADLINE] = deadline
                            out = await tool.handler(ctx, model)
                    finally:
                        _HELD.reset(token)
        except TimeoutError:
            return Result.error(
                f"{tool.name} timed out after {timeout:g}s and was stopped; "
                "try a smaller request or a narrower path"
            )
        except Refused as exc:  # declined at the tool's own approval point: nothing written
            return exc.result
        except ToolError as exc:
            return Result.error(str(exc))
        except asyncio.CancelledError:
            if self._closed:
                return Result.error("the run was closed while this call was in progress")
            raise
        except Exception as exc:  # a bug of the tool: worded for a report, root not shown
            detail = str(exc).replace(str(self.root.resolve()), ".").replace(str(self.root), ".")
            detail = cap_value(detail, 300)
            return Result.error(f"{tool.name} failed: {type(exc).__name__}: {detail}")
        finally:
            if task is not None:
                self._inflight.discard(task)
        return Result(text=out) if isinstance(out, str) else out

    # -- write wrapping ----------------------------------------------------------------------

    @asynccontextmanager
    async def writing(self, paths: Iterable[str | Path]) -> AsyncIterator[list[str]]:
        """Wrap a file write of the run: observers see the paths before and after, and append
        notes to the yielded list on exit (read it after the block)."""
        resolved = [resolve_path(self.root, p) for p in paths]
        notes: list[str] = []
        async with AsyncExitStack() as stack:
            for impl in self.host.plugins.impls("livetools_observe_write"):
                try:
                    cm = impl.function(run=self, paths=resolved, notes=notes)
                    if cm is not None:
                        await stack.enter_async_context(_guarded(cm, impl.plugin_name, notes))
                except Exception as exc:
                    notes.append(f"{impl.plugin_name}: write observer failed: {exc}")
            yield notes

    def wrap_write(
        self, paths: Callable[..., Iterable[str | Path]]
    ) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[tuple[T, list[str]]]]]:
        """Decorator form of `writing` for a harness's write function; `paths(*args, **kwargs)`
        names the files it writes. The wrapped function returns `(value, notes)`."""

        def decorate(
            fn: Callable[..., Awaitable[T]],
        ) -> Callable[..., Awaitable[tuple[T, list[str]]]]:
            async def wrapper(*args: Any, **kwargs: Any) -> tuple[T, list[str]]:
                async with self.writing(paths(*args, **kwargs)) as notes:
                    value = await fn(*args, **kwargs)
                return value, notes

            return wrapper

        return decorate

    # -- closing -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every resource, bounded, even when the closing task itself is cancelled."""
        if self._closed:
            return
        self._closed = True
        self.staged.staged.clear()  # each holds its files' old and new bytes
        current = asyncio.current_task()
        for task in list(self._inflight):
            if task is not current:
                task.cancel()
        closing = asyncio.ensure_future(self._close_resources())
        cancelled = False
        while not closing.done():
            try:
                await asyncio.shield(closing)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError

    async def _close_resources(self) -> None:
        for key in reversed(list(self.resources)):
            await _close_bounded(self.resources.pop(key), self.problems)
        close = getattr(self._own_sandbox, "close", None)
        if close is not None:
            close()

    async def __aenter__(self) -> Run:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _close_bounded(resource: Resource, problems: list[str]) -> None:
    try:
        async with asyncio.timeout(RESOURCE_CLOSE_TIMEOUT):
            await resource.aclose()
    except Exception as exc:
        problems.append(f"closing {resource.key} failed: {type(exc).__name__}: {exc}")


def _unknown_arguments(tool: Tool, args: dict[Any, Any]) -> list[str]:
    """A misspelled argument would otherwise be dropped silently and the call run with a default."""
    known = _argument_names(tool.args)
    if known is None:
        return []
    return sorted(str(k) for k in args if k not in known)


def _inner(where: str, step: str) -> str:
    """The location one level down, kept short however deep the value is nested."""
    return where + step if len(where) < 120 else where if where.endswith("…") else where + "…"


def _json_kind(value: object) -> str:
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool | int | float):
        return "a number" if not isinstance(value, bool) else "a boolean"
    return f"a {type(value).__name__}"


def _unencodable(args: dict[Any, Any], limit: int = 100_000) -> str | None:
    """Where the arguments hold a string UTF-8 cannot encode (a lone surrogate, legal in JSON
    text), named by its field; None when there is none. Iterative and bounded: the arguments
    may be nested far past the recursion limit, and pydantic words the rest."""
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(args.items())]
    stack += [(f"argument name {shown(k, 40)}", k) for k in args if isinstance(k, str)]
    seen = 0
    while stack and seen < limit:
        where, value = stack.pop()
        seen += 1
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"{where}: holds a lone surrogate ({value[exc.start]!r}) at character "
                    f"{exc.start + 1}; pass valid Unicode text"
                )
        elif isinstance(value, dict):
            for k, v in value.items():
                stack.append((_inner(where, f".{str(k)[:40]}"), v))
                if isinstance(k, str):
                    stack.append((f"{where}: key {shown(k, 40)}", k))
        elif isinstance(value, list | tuple):
            stack.extend((_inner(where, f"[{i}]"), v) for i, v in enumerate(value))
    return None


@functools.cache
def _argument_names(model: type[BaseModel]) -> frozenset[str] | None:
    """The names and aliases a model accepts (None: any), worked out once per model class: a
    call should not rebuild them (a debugger step is a few milliseconds end to end)."""
    if model.model_config.get("extra") == "allow":
        return None
    fields = model.model_fields
    return frozenset(fields) | {f.alias for f in fields.values() if f.alias}


def _as_list(offered: Resource | list[Resource] | None) -> list[Resource]:
    if offered is None:
        return []
    if isinstance(offered, Resource):
        return [offered]
    return list(offered)


@asynccontextmanager
async def _guarded(
    cm: AbstractAsyncContextManager[Any], plugin: str, notes: list[str]
) -> AsyncIterator[None]:
    """An observer's failure or slowness becomes a note; it never fails or hangs the write."""
    try:
        async with asyncio.timeout(OBSERVER_TIMEOUT):
            await cm.__aenter__()
    except Exception as exc:
        notes.append(f"{plugin}: write observer failed before the write: {exc}")
        yield
        return
    try:
        yield
    except BaseException as exc:
        await cm.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    try:
        async with asyncio.timeout(OBSERVER_TIMEOUT):
            await cm.__aexit__(None, None, None)
    except Exception as exc:
        notes.append(f"{plugin}: write observer failed after the write: {exc}")
