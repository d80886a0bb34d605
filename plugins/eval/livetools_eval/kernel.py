"""One live kernel: its process, its channels, and the loop that runs one cell.

The process is ours (started through `livetools.sandbox.spawn`: on the host or inside the run's
sandbox, in its own session either way, so nothing it starts outlives the run); jupyter_client is
used only as the client side of the channels. All four channels feed one queue,
so a cell waits on a single thing: the next event, or the idle deadline."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from livetools.files.owner import owned_tempdir
from livetools.procs import ProcessStartError, stat_fields
from livetools.sandbox import Process, Sandbox, spawn

from .hookspecs import KernelSpec, KernelUnavailable

MARKER = "\x1fTOOL\x1f"  # prefix of a bridge request travelling as an input_request prompt
EOF = "\x04"  # ipykernel raises EOFError in the cell for this input_reply
BRIDGE_RECHECK = 1.0  # seconds between looks at a pending bridge call (see execute)
SETTLE_MAX = 0.25  # longest wait for output trailing a cell's idle status (see execute)

RELAY = resources.files("livetools_eval") / "kernel_side" / "relay.py"

Event = tuple[str, Any]
Bridge = Callable[[dict[str, Any]], Awaitable[Any]]
Sink = Callable[[dict[str, Any]], None]


class KernelStartError(Exception):
    """The kernel could not be started or never answered; the message says why."""


class ChannelClosed(Exception):
    """A request could not be sent: the connection to the kernel is gone (a gateway's websocket)."""


@dataclass
class Outcome:
    """How a cell ended. `status`: ok | error (the cell raised) | interrupted (idle budget spent,
    interrupt answered, state kept) | restarted (interrupt unanswered, state lost) | died."""

    status: str  # also: disconnected (a gateway's connection was lost; the kernel may live)
    reply: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    stderr: str = ""
    idle_for: float = 0.0
    eof_replies: int = 0  # input() / prompt() calls answered with end-of-file
    started: bool = True  # False: the kernel never began this cell (safe to run it elsewhere)


class Kernel:
    max_reply: int | None = None  # largest input_reply the transport carries (None: no limit)

    def __init__(self, spec: KernelSpec, root: Path, sandbox: Sandbox | None = None) -> None:
        self.spec = spec
        self.root = root
        self.sandbox = sandbox
        self.child: Process | None = None
        self.client: Any = None
        self.info: dict[str, Any] = {}
        self.started_in = 0.0
        self.abandoned: str | None = None  # msg_id of a cell whose caller went away
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._workdir: Path | None = None
        self._exit_code: int | None = None
        self._closing: asyncio.Task[None] | None = None
        self._signal_pid: tuple[int, int] | None = None  # (pid, start time) SIGINT goes to

    # -- life --------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

    @property
    def alive(self) -> bool:
        if self.child is None or self._exit_code is not None or self._closing is not None:
            return False
        # The exit watcher runs on the loop; /proc knows at once, including a kill not yet acted on.
        return not doomed(self.child.pid)

    @property
    def exit_code(self) -> int | None:
        return self._exit_code

    def gone_reason(self) -> str:
        """Why this kernel is no longer usable, told to the next call with the fresh one."""
        return "it had exited" + how_it_ended(self._exit_code)

    async def revive(self) -> str | None:
        """Bring a kernel that is not alive back without losing its state; a note on success.
        A local kernel that died stays dead (a gateway's kernel may only have lost its
        connection)."""
        return None

    async def reaped(self, wait: float) -> None:
        """Give a dying kernel up to `wait` seconds to exit, so its exit code is known."""
        if self.child is not None and self._exit_code is None:
            code = await self.child.wait(wait)
            if code is not None:
                self._exit_code = code

    def stderr_tail(self, lines: int = 15) -> str:
        return self.child.stderr_tail(lines) if self.child else ""

    async def start(self) -> None:
        """Start the process, connect, and wait until the kernel answers with iopub connected."""
        from jupyter_client.asynchronous.client import AsyncKernelClient
        from jupyter_client.connect import write_connection_file

        t0 = time.monotonic()
        try:
            template = self.spec.command()
        except KernelUnavailable as exc:
            raise KernelStartError(str(exc)) from None
        transport, self._workdir = self._place()
        relayed = transport == "relay"
        ip = str(self._workdir / "k") if transport == "ipc" else "127.0.0.1"
        conn_file, info = write_connection_file(
            str(self._workdir / "kernel.json"),
            ip=ip,
            key=uuid.uuid4().hex.encode(),
            transport="tcp" if relayed else transport,
            kernel_name=self.spec.name,
        )
        argv = [a.replace("{connection_file}", conn_file) for a in template]
        if relayed:  # the kernel listens on the inside's loopback, we on unix sockets
            prefix = str(self._workdir / "r")
            info = info.copy()
            info["transport"], info["ip"] = "ipc", prefix
            argv = [sys.executable, str(RELAY), conn_file, prefix, "--", *argv]
        try:
            self.child = await spawn(
                self.sandbox,
                argv,
                cwd=self.root,
                env=self._env(),
                name=f"{self.spec.name} kernel",
                stdin=False,  # a subprocess reading stdin gets EOF instead of hanging the cell
                stdout=False,
            )
        except ProcessStartError as exc:
            await self.aclose()
            raise KernelStartError(str(exc)) from None
        client = AsyncKernelClient()
        client.load_connection_info(info)
        client.start_channels(hb=False)
        self.client = client
        for name in ("iopub", "shell", "stdin", "control"):
            channel = getattr(client, f"{name}_channel")
            self._tasks.append(asyncio.ensure_future(self._read(name, channel)))
        self._tasks.append(asyncio.ensure_future(self._watch_exit()))
        try:
            await self._wait_ready(self.spec.start_timeout)
        except BaseException:
            await self.aclose()
            raise
        self.started_in = time.monotonic() - t0

    def _place(self) -> tuple[str, Path]:
        """The transport ("ipc", "tcp", or "relay") and the private (0700) folder of the
        connection file. A sandbox with a shared folder gets the folder there, and unix sockets
        (TCP does not cross a network namespace): the kernel's own when it speaks them, else
        through a relay inside that turns them into its loopback TCP (relay.py). A sandbox
        sharing no folder (a `wrap(argv)` launcher keeping the host's file system) gets
        loopback TCP."""
        if self.sandbox is None:
            return self.spec.transport, Path(owned_tempdir("lt-eval"))
        shared = self.sandbox.shared_dir
        if shared is None:
            return "tcp", Path(owned_tempdir("lt-eval"))
        folder = Path(tempfile.mkdtemp(prefix="lt-eval-", dir=shared))
        return ("ipc" if self.spec.transport == "ipc" else "relay"), folder

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key, value in self.spec.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        if self.sandbox is None:
            env["JPY_PARENT_PID"] = str(os.getpid())  # ipykernel exits when we do
        else:
            # Inside a PID namespace our pid means nothing (its parent poller sees ppid 1 and
            # exits at once); the kernel dies with its launcher's session and with the host.
            env.pop("JPY_PARENT_PID", None)
        return env

    async def _read(self, name: str, channel: Any) -> None:
        try:
            while True:
                self._queue.put_nowait((name, await channel.get_msg()))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # socket closed under us
            self._queue.put_nowait(("broken", f"{name} channel: {type(exc).__name__}: {exc}"))

    async def _watch_exit(self) -> None:
        assert self.child is not None
        code = await self.child.wait()
        self._exit_code = code if code is not None else -1
        self._queue.put_nowait(("exit", self._exit_code))

    async def _next(self, wait: float | None) -> Event | None:
        if wait is not None and wait <= 0:
            return self._queue.get_nowait() if not self._queue.empty() else None
        try:
            async with asyncio.timeout(wait):
                return await self._queue.get()
        except TimeoutError:
            return None

    async def _wait_ready(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while True:
            msg_id = self._send_kernel_info()
            answered = await self._await_reply(msg_id, "kernel_info_reply", 1.0, deadline)
            if answered is not None:
                self.info = answered.get("content", {})
                # The reply proves shell works; an iopub message proves our subscription is live
                # (an unconnected SUB socket would silently drop the first cell's output).
                if await self._await_iopub(0.5):
                    while self._queue.qsize():
                        self._queue.get_nowait()
                    return
            if time.monotonic() > deadline:
                raise KernelStartError(
                    f"the {self.spec.name} kernel did not answer within {limit:g}s"
                    + self._stderr_note()
                )

    async def _await_reply(
        self, msg_id: str, kind: str, wait: float, deadline: float
    ) -> dict[str, Any] | None:
        end = min(time.monotonic() + wait, deadline)
        while (left := end - time.monotonic()) > 0:
            event = await self._next(left)
            if event is None:
                return None
            self._check_exit(event)
            name, msg = event
            if (
                name == "shell"
                and msg["msg_type"] == kind
                and msg["parent_header"].get("msg_id") == msg_id
            ):
                return msg
        return None

    async def _await_iopub(self, wait: float) -> bool:
        end = time.monotonic() + wait
        while (left := end - time.monotonic()) > 0:
            event = await self._next(left)
            if event is None:
                return False
            self._check_exit(event)
            if event[0] == "iopub":
                return True
        return False

    def _send_kernel_info(self) -> str:
        return self.client.kernel_info()

    def _send_execute(self, code: str, silent: bool) -> str:
        return self.client.execute(
            code, silent=silent, store_history=not silent, allow_stdin=True, stop_on_error=False
        )

    def _unavailable(self) -> Outcome:
        """The outcome of a cell sent to a kernel that is not alive: it never began."""
        return Outcome("died", exit_code=self._exit_code, stderr=self.stderr_tail(), started=False)

    def _check_exit(self, event: Event) -> None:
        if event[0] == "lost":
            raise KernelStartError(f"{event[1]} while the {self.spec.name} kernel was starting")
        if event[0] == "exit":
            raise KernelStartError(
                f"the {self.spec.name} kernel exited with code {event[1]} while starting"
                + self._stderr_note()
            )

    def _stderr_note(self) -> str:
        tail = self.stderr_tail(12).strip()
        return f"; its stderr ends with:\n{tail}" if tail else ""

    # -- cells -------------------------------------------------------------------------------

    async def execute(
        self,
        code: str,
        sink: Sink,
        *,
        bridge: Bridge | None = None,
        idle: float = 300.0,
        grace: float = 3.0,
        silent: bool = False,
    ) -> Outcome:
        """Run one cell. `sink` gets each iopub message of the cell; bridge requests go to
        `bridge` and their answers back as input_reply. The idle budget restarts at every
        output and is suspended while a bridge call is pending. On expiry: interrupt, then
        (no answer within `grace`) give up on the kernel: the caller must replace it."""
        if not self.alive:
            return self._unavailable()
        self._drain_stale()
        try:
            msg_id = self._send_execute(code, silent)
        except ChannelClosed as exc:
            return Outcome("disconnected", stderr=str(exc), started=False)
        sent = time.monotonic()
        pending: set[asyncio.Task[None]] = set()
        reply: dict[str, Any] | None = None
        idle_seen = False
        interrupted = False
        eof_replies = 0
        final_seen = False
        heard = False  # any message of this cell (its busy status first)
        first_heard = sent
        settle_until: float | None = None
        deadline = time.monotonic() + idle
        finished = False
        try:
            while True:
                now = time.monotonic()
                if settle_until is not None:
                    wait: float | None = settle_until - now
                elif pending:
                    # A bridge call does not count against the idle budget; look again every
                    # second rather than trust a single wake-up to arrive.
                    wait = BRIDGE_RECHECK
                else:
                    wait = deadline - now
                event = await self._next(wait)
                if event is None:
                    if settle_until is not None:
                        break
                    if reply is not None:  # replied, idle never came: do not wait forever
                        break
                    if pending:
                        continue
                    if not interrupted:
                        interrupted = True
                        self.interrupt()
                        deadline = time.monotonic() + grace
                        continue
                    finished = True
                    return Outcome("restarted", idle_for=idle)
                name, msg = event
                if name == "lost":  # a gateway's connection: the kernel may still be running
                    finished = True
                    self.abandoned = msg_id
                    return Outcome("disconnected", stderr=str(msg))
                if name in ("exit", "broken"):
                    finished = True
                    exit_code: int | None = msg if name == "exit" else self._exit_code
                    tail = self.stderr_tail() if name == "exit" else str(msg)
                    # Died after the request was sent. Killed from outside (SIGKILL) before a
                    # word about this cell: the kill raced our send, the cell never began. Any
                    # other death may have run it (a fast `os._exit` dies before its busy
                    # status arrives), so that cell is never re-run.
                    killed = exit_code == -signal.SIGKILL and not heard
                    return Outcome("died", exit_code=exit_code, stderr=tail, started=not killed)
                if name == "bridge":
                    deadline = time.monotonic() + (grace if interrupted else idle)
                    continue
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue  # a late message of an earlier cell
                kind = msg["msg_type"]
                if not heard:
                    heard, first_heard = True, time.monotonic()
                if name == "iopub":
                    if kind == "status":
                        if msg["content"].get("execution_state") == "idle":
                            idle_seen = True
                    elif kind != "execute_input":
                        final_seen = final_seen or kind in ("execute_result", "error")
                        sink(msg)
                        if not interrupted:
                            deadline = time.monotonic() + idle
                elif name == "shell" and kind == "execute_reply":
                    reply = msg["content"]
                    for task in pending:
                        task.cancel()  # the cell is over (e.g. interrupted inside a call)
                elif name == "stdin" and kind == "input_request":
                    prompt = str(msg["content"].get("prompt", ""))
                    if prompt.startswith(MARKER) and bridge is not None:
                        task = asyncio.ensure_future(self._answer(msg, prompt, bridge))
                        pending.add(task)
                        task.add_done_callback(pending.discard)
                    else:
                        self.reply_input(msg, EOF)  # no human at this keyboard
                        eof_replies += 1
                if reply is not None and idle_seen:
                    # A result or error is the cell's last word (measured on Deno: its output
                    # never trails its result), so only a cell without one waits to settle,
                    # longer on a loaded machine (twice the time this cell's first message
                    # took to come) and again after each late message.
                    if self.spec.settle <= 0 or final_seen:
                        break
                    now = time.monotonic()
                    window = max(self.spec.settle, min(SETTLE_MAX, 2 * (first_heard - sent)))
                    settle_until = now + window
            finished = True
            assert reply is not None
            status = "ok" if reply.get("status") == "ok" else "error"
            return Outcome("interrupted" if interrupted else status, reply, eof_replies=eof_replies)
        finally:
            for task in pending:
                task.cancel()
            if not finished:  # our caller was cancelled mid-cell: stop the cell, remember it
                self.abandoned = msg_id
                with contextlib.suppress(Exception):
                    self.interrupt()

    async def _answer(self, request: dict[str, Any], prompt: str, bridge: Bridge) -> None:
        try:
            try:
                payload = json.loads(prompt[len(MARKER) :])
                answer = await bridge(payload)
                text = json.dumps(answer, default=str)
                if self.max_reply is not None and len(text) > self.max_reply:
                    text = json.dumps(_too_big(payload, len(text), self.max_reply))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                text = json.dumps(
                    {"ok": False, "text": f"bridge failed: {type(exc).__name__}: {exc}"}
                )
            with contextlib.suppress(ChannelClosed):
                self.reply_input(request, text)
        finally:
            self._queue.put_nowait(("bridge", None))  # wake the cell loop whatever happened

    def reply_input(self, request: dict[str, Any], value: str) -> None:
        msg = self.client.session.msg("input_reply", {"value": value}, parent=request["header"])
        self.client.stdin_channel.send(msg)

    def _drain_stale(self) -> None:
        keep: list[Event] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event[0] in ("exit", "broken", "lost"):
                keep.append(event)
        for event in keep:
            self._queue.put_nowait(event)

    async def settle_abandoned(self, wait: float) -> bool:
        """After a cancelled call: wait for its cell to stop. False = it did not (replace me)."""
        msg_id, self.abandoned = self.abandoned, None
        end = time.monotonic() + wait
        while (left := end - time.monotonic()) > 0:
            event = await self._next(left)
            if event is None:
                break
            name, msg = event
            if name in ("exit", "broken", "lost"):
                self._queue.put_nowait(event)
                return False
            if (
                name == "iopub"
                and msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
            ):
                return True
        return False

    def interrupt(self) -> None:
        if not self.alive:
            return
        pid = None if self.spec.interrupt_mode == "message" else self._interrupt_pid()
        if pid is None:
            self.client.control_channel.send(self.client.session.msg("interrupt_request", {}))
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)

    def _interrupt_pid(self) -> int | None:
        """The host pid of the kernel itself. Inside a sandbox our child is the launcher
        (bwrap, which would die of SIGINT, taking the kernel along): the kernel is its first
        descendant running another program. None when the kernel is not a host process we can
        see (a container's): its interrupt then goes as a message (ipykernel handles it)."""
        assert self.child is not None
        if self.sandbox is None:
            return self.child.pid
        if self._signal_pid is not None:
            pid, start = self._signal_pid
            fields = stat_fields(pid)
            if fields and len(fields) > 19 and int(fields[19]) == start:
                return pid
        found = inside_pid(self.child.pid, Path(self.child.argv[0]).name)
        self._signal_pid = found
        return found[0] if found else None

    # -- closing -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Ask the kernel to shut down, then kill its whole session. Bounded and idempotent."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        child, client = self.child, self.client
        if child is not None and client is not None and self._exit_code is None:
            with contextlib.suppress(Exception):
                client.control_channel.send(
                    client.session.msg("shutdown_request", {"restart": False})
                )
                await child.wait(1.0)
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=1.0)
        if child is not None:
            await child.aclose(grace=0.2)
        if client is not None:
            with contextlib.suppress(Exception):
                client.stop_channels()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)


