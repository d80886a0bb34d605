"""The run's debug resource: the one session of the conversation, its TTL, the breakpoints that
outlive sessions, and the adapters the family hook offers."""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import Resource, ToolError

from .adapters import BUILTIN, Adapter, AttachInfo, LaunchInfo, Usable, check
from .breakpoints import Want, check_filters, unsupported
from .configured import apply as apply_configured
from .session import Outcome, Session

if TYPE_CHECKING:
    from livetools import Run
    from livetools.sandbox import Sandbox

DEFAULT_TTL = 30 * 60.0
DEFAULT_WAIT = 10.0  # continue / step / pause: then "still running"
DEFAULT_LAUNCH_WAIT = 30.0  # launch / attach: to the first stop


@dataclass(frozen=True)
class LaunchAsk:
    """A launch as asked (kept for `restart`): a program path, or a module by name."""

    program: Path | None
    args: list[str] = field(default_factory=list)
    adapter: str | None = None
    just_my_code: bool = True
    module: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    stop_on_entry: bool = False

    @property
    def target(self) -> Path:
        assert self.program is not None
        return self.program


class DebugSupervisor(Resource):
    """Options (run.options), in seconds: `debug_ttl`, `debug_wait` (continue/step/pause),
    `debug_launch_wait` (launch to the first stop), `debug_request_timeout` (one DAP request)."""

    key = "debug"

    def __init__(self, run: Run) -> None:
        self.run = run
        self.root = run.root
        self.conversation_id = run.conversation_id
        self.ttl = float(run.options.get("debug_ttl", DEFAULT_TTL))
        self.wait = float(run.options.get("debug_wait", DEFAULT_WAIT))
        self.launch_wait = float(run.options.get("debug_launch_wait", DEFAULT_LAUNCH_WAIT))
        self.request_timeout = float(run.options.get("debug_request_timeout", 10.0))
        self.attach_wait = min(self.wait, 3.0)  # an attached server usually just runs on
        self.breakpoints: dict[Path, list[Want]] = {}
        self.filters: list[str] | None = None  # exception filters asked for; None: the default
        self.functions: list[str] = []  # function breakpoints by name, for every session
        self.last_launch: LaunchAsk | None = None
        self.session: Session | None = None
        self._ttl_task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def sandbox(self) -> Sandbox | None:
        """The run's sandbox (None: the host): adapters are looked up, probed and started there."""
        return getattr(self.run, "sandbox", None)

    def describe_sandbox(self) -> str | None:
        sandbox = self.sandbox
        return sandbox.describe() if sandbox is not None else None

    def refuse_tcp(self, what: str, instead: str) -> None:
        """TCP on the host's loopback does not reach a sandbox with a network of its own, and a
        dial-in that never comes would only end at the connect timeout: say so at once."""
        sandbox = self.sandbox
        if sandbox is None or shares_host_network(sandbox):
            return
        raise ToolError(
            f"{what} cannot work inside sandbox {sandbox.describe()}: it talks TCP on 127.0.0.1, "
            "and the sandbox has a network of its own, so the host's loopback does not reach it. "
            "Run with a sandbox that shares the host network (e.g. BwrapSandbox(root, "
            f"network=True)), or {instead}"
        )

    # -- adapters ------------------------------------------------------------------------------

    def adapters(self) -> list[Adapter]:
        """Built-ins first; an adapter from another plugin with the same id replaces one."""
        hook = getattr(self.run.host.plugins.pm.hook, "livetools_debug_adapters", None)
        offered: list[Adapter] = []
        if hook is not None:
            for answer in hook(run=self.run):
                items = answer if isinstance(answer, list | tuple) else [answer]
                offered.extend(a for a in items if isinstance(a, Adapter))
        offered.sort(key=lambda a: 0 if any(a is b for b in BUILTIN) else 1)
        by_id: dict[str, Adapter] = {}
        for adapter in offered:
            by_id.pop(adapter.id, None)
            by_id[adapter.id] = adapter
        found = sorted(by_id.values(), key=lambda a: offered.index(a))
        section = self.run.options.get("debug")
        entries = section.get("adapters") if isinstance(section, dict) else None
        return apply_configured(found, entries) if entries else found

    def adapter(self, name: str) -> Adapter:
        for adapter in self.adapters():
            if adapter.id == name:
                return adapter
        known = ", ".join(a.id for a in self.adapters()) or "none"
        raise ToolError(f'unknown adapter "{name}"; adapters: {known}')

    async def detect_all(self, start: Path) -> list[Usable]:
        adapters = self.adapters()
        sandbox = self.sandbox
        return list(await asyncio.gather(*(check(a, start, self.root, sandbox) for a in adapters)))

    async def choose(self, program: Path, name: str | None) -> Usable:
        if name:
            adapter = self.adapter(name)
        else:
            candidates = [a for a in self.adapters() if a.handles(program)]
            if not candidates:
                raise ToolError(
                    f"no adapter handles {self._rel(program)}: "
                    + "; ".join(f"{a.id}: {a.description}" for a in self.adapters())
                    + ". Pass adapter=<id>, or build the program with debug info first."
                )
            adapter = candidates[0]
        found = await check(adapter, program, self.root, self.sandbox)
        if not found.usable:
            raise ToolError(f"adapter {adapter.id} is not usable here: {found.reason}")
        return found

    # -- the session -----------------------------------------------------------------------------

    def live_session(self) -> Session:
        if self.session is None:
            raise ToolError("no debug session: `launch` a program or `attach` to a port first")
        return self.session

    def _refuse_second(self) -> None:
        if self.session is not None and self.session.live:
            raise ToolError(
                f"a {self.session.adapter.id} session ({self.session.request} "
                f"{self.session.target}) is already running in this conversation; "
                "`terminate` it first (one session per conversation)"
            )

    async def launch(
        self,
        program: Path | LaunchAsk,
        args: list[str] | None = None,
        adapter: str | None = None,
        just_my_code: bool = True,
    ) -> Outcome:
        ask = (
            program
            if isinstance(program, LaunchAsk)
            else LaunchAsk(program, list(args or []), adapter, just_my_code)
        )
        self._refuse_second()
        if ask.module is not None:
            found = await self._module_adapter(ask)
        else:
            found = await self.choose(ask.target, ask.adapter)
        assert found.detection.binary is not None
        if found.adapter.transport == "tcp":
            what = f"adapter {found.adapter.id} ({found.adapter.description})"
            self.refuse_tcp(what, "debug a program whose adapter talks over stdio (debugpy, lldb)")
        cwd = ask.cwd or found.detection.root or self.root
        target = f"-m {ask.module}" if ask.module is not None else self._rel(ask.target)
        session = Session(
            found.adapter,
            self.root,
            request="launch",
            target=target,
            request_timeout=self.request_timeout,
            sandbox=self.sandbox,
        )
        await self._replace(session)
        self.last_launch = ask
        info = LaunchInfo(
            program=ask.program or cwd,
            args=ask.args,
            cwd=cwd,
            root=self.root,
            sandbox=self.sandbox,
            just_my_code=ask.just_my_code,
            module=ask.module,
            env=dict(ask.env),
            stop_on_entry=ask.stop_on_entry,
        )
        self._arm_ttl(session)
        session.filters = self.filters
        breakpoints = dict(self.breakpoints)
        functions = list(self.functions)
        entry = found.adapter.entry_function if ask.stop_on_entry else None
        if entry is not None:
            info = replace(info, stop_on_entry=False)
            session.entry = (entry, functions)
            functions = list(dict.fromkeys([*functions, entry]))
        await session.launch(found.detection.binary, info, breakpoints, functions)
        return await session.wait_first_stop(self.launch_wait)

    async def _module_adapter(self, ask: LaunchAsk) -> Usable:
        """`options.module`: an adapter that runs modules by name (debugpy)."""
        start = ask.cwd or self.root
        if ask.adapter:
            adapter = self.adapter(ask.adapter)
            if not adapter.modules:
                raise ToolError(
                    f"options.module: adapter {adapter.id} cannot run a module by name "
                    "(debugpy can); give program instead"
                )
        else:
            adapter = next((a for a in self.adapters() if a.modules), None)
            if adapter is None:
                raise ToolError("options.module: no adapter here runs a module by name")
        found = await check(adapter, start, self.root, self.sandbox)
        if not found.usable:
            raise ToolError(f"adapter {adapter.id} is not usable here: {found.reason}")
        return found

    async def restart(self) -> Outcome:
        """The last launch again, with the breakpoints and filters as they are now."""
        ask = self.last_launch
        if ask is None:
            if self.session is not None and self.session.request == "attach":
                raise ToolError("restart relaunches a launched program; `attach` again instead")
            raise ToolError("nothing to restart: no program was launched in this conversation")
        if self.session is not None and self.session.live:
            self.session.ended_reason = "restarted"
            await self.session.close("ended")
        return await self.launch(ask)

    async def attach(
        self, port: int | None, adapter: str | None, pid: int | None = None
    ) -> Outcome:
        """In a sandbox (with the host's network) the debug server is taken to run inside it,
        as the conversation's code does: the frames are path-mapped like a launch's. A pid is
        a process of this host: the adapter attaches to it with ptrace."""
        self._refuse_second()
        if pid is not None:
            if self.sandbox is not None:
                raise ToolError(
                    f"pid: attaching to a process by id is not available in sandbox "
                    f"{self.sandbox.describe()} (its processes are not this host's); "
                    "start the program listening and attach to its port"
                )
            adapter = adapter or guess_adapter(pid)
        chosen = await self._attach_adapter(adapter, by_pid=pid is not None)
        a = chosen.adapter
        if pid is None:
            assert port is not None
            what = f"attach to port {port} (adapter {a.id})"
            self.refuse_tcp(what, "`launch` the program instead")
        elif a.transport == "tcp":
            self.refuse_tcp(f"adapter {a.id}", "`launch` the program instead")
        timeout = self.request_timeout
        session = Session(
            a,
            self.root,
            request="attach",
            target=f"port {port}" if pid is None else f"pid {pid}",
            request_timeout=timeout,
            sandbox=self.sandbox,
        )
        session.detach = pid is not None  # not ours to end: it was running before we came
        await self._replace(session)
        self.last_launch = None
        cwd = chosen.detection.root or self.root
        info = AttachInfo(
            host="127.0.0.1",
            port=port or 0,
            cwd=cwd,
            root=self.root,
            sandbox=self.sandbox,
            pid=pid,
        )
        self._arm_ttl(session)
        session.filters = self.filters
        breakpoints = dict(self.breakpoints)
        await session.attach(chosen.detection.binary, info, breakpoints, list(self.functions))
        return await session.wait_first_stop(self.attach_wait)

    async def _attach_adapter(self, name: str | None, by_pid: bool = False) -> Usable:
        if name and by_pid:
            found = await check(self.adapter(name), self.root, self.root, self.sandbox)
            if found.adapter.attach_config is None:
                raise ToolError(f"adapter {name} cannot attach")
            if not found.usable:
                raise ToolError(f"adapter {name} is not usable here: {found.reason}")
            return found
        if name:
            found = await check(self.adapter(name), self.root, self.root, self.sandbox)
            if found.adapter.attach_config is None:
                raise ToolError(f"adapter {name} cannot attach")
            if not found.usable and not found.adapter.attach_direct:
                raise ToolError(f"adapter {name} is not usable here: {found.reason}")
            return found
        for found in await self.detect_all(self.root):
            if found.adapter.attach_config is not None and found.usable:
                return found
        raise ToolError(
            "no adapter that can attach is usable here; pass adapter=<id> (`adapters` lists them)"
        )

    async def _replace(self, session: Session) -> None:
        old, self.session = self.session, session
        if self._ttl_task is not None:
            self._ttl_task.cancel()
            self._ttl_task = None
        if old is not None:
            await old.close()

    def _arm_ttl(self, session: Session) -> None:
        if self._ttl_task is not None:
            self._ttl_task.cancel()

        async def expire() -> None:
            await asyncio.sleep(max(self.ttl - (time.monotonic() - session.started), 0.0))
            if session.live:
                session.ended_reason = f"TTL of {self.ttl / 60:g} minutes reached"
            await session.close("expired")

        self._ttl_task = asyncio.get_running_loop().create_task(expire(), name="debug ttl")

    def set_ttl(self, seconds: float) -> None:
        """Change the TTL; a live session's deadline moves with it (counted from its start)."""
        self.ttl = seconds
        if self.session is not None and self.session.live:
            self._arm_ttl(self.session)

    def ttl_left(self) -> float | None:
        if self.session is None or not self.session.live:
            return None
        return max(self.ttl - (time.monotonic() - self.session.started), 0.0)

    async def terminate(self) -> Session:
        session = self.live_session()
        if session.live:
            session.ended_reason = "terminated on request"
            await session.close("ended")
        if self._ttl_task is not None:
            self._ttl_task.cancel()
            self._ttl_task = None
        return session

    # -- breakpoints ---------------------------------------------------------------------------

    async def set_breakpoints(self, path: Path, wants: list[Want]) -> list[Any] | None:
        """Remember the breakpoints (for this and later sessions); send them now if a session
        lives. Returns the adapter's answers, or None when they wait for the next launch."""
        session = self.session
        live = session is not None and session.live and session.client is not None
        if live:
            assert session is not None
            unsupported(session.adapter.id, session.capabilities, wants)  # before remembering
        if wants:
            self.breakpoints[path] = wants
        else:
            self.breakpoints.pop(path, None)
        if not live:
            return None
        assert session is not None
        return await session.set_breakpoints(path, wants)

    async def set_functions(self, names: list[str]) -> list[Any] | None:
        """Function breakpoints (the whole set), for this and later sessions: sent now if a
        session lives (refused, naming why, where the adapter has none); else at launch."""
        session = self.session
        if session is None or not session.live or session.client is None:
            self.functions = names
            return None
        states = await session.set_functions(names)
        self.functions = names
        return states

    async def set_filters(self, filters: list[str]) -> str:
        """The exception filters, for this and later sessions: sent now, checked against the
        live adapter's declared names; else at the next launch."""
        session = self.session
        if session is None or not session.live or session.client is None:
            self.filters = filters
            return "pending (sent at launch; the adapter's names are checked then)"
        check_filters(session.adapter.id, session.capabilities, filters)
        await session.call("setExceptionBreakpoints", {"filters": filters})
        self.filters = session.filters = filters
        return f"set on {session.adapter.id}"

    # -- Resource --------------------------------------------------------------------------------

    def _rel(self, path: Path) -> str:
        from livetools import relpath

        return relpath(self.root, path)

    async def status(self) -> dict[str, Any]:
        found = await self.detect_all(self.root)
        adapters = {u.adapter.id: {"usable": u.usable, "reason": u.reason} for u in found}
        session = self.session
        info: dict[str, Any] = {"usable": any(u.usable for u in found), "adapters": adapters}
        if self.sandbox is not None:
            info["sandbox"] = self.describe_sandbox()
        if session is not None:
            info["session"] = {
                "adapter": session.adapter.id,
                "state": session.state,
                "target": session.target,
                "pids": session.pids,
            }
        return info

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._ttl_task is not None:
            self._ttl_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ttl_task
        if self.session is not None:
            await self.session.close("ended")


def guess_adapter(pid: int) -> str:
    """The adapter for a running process: a Python interpreter is debugpy's, a Go binary
    delve's (its build id note), anything else lldb's."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except FileNotFoundError:
        raise ToolError(f"pid: no process {pid} on this host") from None
    except OSError as exc:
        raise ToolError(f"pid: cannot read process {pid}: {exc.strerror}") from None
    name = os.path.basename(exe)
    if name.startswith("python"):
        return "debugpy"
    try:
        with open(exe, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(b"\xff Go buildinf:") >= 0:
                return "delve"
    except (OSError, ValueError):
        pass
    return "lldb"


def shares_host_network(sandbox: Sandbox) -> bool:
    """Whether the sandbox says it keeps the host's network (BwrapSandbox(network=True) does;
    `host_network` is the same for other adapters). Unsaid means no: TCP is then refused."""
    for name in ("host_network", "network"):
        value = getattr(sandbox, name, None)
        if isinstance(value, bool):
            return value
    return False
