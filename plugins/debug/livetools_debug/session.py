"""One debug session: an adapter process (or a direct connection), its DAP client, and the state
its events drive (running / stopped with the reason / exited with the code).

The request order is the one that works with debugpy, lldb-vscode and dlv alike: `initialize`,
then `launch` sent without awaiting it, wait for `initialized`, `setBreakpoints` per file,
`setExceptionBreakpoints` (only filters the adapter declared), `configurationDone`, and only
then the launch response (debugpy holds it until configurationDone; the others answer first).

In the run's sandbox the adapter runs inside and starts the debuggee there, so it speaks the
inside's paths: every DAP frame is rewritten at the wire (`program`, `cwd`, `source.path` of
breakpoints and stack frames, ...), and the session only ever sees host paths. debugpy's own
`pathMappings` is for an adapter on the host and a debuggee elsewhere; here both are inside,
so there is nothing for it to map.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livetools import ToolError
from livetools.procs import ProcessStartError
from livetools.sandbox import Process, Sandbox, spawn, wire_maps
from livetools.wire import ByteWriter, FramedReader, FramedWriter, Transform

from . import rust
from .adapters import Adapter, AttachInfo, LaunchInfo
from .breakpoints import Want, unsupported
from .dap import DapClient, DapClosed, DapError, wait_response
from .listening import listening
from .output import OutputRing, trim_traceback
from .paths import inside

LIVE = ("starting", "running", "stopped")
HOST = "127.0.0.1"
REQUEST_TIMEOUT = 10.0
CONNECT_TIMEOUT = 15.0
DISCONNECT_TIMEOUT = 2.0
ATTACH_CONNECT = 2.0  # on an idle machine; scaled by load (attach_connect_timeout)
OTHER_THREADS_CHECKED = 50  # threads whose top frame a breakpoint stop compares
STRAY_MARKER = re.compile(r"livetools-sync-\d+-\d+-\d+\n")
OUTPUT_SYNC_TIMEOUT = 10.0  # the relay of 1 MB behind a stop took 1.4 s on a loaded machine
MAX_FETCH_CHILDREN = 1000  # asked of the adapter; we show 50 (debugpy and dlv ignore `count`)


@dataclass
class Frame:
    id: int
    name: str
    path: str | None
    line: int | None


@dataclass
class Stop:
    reason: str
    thread_id: int | None
    description: str | None = None
    text: str | None = None
    frame: Frame | None = None
    exception: str | None = None
    project_frame: Frame | None = None  # first frame inside the root, when the top is not


@dataclass
class Breakpoint:
    line: int  # as asked
    label: str = ""  # its condition / hit count / log message, as shown
    verified: bool = False
    resolved: int | None = None
    message: str | None = None
    id: int | None = None
    pending: bool = False  # not yet seen by any adapter (kept for the next launch)
    function: str | None = None  # a function breakpoint: its name (`line` is 0)
    path: str | None = None  # where a function breakpoint resolved

    def update(self, body: dict[str, Any]) -> None:
        self.verified = bool(body.get("verified", False))
        line = body.get("line")
        self.resolved = line if isinstance(line, int) else self.resolved
        self.message = body.get("message") or None
        self.id = body.get("id", self.id)
        source = body.get("source")
        if isinstance(source, dict) and isinstance(source.get("path"), str):
            self.path = source["path"]


@dataclass
class Outcome:
    """How a resuming call ended: "stopped", "exited", "ended" (adapter gone) or "running"."""

    kind: str
    output: str = ""
    note: str | None = None  # why the stop location could not be read
    resumed: list[int] = field(default_factory=list)  # stopped threads resumed uninspected


@dataclass
class RefInfo:
    total: int | None = None  # indexed + named children, when the adapter said
    size: int | None = None  # a Rust collection's `size=N`: lldb reads items past it


class Session:
    def __init__(
        self,
        adapter: Adapter,
        root: Path,
        *,
        request: str,
        target: str,
        request_timeout: float = REQUEST_TIMEOUT,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.adapter = adapter
        self.sandbox = sandbox
        self._inbound, self._outbound = dap_maps(sandbox)
        self.request_timeout = request_timeout
        self.root = root
        self.request = request  # "launch" or "attach"
        self.target = target  # what was launched / attached, for status
        self.state = "starting"
        self.ended_reason: str | None = None
        self.started = time.monotonic()
        self.child: Process | None = None
        self.client: DapClient | None = None
        self.capabilities: dict[str, Any] = {}
        self.stop: Stop | None = None  # the stop results report (the first since a resume)
        self.stopped: dict[int, Stop] = {}  # every thread stopped with a reason, by thread id
        self.signal: str | None = None  # the last signal a stop named (SIGSEGV)
        self.all_stopped = False  # the adapter said allThreadsStopped: the others are suspended
        self.inspected: set[int] = set()  # stopped threads a result reported or a call named
        # Where each thread stood at the stops before the last resume: dlv leaves a goroutine
        # that was resumed from a breakpoint on its line, and that is not a new hit.
        self._resumed_from: dict[int, tuple[str | None, int | None]] = {}
        self.exit_code: int | None = None
        self.debuggee_pid: int | None = None  # a host pid (None in a sandbox: its pids differ)
        self.output = OutputRing()
        self.messages: deque[str] = deque(maxlen=20)  # adapter console lines
        self.frames: dict[int, Frame] = {}
        self.refs: dict[int, RefInfo] = {}
        self.breakpoints: dict[Path, list[Breakpoint]] = {}
        self.functions: list[Breakpoint] = []  # function breakpoints, as the adapter answered
        # Exception filters asked for (None: the adapter's default), and a note on any it lacks.
        self.filters: list[str] | None = None
        self.filter_note: str | None = None
        self._epoch = 0
        self._waiters: list[asyncio.Future[None]] = []  # wait_change callers, woken by _notify
        self._initialized = asyncio.Event()
        self._pausing = False
        self.unseen = False  # a stop no result has reported yet (it came after "still running")
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing: asyncio.Task[None] | None = None
        self._drain: asyncio.Task[None] | None = None
        self._exit_re = re.compile(adapter.exit_pattern) if adapter.exit_pattern else None
        self._ignore_re = re.compile(adapter.stdout_ignore) if adapter.stdout_ignore else None
        self._internal_re = re.compile(adapter.internal_frames) if adapter.internal_frames else None
        self._marker: str | None = None  # an output sync in flight (adapter.output_sync)
        self._held: dict[str, str] = {}  # per stream: text since the sync began, until its marker
        self._partial: dict[str, str] = {}  # per stream: its last line, until its newline
        self._synced = asyncio.Event()
        self._syncs = 0
        self._tuned = adapter.first_stop is None
        self._cut_re = re.compile(adapter.step_interrupted) if adapter.step_interrupted else None
        self.step_cut = False  # the adapter said the last step was cut short (step_interrupted)
        self.refused: str | None = None  # a command the adapter refused with a stop (dlv)
        self._temporary: tuple[Path, list[Want]] | None = None  # run_to: the file's own set
        self.detach = False  # attached by pid: at the end the process is left running
        # stop_on_entry by the adapter's entry_function: (it, the function breakpoints asked)
        self.entry: tuple[str, list[str]] | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def pids(self) -> list[int]:
        """Session ids of the processes this session started (the adapter's whole session)."""
        return [self.child.pid] if self.child is not None else []

    def _notify(self) -> None:
        self._epoch += 1
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_change(self, epoch: int, within: float) -> None:
        """Until a stop/exit/end after `epoch`, or `within` seconds. A bare future and a timer:
        `wait_for(Event.wait())` made a task and two extra loop passes per step."""
        if self._epoch != epoch or within <= 0:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(within, _settle, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- events ----------------------------------------------------------------------------------

    def _on_event(self, event: str, body: dict[str, Any]) -> None:
        if event == "initialized":
            self._initialized.set()
        elif event == "stopped":
            reason = str(body.get("reason") or "unknown")
            description = body.get("description")
            if reason == "exception" and description == "invalid command":
                # dlv's answer to a command it refused (a step while an interrupted step is
                # pending): a stop event, though nothing ran. resume() turns it into an error.
                self.refused = str(body.get("text") or description)
                self.state = "stopped"
                self._notify()
                return
            if self._pausing and (
                (reason == "exception" and "SIGSTOP" in str(description or "")) or reason == "step"
            ):
                # lldb reports a pause as signal SIGSTOP, and under load at times as a "step"
                # (the interrupt lands as a trace stop): either way our pause stopped it.
                reason = "pause"
            self._pausing = False
            thread = body.get("threadId")
            stop = Stop(
                reason=reason,
                thread_id=thread if isinstance(thread, int) else None,
                description=description if isinstance(description, str) else None,
                text=body.get("text") if isinstance(body.get("text"), str) else None,
            )
            named = re.search(r"\bSIG[A-Z0-9]+", f"{description} {body.get('text')}")
            if named:
                self.signal = named.group(0)  # an exit code that equals it is that signal
            if body.get("allThreadsStopped"):
                self.all_stopped = True
            # One slot per thread: a second thread's stop while stopped is kept, not overwritten
            # (three pool threads at one breakpoint are three stops). Only a stop that becomes
            # the current one is unseen: another thread's stop, arriving while a result is being
            # written, is in that result's "also stopped" or waits as uninspected for `resume`.
            current = self.stop
            if self.state != "stopped" or current is None or current.thread_id == stop.thread_id:
                self.stop = stop
                self.unseen = True
            if stop.thread_id is not None:
                self.stopped[stop.thread_id] = stop
            self.state = "stopped"
            self._notify()
        elif event == "continued":
            thread = body.get("threadId")
            if body.get("allThreadsContinued", True) is False and isinstance(thread, int):
                self._continued_one(thread)
            elif self.state == "stopped":
                self._continued_all()
        elif event == "exited":
            code = body.get("exitCode")
            if isinstance(code, int):
                self.exit_code = code
        elif event == "terminated":
            if self.live:
                self._end("exited", None)
        elif event == "output":
            self._on_output(body)
        elif event == "process":
            pid = body.get("systemProcessId")
            if isinstance(pid, int) and self.sandbox is None:
                self.debuggee_pid = pid
        elif event == "breakpoint":
            self._on_breakpoint(body.get("breakpoint") or {})

    def _on_output(self, body: dict[str, Any]) -> None:
        category = body.get("category") or "console"
        text = body.get("output")
        if category == "telemetry" or not isinstance(text, str):
            return
        if category in ("stdout", "stderr"):
            if self._ignore_re and self._ignore_re.search(text):  # adapter noise, not the program's
                kept = text.splitlines(keepends=True)
                text = "".join(t for t in kept if not self._ignore_re.search(t))
            if self._marker is None and "livetools-sync-" in text:
                text = STRAY_MARKER.sub("", text)  # a marker that came after its wait gave up
            if self._marker is not None and category in self._held:
                self._hold(category, text)
            else:
                self._stream_write(category, text)
            return
        for line in text.replace("\r\n", "\n").splitlines():
            if self._exit_re and (match := self._exit_re.search(line)):
                self.exit_code = int(match.group(1))
            if self._cut_re and self._cut_re.search(line):
                self.step_cut = True
            if line.strip():
                self.messages.append(line.strip()[:400])

    def _stream_write(self, category: str, text: str) -> None:
        """Whole lines into the ring, a stream's unfinished line kept back: stdout and stderr
        arrive as chunks ('hello from app', then stderr's 'to stderr\n', then stdout's '\n'),
        and writing them as they came spliced two lines into 'hello from appto stderr'."""
        text = self._partial.pop(category, "") + text
        cut = text.rfind("\n") + 1
        if cut:
            self.output.write(text[:cut])
        if cut < len(text):
            self._partial[category] = text[cut:]

    def flush_partial(self) -> None:
        """Unfinished lines into the ring (a prompt without a newline): at every result."""
        for category in list(self._partial):
            self.output.write(self._partial.pop(category))

    def shown(self, text: str) -> str:
        """Output as shown to the model: tracebacks without the debugger's own frames."""
        text = trim_traceback(text, self._internal_re, str(self.root))
        if self.sandbox is not None and not self.sandbox.paths.identity:
            text = trim_traceback(text, None, str(self.sandbox.paths.inside))
        return text

    def _hold(self, category: str, text: str) -> None:
        """Keep a stream's text until the sync marker comes through it, then write it without
        the marker (the marker may arrive split across events)."""
        assert self._marker is not None
        held = self._held[category] + text
        line = self._marker + "\n"
        if line not in held:
            self._held[category] = held
            return
        before, _, after = held.partition(line)
        del self._held[category]
        self._stream_write(category, before + after)
        if not self._held:
            self._synced.set()

    async def sync_output(self) -> None:
        """At a stop, wait (bounded) until what the debuggee wrote before it has arrived: the
        adapter's output_sync writes a marker down its stdout and stderr pipes, behind all of it."""
        stop = self.stop
        template = self.adapter.output_sync
        if template is None or stop is None or stop.frame is None or self.client is None:
            return
        if self.request != "launch":  # an attached program's pipes are not relayed to us
            return
        self._syncs += 1
        self._marker = f"livetools-sync-{os.getpid()}-{self._syncs}-{time.monotonic_ns()}"
        self._held = {"stdout": "", "stderr": ""}
        self._synced.clear()
        try:
            with contextlib.suppress(ToolError):
                body = await self.call(
                    "evaluate",
                    {
                        "expression": template.format(marker=self._marker),
                        "frameId": stop.frame.id,
                        "context": self.adapter.evaluate_context,
                    },
                )
                written = str(body.get("result", ""))
                for fd, category in (("1", "stdout"), ("2", "stderr")):
                    if fd not in written:  # not a pipe of ours any more: no marker comes there
                        self._stream_write(category, self._held.pop(category, ""))
                if not self._held:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._synced.wait(), OUTPUT_SYNC_TIMEOUT)
        finally:
            self._marker = None
            for category in ("stdout", "stderr"):  # a marker that never came: keep the text
                self._stream_write(category, self._held.pop(category, ""))

    def _on_adapter_stdout(self, line: str) -> None:
        if self._exit_re and (match := self._exit_re.search(line)):
            self.exit_code = int(match.group(1))
        if self._ignore_re and self._ignore_re.search(line):
            return
        self.output.write(line)

    def _on_breakpoint(self, body: dict[str, Any]) -> None:
        ident = body.get("id")
        if ident is None:
            return
        for states in [*self.breakpoints.values(), self.functions]:
            for bp in states:
                if bp.id == ident:
                    bp.update(body)
                    self._hint(bp)

    def _hint(self, bp: Breakpoint, peers: list[Breakpoint] | None = None) -> None:
        """The adapter's message, else our hint; the build hint only when no breakpoint of the
        session verified (one that did proves the binary has debug info)."""
        if bp.verified or bp.message:
            return
        known = [b for states in self.breakpoints.values() for b in states] + (peers or [])
        if any(b.verified for b in known):
            bp.message = (
                "the adapter found no code at this line (a blank, comment or #include line?)"
            )
        else:
            bp.message = self.adapter.unverified_hint

    def others(self) -> list[Stop]:
        """Threads stopped with their own reason besides the reported stop."""
        current = self.stop.thread_id if self.stop is not None else None
        return [s for t, s in self.stopped.items() if t != current]

    def _continued_all(self) -> None:
        self.state = "running"
        self.stopped.clear()
        self.inspected.clear()
        self.all_stopped = False
        self._invalidate()

    def _continued_one(self, thread: int) -> None:
        """DAP `allThreadsContinued: false`: only `thread` runs; the other stops stand."""
        self.stopped.pop(thread, None)
        self.inspected.discard(thread)
        if self.state != "stopped":
            return
        self._invalidate()
        if self.stopped:
            self.stop = next(iter(self.stopped.values()))
            self.unseen = True
        else:
            self.state = "running"

    def _invalidate(self) -> None:
        """Frame ids and variable references are only valid while stopped at one place."""
        self.frames.clear()
        self.refs.clear()

    def _end(self, state: str, reason: str | None) -> None:
        self.state = state
        self.ended_reason = reason
        self._invalidate()
        self._notify()
        self._begin_close()  # now, not from a task: a `status` right after must see it (settled)

    # -- starting ------------------------------------------------------------------------------

    async def _connect(self, binary: str, cwd: Path) -> None:
        a = self.adapter
        try:
            if a.transport == "stdio":
                self.child = await spawn(self.sandbox, a.argv(binary), cwd=cwd, name=a.id)
                assert self.child.stdout is not None and self.child.stdin is not None
                reader, writer = self._framed(self.child.stdout, self.child.stdin)
            elif a.dial_in:
                reader, writer = await self._dial_in(binary, cwd)
            else:
                from livetools.wire import free_port

                port = free_port(HOST)
                self.child = await self._start_tcp_child(a.argv(binary, HOST, port), cwd)
                reader, writer = self._framed(*await connect_tcp(HOST, port, CONNECT_TIMEOUT))
        except ProcessStartError as exc:
            raise ToolError(f"{a.id}: {exc}") from None
        except (ConnectionError, TimeoutError) as exc:
            why = f"{a.id}: could not connect to the adapter: {exc}{self._tail()}"
            raise ToolError(why) from None
        self.client = DapClient(reader, writer, self._on_event, name=a.id)
        self._spawn(self._watch_connection(self.client))

    def _framed(
        self, stdout: asyncio.StreamReader, stdin: ByteWriter
    ) -> tuple[FramedReader, FramedWriter]:
        """Frames over the adapter's pipes or socket, with the sandbox's path map (None on the
        host): an adapter in a sandbox that shares the host's network speaks the inside's paths
        over TCP too."""
        return (
            FramedReader(stdout, transform=self._inbound),
            FramedWriter(stdin, transform=self._outbound),
        )

    async def _start_tcp_child(self, argv: list[str], cwd: Path) -> Process:
        child = await spawn(
            self.sandbox, argv, cwd=cwd, name=self.adapter.id, stdin=False, merge_stderr=True
        )
        self._drain = asyncio.get_running_loop().create_task(self._drain_stdout(child))
        return child

    async def _dial_in(self, binary: str, cwd: Path) -> tuple[FramedReader, FramedWriter]:
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            loop.create_future()
        )

        def on_connect(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            if accepted.done():
                w.close()
            else:
                accepted.set_result((r, w))

        server = await asyncio.start_server(on_connect, HOST, 0)
        try:
            port = server.sockets[0].getsockname()[1]
            self.child = await self._start_tcp_child(self.adapter.argv(binary, HOST, port), cwd)
            exited = loop.create_task(self.child.wait())
            done, _ = await asyncio.wait(
                {accepted, exited}, timeout=CONNECT_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
            )
            exited.cancel()
            if accepted not in done:
                accepted.cancel()
                why = "exited" if exited in done else f"did not connect within {CONNECT_TIMEOUT:g}s"
                raise ConnectionError(f"the adapter {why}")
            r, w = accepted.result()
            return self._framed(r, w)
        finally:
            server.close()

    async def _drain_stdout(self, child: Process) -> None:
        assert child.stdout is not None
        while True:
            raw = await child.stdout.readline()
            if not raw:
                return
            line = raw.decode("utf-8", "replace")
            if self.adapter.stdout_is_output:
                self._on_adapter_stdout(line)
            elif line.strip():
                self.messages.append(line.strip()[:400])

    async def _watch_connection(self, client: DapClient) -> None:
        await client.closed.wait()
        if self.live and self._closing is None:
            self._end("ended", f"{client.closed_reason}{self._tail()}")

    def _tail(self) -> str:
        if self.child is None:
            return ""
        tail = self.child.stderr_tail(8).strip()
        return f"; adapter stderr: {tail}" if tail else ""

    def _said(self) -> str:
        """What the debuggee or its build printed before a failed launch: dlv answers "Build
        error: Check the debug console for details", and the details are in that output."""
        text = self.shown(self.output.text()).strip()
        if not text:
            return ""
        tail = "\n".join(text.splitlines()[-8:])
        return "; output: " + (tail if len(tail) <= 800 else "…" + tail[-800:])

    async def _initialize(self) -> None:
        assert self.client is not None
        self.capabilities = await self.client.request(
            "initialize",
            {
                "clientID": "livetools",
                "clientName": "livetools",
                "adapterID": self.adapter.id,
                "pathFormat": "path",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "supportsVariableType": True,
                "supportsRunInTerminalRequest": False,
                "supportsStartDebuggingRequest": False,
            },
            within=min(CONNECT_TIMEOUT, self.adapter.init_timeout),
        )

    async def launch(
        self,
        binary: str,
        info: LaunchInfo,
        breakpoints: dict[Path, list[Want]],
        functions: list[str] | None = None,
    ) -> None:
        config = self.adapter.launch_config(info)
        await self._start(binary, info.cwd, config, breakpoints, functions=functions)

    async def attach(
        self,
        binary: str | None,
        info: AttachInfo,
        breakpoints: dict[Path, list[Want]],
        functions: list[str] | None = None,
    ) -> None:
        assert self.adapter.attach_config is not None
        config = self.adapter.attach_config(info)
        await self._start(binary, info.cwd, config, breakpoints, info, functions=functions)

    async def _await_listening(self, info: AttachInfo) -> None:
        """Wait (bounded, adapted to load) until something listens on the attach port, without
        connecting: a gdbserver serves one connection, so a probe would use up the debuggee."""
        deadline = time.monotonic() + attach_connect_timeout()
        while time.monotonic() < deadline:
            if listening(info.port) is not False:
                return  # listening, or unknowable on this system
            await asyncio.sleep(0.05)
        # out of time: lldb's own error then says why

    async def _start(
        self,
        binary: str | None,
        cwd: Path,
        config: dict[str, Any],
        breakpoints: dict[Path, list[Want]],
        direct: AttachInfo | None = None,
        *,
        functions: list[str] | None = None,
    ) -> None:
        """Connect and configure; leaves the session running (or already stopped/exited).
        On failure everything started is closed and ToolError says why."""
        command = str(config.get("request", self.request))
        if direct is not None and direct.pid is not None:
            direct = None  # a pid: the adapter is started and attaches to it itself
        try:
            if direct is not None and self.adapter.attach_direct:
                try:
                    streams = await connect_tcp(direct.host, direct.port, attach_connect_timeout())
                except ConnectionError as exc:
                    raise ToolError(
                        f"{exc}; start the debuggee listening first "
                        "(e.g. python -m debugpy --listen 127.0.0.1:PORT --wait-for-client x.py)"
                    ) from None
                reader, writer = self._framed(*streams)
                self.client = DapClient(reader, writer, self._on_event, name=self.adapter.id)
                self._spawn(self._watch_connection(self.client))
            else:
                assert binary is not None
                if direct is not None:
                    await self._await_listening(direct)
                await self._connect(binary, cwd)
            assert self.client is not None
            await self._initialize()
            started = await self.client.send(command, config)
            await self._await_initialized(started, command)
            for path, wants in breakpoints.items():
                await self.set_breakpoints(path, wants, strict=False)
            if functions:
                await self.set_functions(functions, strict=False)
            await self._exception_breakpoints()
            if self.capabilities.get("supportsConfigurationDoneRequest", True):
                await self.client.request("configurationDone", {}, within=self.request_timeout)
            await wait_response(started, command, self.adapter.init_timeout)
            if self.state == "starting":
                self.state = "running"
        except ToolError:
            await self.close()
            raise
        except (DapError, DapClosed, TimeoutError) as exc:
            detail = self.client.closed_reason if self.client and self.client.closed_reason else ""
            text = str(exc)
            if detail and detail not in text:
                text = f"{text} ({detail})"
            text = f"{self.adapter.id} {command} failed: {text}{self._tail()}{self._said()}"
            self.ended_reason = text
            await self.close("ended")
            raise ToolError(text) from None
        except BaseException:
            await self.close()
            raise

    async def _await_initialized(self, started: asyncio.Future[Any], command: str) -> None:
        """Wait for `initialized`. lldb answers the launch first, debugpy only after
        configurationDone: a failed launch response or a dead adapter ends the wait early."""
        assert self.client is not None
        waiters = {
            asyncio.ensure_future(self._initialized.wait()),
            asyncio.ensure_future(self.client.closed.wait()),
        }
        deadline = time.monotonic() + self.adapter.init_timeout
        try:
            while not self._initialized.is_set() and not self.client.closed.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                watch = waiters if started.done() else {*waiters, started}
                await asyncio.wait(watch, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                if started.done() and started.exception() is not None:
                    raise started.exception()  # type: ignore[misc]
        finally:
            for w in waiters:
                w.cancel()
        if self._initialized.is_set():
            return
        if self.client.closed.is_set():
            raise DapClosed(self.client.closed_reason or "adapter closed the connection")
        raise TimeoutError(f"no initialized event within {self.adapter.init_timeout:g}s")

    async def _exception_breakpoints(self) -> None:
        assert self.client is not None
        declared = self.capabilities.get("exceptionBreakpointFilters")
        if not declared:
            return  # lldb and dlv differ here; sending it undeclared is asking for trouble
        names = {f.get("filter") for f in declared if isinstance(f, dict)}
        asked = self.adapter.exception_filters if self.filters is None else self.filters
        filters = [f for f in asked if f in names]
        if len(filters) < len(asked):
            self.filter_note = (
                f"exception filters not declared by {self.adapter.id}, left out: "
                + ", ".join(f for f in asked if f not in names)
            )
        self.filters = filters
        await self.client.request(
            "setExceptionBreakpoints", {"filters": filters}, within=self.request_timeout
        )

    # -- requests ------------------------------------------------------------------------------

    async def call(self, command: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A request whose failure becomes a ToolError with the adapter's own words."""
        within = self.request_timeout
        if self.client is None or not self.live:
            raise ToolError(self.describe_end())
        try:
            return await self.client.request(command, arguments, within=within)
        except DapError as exc:
            raise ToolError(f"{self.adapter.id} refused {command}: {exc}") from None
        except DapClosed as exc:
            if not self.live:  # ended under us: expired, terminated, exited
                raise ToolError(self.describe_end()) from None
            raise ToolError(f"the adapter is gone: {exc}{self._tail()}") from None
        except TimeoutError as exc:
            raise ToolError(
                f"{exc}; the session may be wedged: `status`, or `terminate` and launch again"
            ) from None

    async def set_breakpoints(
        self, path: Path, wants: list[Want], *, strict: bool = True
    ) -> list[Breakpoint]:
        """`strict` (a call): a kind the adapter lacks refuses the call. At launch those
        breakpoints are left out, each saying why (set unconditionally they would stop)."""
        dropped: list[Breakpoint] = []
        if strict:
            unsupported(self.adapter.id, self.capabilities, wants)
        else:
            kept = []
            for want in wants:
                try:
                    unsupported(self.adapter.id, self.capabilities, [want])
                    kept.append(want)
                except ToolError as exc:
                    dropped.append(
                        Breakpoint(want.line, want.label(), message=f"not set: {exc}".split(";")[0])
                    )
            wants = kept
        body = await self.call(
            "setBreakpoints",
            {
                "source": {"path": str(path), "name": path.name},
                "breakpoints": [w.dap() for w in wants],
                "lines": [w.line for w in wants],
            },
        )
        states = [Breakpoint(line=w.line, label=w.label()) for w in wants]
        for bp, answer in zip(states, body.get("breakpoints") or [], strict=False):
            if isinstance(answer, dict):
                bp.update(answer)
        for bp in states:
            self._hint(bp, states)
        states = sorted(states + dropped, key=lambda b: b.line)
        if states:
            self.breakpoints[path] = states
        else:
            self.breakpoints.pop(path, None)
        return states

    async def set_functions(self, names: list[str], *, strict: bool = True) -> list[Breakpoint]:
        """Function breakpoints by name (the whole set: DAP replaces it). `strict` (a call): an
        adapter without them refuses the call; at launch each says it was not set."""
        if not self.capabilities.get("supportsFunctionBreakpoints"):
            why = (
                f"{self.adapter.id} has no function breakpoints (it does not declare "
                "supportsFunctionBreakpoints)"
            )
            if strict:
                raise ToolError(f"{why}; nothing was set. Use file and lines instead")
            self.functions = [Breakpoint(0, function=n, message=f"not set: {why}") for n in names]
            return self.functions
        body = await self.call(
            "setFunctionBreakpoints", {"breakpoints": [{"name": n} for n in names]}
        )
        states = [Breakpoint(0, function=n) for n in names]
        for bp, answer in zip(states, body.get("breakpoints") or [], strict=False):
            if isinstance(answer, dict):
                bp.update(answer)
        for bp in states:
            if not bp.verified and not bp.message:
                bp.message = "the adapter found no function of that name"
        self.functions = states
        return states

    async def first_thread(self) -> int:
        body = await self.call("threads")
        threads = [t for t in body.get("threads") or [] if isinstance(t.get("id"), int)]
        if not threads:
            raise ToolError("the adapter reports no threads")
        return int(threads[0]["id"])

    async def thread_for(self, thread_id: int | None) -> int:
        if thread_id is not None:
            body = await self.call("threads")
            threads = [t for t in body.get("threads") or [] if isinstance(t, dict)]
            if any(t.get("id") == thread_id for t in threads):
                self.inspected.add(thread_id)
                return thread_id
            known = ", ".join(f"{t.get('id')} ({t.get('name')})" for t in threads[:20])
            raise ToolError(f"unknown thread id {thread_id}; threads: {known or 'none'}")
        if self.stop is not None and self.stop.thread_id is not None:
            return self.stop.thread_id
        return await self.first_thread()

    async def stack(self, thread_id: int, levels: int) -> tuple[list[Frame], int | None]:
        body = await self.call(
            "stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": levels}
        )
        frames = []
        for raw in body.get("stackFrames") or []:
            source = raw.get("source") or {}
            line = raw.get("line")
            frame = Frame(
                id=int(raw.get("id", 0)),
                name=rust.frame_name(str(raw.get("name", "?"))),  # no ::h<hash>
                path=source.get("path") if isinstance(source.get("path"), str) else None,
                line=line if isinstance(line, int) and line > 0 else None,
            )
            frames.append(frame)
            self.frames[frame.id] = frame
        total = body.get("totalFrames")
        return frames, total if isinstance(total, int) else None

    async def describe_stop(self) -> Stop | None:
        """Fill in the stop's thread, top frame (first with a source: dlv's paused top frame is
        `???`) and exception text. Cached until the next resume."""
        stop = self.stop
        if stop is None or self.state != "stopped" or stop.frame is not None:
            return stop
        if stop.thread_id is None:  # dlv may stop without a threadId
            stop.thread_id = await self.first_thread()
        self.inspected.add(stop.thread_id)  # about to be shown
        # One frame is enough at a breakpoint or a step (the hot path); 30 when the top has no
        # source or lies outside the project (a panic inside the runtime).
        frames, _ = await self.stack(stop.thread_id, 1)
        if not frames or not frames[0].path or not frames[0].line or not self._inside(frames[0]):
            frames, _ = await self.stack(stop.thread_id, 30)
        stop.frame = next((f for f in frames if f.path and f.line), frames[0] if frames else None)
        if stop.frame is not None and not self._inside(stop.frame):
            stop.project_frame = next((f for f in frames if self._inside(f)), None)
        if stop.reason == "breakpoint":
            await self._others_at_breakpoints(stop)
        if stop.reason == "exception" and self.capabilities.get("supportsExceptionInfoRequest"):
            with contextlib.suppress(ToolError):
                info = await self.call("exceptionInfo", {"threadId": stop.thread_id})
                parts = [info.get("exceptionId"), info.get("description")]
                stop.exception = ": ".join(str(p) for p in parts if p) or None
        return stop

    async def _others_at_breakpoints(self, stop: Stop) -> None:
        """Threads suspended at a breakpoint line besides the one the event named. debugpy and
        dlv send one `stopped` for the first hit and suspend the rest; three pool threads at
        one line are three hits, and the next `continue` runs all of them past it unreported."""
        lines = {
            (str(path), bp.resolved or bp.line)
            for path, states in self.breakpoints.items()
            for bp in states
            if bp.verified
        }
        body = await self.call("threads")
        ids = [t.get("id") for t in body.get("threads") or [] if isinstance(t, dict)]
        ids = [t for t in ids if isinstance(t, int) and t > 0 and t not in self.stopped]
        for thread in ids[:OTHER_THREADS_CHECKED]:
            if thread == stop.thread_id:
                continue
            with contextlib.suppress(ToolError):
                frames, _ = await self.stack(thread, 1)
                top = frames[0] if frames else None
                at = (top.path, top.line) if top is not None else None
                if top is not None and at in lines and self._resumed_from.get(thread) != at:
                    self.stopped[thread] = Stop("breakpoint", thread, frame=top)

    def _inside(self, frame: Frame) -> bool:
        return bool(frame.path) and inside(self.root, frame.path or "")

    async def resume(self, op: str, command: str, thread_id: int | None, grace: float) -> Outcome:
        if self.state == "running" and op == "continue":
            # Already running (an earlier call returned "still running"): wait for the next stop.
            mark, epoch = self.output.mark(), self._epoch
            await self.wait_change(epoch, grace)
            return await self.outcome(mark)
        if self.state != "stopped":
            raise ToolError(self._not_stopped(op))
        if self.unseen:
            # It stopped after a call returned "still running": report that stop, never skip it.
            outcome = await self.outcome(self.output.mark())
            outcome.note = f"it had stopped here before this call; nothing was resumed ({op} again)"
            return outcome
        thread = await self.thread_for(thread_id)
        # Threads stopped with a reason of their own that no result showed and no call named:
        # resuming them all loses those stops for good, so they run on only if the adapter
        # cannot resume one thread alone, and the result says which.
        waiting = [t for t in self.stopped if t != thread and t not in self.inspected]
        single = bool(waiting) and bool(
            self.capabilities.get("supportsSingleThreadExecutionRequests")
        )
        mark, epoch = self.output.mark(), self._epoch
        stop, stopped, everyone = self.stop, dict(self.stopped), self.all_stopped
        seen = set(self.inspected)
        self._resumed_from = {
            t: (s.frame.path, s.frame.line) for t, s in stopped.items() if s.frame is not None
        }
        self._continued_all()  # before sending: a stop may beat the response
        self.refused, self.step_cut = None, False
        if single:
            self.stopped = {t: s for t, s in stopped.items() if t != thread}
            self.inspected = seen - {thread}
        arguments: dict[str, Any] = {"threadId": thread}
        if single:
            arguments["singleThread"] = True
        try:
            body = await self.call(command, arguments)
        except ToolError:
            if self._epoch == epoch and self.state == "running":
                self.state, self.stop = "stopped", stop  # refused (a bad thread id): still there
                self.stopped, self.all_stopped = stopped, everyone
                self.inspected = seen
                self.unseen = False
            raise
        alone = body.get("allThreadsContinued", True) is False or (single and op == "continue")
        if alone and self._epoch == epoch:
            # Only this thread runs: the other threads' stops still stand, report the next one.
            left = {t: s for t, s in stopped.items() if t != thread}
            if left:
                self.stopped, self.all_stopped = left, everyone
                self.stop, self.state = next(iter(left.values())), "stopped"
                outcome = await self.outcome(mark)
                outcome.note = f"only thread {thread} was resumed; this thread was already stopped"
                return outcome
        await self.wait_change(epoch, grace)
        if self.refused is not None:
            text, self.refused = self.refused, None
            if stop is not None:
                stop.frame = stop.project_frame = None  # dlv renumbered its frames
            self.state, self.stop = "stopped", stop
            self.stopped, self.all_stopped, self.inspected = stopped, everyone, seen
            self.unseen = False
            raise ToolError(
                f"{self.adapter.id} refused {op}: {' '.join(text.split())} Nothing ran; it is "
                "still stopped where it was"
            )
        outcome = await self.outcome(mark)
        if self.step_cut and op != "continue":
            outcome.note = _join(
                outcome.note,
                f"this stop cut the {op} of thread {thread} short; {self.adapter.id} steps again "
                "only after `continue` has finished that step (it stops where the step ends, or "
                "at the next breakpoint)",
            )
        if waiting and not single:
            outcome.resumed = waiting
            reasons = sorted({stopped[t].reason for t in waiting})
            outcome.note = _join(
                outcome.note,
                f"resumed with it, never inspected: thread {', '.join(map(str, waiting))} "
                f"(stopped: {', '.join(reasons)}); {self.adapter.id} cannot resume one thread "
                "alone. Before resuming, inspect such a thread: stack with thread_id=N",
            )
        return outcome

    async def run_to(
        self, path: Path, line: int, kept: list[Want], thread_id: int | None, grace: float
    ) -> tuple[Outcome, Breakpoint]:
        """`continue` with a temporary breakpoint at `line`; the file's own breakpoints
        (`kept`) are put back at the stop, or at the next one if it is still running then."""
        wants = sorted([*(w for w in kept if w.line != line), Want(line)], key=lambda w: w.line)
        states = await self.set_breakpoints(path, wants)
        bp = next(b for b in states if b.line == line)
        if not bp.verified:
            await self.set_breakpoints(path, kept, strict=False)
            raise ToolError(
                f"lines: no code at {path.name}:{line} ({bp.message or 'unverified'}); nothing ran"
            )
        self._temporary = (path, kept)
        try:
            outcome = await self.resume("run_to", "continue", thread_id, grace)
        except BaseException:
            await self._untemporary()
            raise
        if outcome.kind != "running":
            await self._untemporary()
        return outcome, bp

    async def _untemporary(self) -> None:
        temporary, self._temporary = self._temporary, None
        if temporary is not None and self.live and self.client is not None:
            with contextlib.suppress(ToolError):
                await self.set_breakpoints(*temporary, strict=False)

    async def pause(self, thread_id: int | None, grace: float) -> Outcome:
        if self.state == "stopped":
            return Outcome("stopped")  # pausing a stopped target hangs some adapters
        if self.state != "running":
            raise ToolError(self._not_stopped("pause"))
        thread = thread_id if thread_id is not None else await self.first_thread()
        mark, epoch = self.output.mark(), self._epoch
        self._pausing = True
        await self.call("pause", {"threadId": thread})
        await self.wait_change(epoch, grace)
        return await self.outcome(mark)

    async def wait_first_stop(self, grace: float) -> Outcome:
        """After launch/attach: the first stop, exit or the grace period."""
        if self.state in ("starting", "running"):
            await self.wait_change(0, grace)
        if self.entry is not None and self.live:
            entry, asked = self.entry
            self.entry = None
            stop = self.stop
            ours = stop is not None and stop.reason in ("function breakpoint", "breakpoint")
            if self.state == "stopped" and stop is not None and ours and entry not in asked:
                stop.reason = "entry"  # ours, not a breakpoint of the conversation
            with contextlib.suppress(ToolError):
                await self.set_functions(asked, strict=False)
        return await self.outcome(0)

    async def outcome(self, mark: int) -> Outcome:
        note = None
        self.unseen = False
        if self.state == "stopped":
            if not self._tuned:
                await self._first_stop()
            if self._temporary is not None:  # a run_to that was still running then
                await self._untemporary()
            try:
                await self.describe_stop()
            except ToolError as exc:
                note = f"could not read where it stopped: {exc}"
            await self.sync_output()
            kind = "stopped"
        elif self.state == "running":
            kind = "running"
        else:
            if self.exit_code is None:  # `exited` may trail `terminated` a little
                await asyncio.sleep(0.1)
            kind = "exited" if self.state == "exited" else "ended"
        self.flush_partial()
        return Outcome(kind, self.output.since(mark), note)

    async def _first_stop(self) -> None:
        """The adapter's `first_stop` expression, once: a failure only costs its speed-up."""
        self._tuned = True
        assert self.adapter.first_stop is not None
        arguments = {"expression": self.adapter.first_stop, "context": "repl"}
        with contextlib.suppress(ToolError):
            await self.call("evaluate", arguments)

    def _not_stopped(self, op: str) -> str:
        if self.state == "running":
            return f"cannot {op}: the debuggee is running; `pause` first (or `continue` to wait)"
        return f"cannot {op}: {self.describe_end()}"

    def exit_text(self) -> str:
        """'code 3', or 'signal SIGSEGV (code 11)' when the code is the signal a stop named."""
        code = self.exit_code
        if code is None:
            return "code unknown"
        if self.signal:
            import signal as signals

            number = getattr(signals, self.signal, None)
            if number is not None and code in (int(number), 128 + int(number), -int(number)):
                return f"signal {self.signal} (code {code})"
        return f"code {code}"

    def describe_end(self) -> str:
        if self.state == "exited":
            code = "" if self.exit_code is None else f" with {self.exit_text()}"
            return f"the debuggee exited{code}; launch again"
        if self.state == "expired":
            return "the session expired (TTL) and was ended; launch again"
        if self.state == "ended":
            return f"the session ended: {self.ended_reason or 'terminated'}; launch again"
        return f"the session is {self.state}"

    # -- closing -------------------------------------------------------------------------------

    async def close(self, state: str | None = None) -> None:
        """`disconnect {terminateDebuggee}` (bounded), then kill every process of the adapter's
        session: the debuggee lives there too, in its own process group. Idempotent."""
        if state is not None and self.live:
            self.state = state
            self._invalidate()
            self._notify()
        await asyncio.shield(self._begin_close())

    def _begin_close(self) -> asyncio.Task[None]:
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self._close())
        return self._closing

    async def settled(self) -> None:
        """Wait for a teardown in progress (a TTL expiry, an exit) to finish killing."""
        if self._closing is not None:
            await asyncio.shield(self._closing)

    async def _close(self) -> None:
        client = self.client
        if client is not None and not client.closed.is_set():
            with contextlib.suppress(DapError, DapClosed, TimeoutError, OSError):
                await client.request(
                    "disconnect",
                    {"terminateDebuggee": not self.detach},
                    within=DISCONNECT_TIMEOUT,
                )
        if client is not None:
            await client.aclose()
        if self.child is not None:
            await self.child.aclose(grace=0.5)
        if self._drain is not None:  # the adapter's last stdout lines (dlv: program output)
            await asyncio.wait({self._drain}, timeout=0.5)
            self._drain.cancel()
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        if self.live:
            self.state = "ended"
            self._notify()


async def connect_tcp(
    host: str,
    port: int,
    timeout: float,  # noqa: ASYNC109 (the retry loop needs the deadline itself)
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """`livetools.wire.open_tcp` without the framing, so the frames get the path map: retry a
    refused port until `timeout` (an adapter opens it a moment after it starts)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: OSError | None = None
    while (remaining := deadline - loop.time()) > 0:
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), remaining)
        except TimeoutError:  # before OSError: TimeoutError is one
            break
        except OSError as exc:
            last = exc
        await asyncio.sleep(min(0.05, max(deadline - loop.time(), 0)))
    raise ConnectionError(
        f"could not connect to {host}:{port} within {timeout:g}s: {last or 'timed out'}"
    )


def dap_maps(sandbox: Sandbox | None) -> tuple[Transform | None, Transform | None]:
    """The sandbox's wire maps, except that an `evaluate` answer keeps its `result` as the
    debuggee made it: it is the program's value (`os.getcwd()` is '/workspace' inside), not a
    path of ours. Variable values and output are kept by the map itself (content keys). Going
    out, delve's `substitutePath` `to` is a path as a binary built on the host names it."""
    inbound, outbound = wire_maps(sandbox)
    if inbound is None or outbound is None:
        return None, None

    def keep_binary_paths(message: Any) -> Any:
        arguments = message.get("arguments") if isinstance(message, dict) else None
        rules = arguments.get("substitutePath") if isinstance(arguments, dict) else None
        mapped = outbound(message)
        if isinstance(rules, list):
            for rule, out in zip(rules, mapped["arguments"]["substitutePath"], strict=True):
                if isinstance(rule, dict) and isinstance(out, dict) and "to" in rule:
                    out["to"] = rule["to"]
        return mapped

    def keep_results(message: Any) -> Any:
        body = message.get("body") if isinstance(message, dict) else None
        value = body.get("result") if isinstance(body, dict) else None
        mapped = inbound(message)
        if isinstance(value, str) and isinstance(mapped.get("body"), dict):
            mapped["body"]["result"] = value
        return mapped

    return keep_results, keep_binary_paths


def attach_connect_timeout() -> float:
    """How long attach retries a refused port: a server that was just started opens it a moment
    later, and that moment grows with the machine's load (2 s was too short at load 6 on 2 cores).
    """
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        load = 1.0
    return ATTACH_CONNECT * min(max(load, 1.0), 8.0)


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