def _too_big(payload: Any, size: int, limit: int) -> dict[str, Any]:
    """The answer to a bridge request whose reply the transport cannot carry."""
    text = (
        f"the tools' answer is {size / 2**20:.1f} MB; the connection to this kernel carries "
        f"{limit / 2**20:.0f} MB at most: ask for less (a narrower range, fewer calls)"
    )
    one = {"ok": False, "text": text, "data": None, "images": []}
    batch = payload.get("batch") if isinstance(payload, dict) else None
    return {**one, "results": [one] * len(batch)} if isinstance(batch, list) else one


def how_it_ended(code: int | None) -> str:
    """How a kernel ended, to follow "died": ' with exit code 3', ' (killed by SIGKILL)'."""
    if code is None or code == 0:
        return ""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f" (killed by {signal.Signals(-code).name})"
    return f" with exit code {code}"


_PF_EXITING = 0x4  # the kernel's task flag of a process on its way out


def doomed(pid: int) -> bool:
    """Dead (gone, zombie), exiting, or holding a SIGKILL it has not acted on yet. A kill sent
    just before a call is pending for a while on a loaded machine; a cell sent then is lost."""
    if not os.path.isdir("/proc"):
        return False  # no /proc: the exit watcher alone decides
    fields = stat_fields(pid)
    if not fields or fields[0] in (b"Z", b"X"):
        return True
    if len(fields) > 6 and int(fields[6]) & _PF_EXITING:
        return True
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
    except OSError:
        return True
    kill_bit = 1 << (signal.SIGKILL - 1)
    for line in status.splitlines():
        if line.startswith((b"SigPnd:", b"ShdPnd:")) and int(line.split()[1], 16) & kill_bit:
            return True
    return False


def inside_pid(launcher: int, program: str) -> tuple[int, int] | None:
    """(pid, start time) of the first process from `launcher` down its tree (breadth first)
    that no longer runs the launcher's `program`; None when there is none (yet)."""
    name = program[:15].encode()  # /proc/<pid>/comm keeps 15 bytes
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                fields = stat_fields(entry)
                if fields and len(fields) > 19 and fields[0] not in (b"Z", b"X"):
                    children.setdefault(int(fields[1]), []).append(int(entry))
                    starts[int(entry)] = int(fields[19])
    queue = [launcher]
    while queue:
        pid = queue.pop(0)
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm != name and pid in starts:
            return pid, starts[pid]
        queue += sorted(children.get(pid, ()))
    return None
