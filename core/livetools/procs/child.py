"""An asyncio child process that cannot outlive its run or its host.

Every child gets its own session (so its whole tree, debuggees included, can be found and killed),
PR_SET_PDEATHSIG(SIGKILL) (so it dies with the thread that started it), and a registry entry
mirrored to the reaper (so its grandchildren die with the host too). stderr is drained into a
bounded ring: an undrained pipe blocks a chatty server, and its tail explains a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import functools
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from . import tracking
from .sessions import kill_session, signal_session

_PR_SET_PDEATHSIG = 1
_STREAM_LIMIT = 2**16
_TERM_WAIT = 0.5  # after SIGTERM, before the session-wide SIGKILL
_KILL_WAIT = 1.0  # SIGKILL rounds until the session is empty
_FINISH_WAIT = 0.5  # exit status and the last stderr bytes, after the kill


class ProcessStartError(Exception):
    """The binary could not be executed (missing, not executable, bad working directory)."""


class _StderrRing:
    """The last `max_lines` lines of stderr, also bounded in characters so one huge line or a
    newline-free stream cannot grow without limit."""

    def __init__(self, max_lines: int, max_chars: int = 64 * 1024) -> None:
        self._lines: deque[str] = deque()
        self._chars = 0
        self._partial = b""
        self._max_lines = max(max_lines, 1)
        self._max_chars = max_chars

    def feed(self, data: bytes) -> None:
        *complete, self._partial = (self._partial + data).split(b"\n")
        for raw in complete:
            self._push(raw)
        if len(self._partial) > self._max_chars:
            self._partial = self._partial[-self._max_chars :]

    def _push(self, raw: bytes) -> None:
        line = raw.rstrip(b"\r").decode("utf-8", "replace")[-self._max_chars :]
        self._lines.append(line)
        self._chars += len(line)
        while len(self._lines) > self._max_lines or self._chars > self._max_chars:
            self._chars -= len(self._lines.popleft())

    def tail(self, max_lines: int) -> str:
        lines = list(self._lines)
        if self._partial:
            lines.append(self._partial.decode("utf-8", "replace"))
        return "\n".join(lines[-max_lines:]) if max_lines > 0 else ""


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the child's exit itself: asyncio's Process.wait() also waits for every pipe to close
    (checked on 3.11.7, 3.12, 3.13), which never happens while a grandchild still holds one."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=_STREAM_LIMIT, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc prctl, loaded in the host before any fork (the child only calls it); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _die_with_parent() -> Callable[[], None] | None:
    prctl = _prctl()
    if prctl is None:
        return None
    host = os.getpid()

    def setup() -> None:  # runs in the child between fork and exec
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != host:  # the host died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


def _start_error(binary: str, cwd: Path, exc: OSError) -> str:
    what = exc.strerror or str(exc)
    if exc.filename is not None and str(exc.filename) == str(cwd):
        return f"cannot start {binary!r}: working directory {cwd}: {what}"
    if exc.errno == errno.ENOENT and os.sep not in binary:
        what += " (not found on PATH)"
    return f"cannot start {binary!r}: {what}"


class ChildProcess:
    """A child process in its own session; see the module docstring for the guarantees.

    PDEATHSIG fires when the *thread* that started the child ends, so start children from the
    thread that runs the event loop for as long as they should live (asyncio already does)."""

    def __init__(
        self,
        argv: tuple[str, ...],
        name: str,
        transport: asyncio.SubprocessTransport,
        protocol: _Protocol,
        stderr_lines: int,
    ) -> None:
        self.argv = argv
        self.name = name
        self.pid: int = transport.get_pid()
        self.stdin: asyncio.StreamWriter | None = protocol.stdin
        self.stdout: asyncio.StreamReader | None = protocol.stdout
        self._transport = transport
        self._protocol = protocol
        self._ring = _StderrRing(stderr_lines)
        self._drain: asyncio.Task[None] | None = None
        if protocol.stderr is not None:
            self._drain = asyncio.get_running_loop().create_task(
                self._drain_stderr(protocol.stderr), name=f"stderr of {name} ({self.pid})"
            )
        self._closing: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        stdin: bool = True,
        stdout: bool = True,
        merge_stderr: bool = False,
        stderr_lines: int = 200,
    ) -> ChildProcess:
        """Start `argv` in `cwd`. `env` replaces the environment when given (None inherits).
        Disabled stdin/stdout are /dev/null; `merge_stderr` sends stderr to stdout (no ring)."""
        argv = tuple(str(a) for a in argv)
        if not argv:
            raise ValueError("argv is empty")
        tracking.ensure_reaper()
        loop = asyncio.get_running_loop()
        pipe, devnull = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _Protocol(loop),
                *argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=pipe if stdin else devnull,
                stdout=pipe if stdout else devnull,
                stderr=asyncio.subprocess.STDOUT if merge_stderr else pipe,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
            )
        except OSError as exc:
            raise ProcessStartError(_start_error(argv[0], cwd, exc)) from exc
        child = cls(argv, name or Path(argv[0]).name, transport, protocol, stderr_lines)
        tracking.track(child.pid)  # start_new_session: the session id is the child's pid
        return child

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()

    def stderr_tail(self, max_lines: int = 40) -> str:
        """The last lines the child wrote to stderr (empty when merged into stdout)."""
        return self._ring.tail(max_lines)

    async def wait(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 (a timeout returns None, not an error)
    ) -> int | None:
        """The exit code, or None if the child is still running after `timeout` seconds. On exit,
        waits briefly for the rest of stderr so `stderr_tail()` explains the exit."""
        try:
            await asyncio.wait_for(asyncio.shield(self._protocol.exited), timeout)
        except TimeoutError:
            return None
        if self._drain is not None:
            await asyncio.wait({self._drain}, timeout=_FINISH_WAIT)
        return self.returncode

    async def aclose(self, grace: float = 2.0) -> None:
        """Close stdin, wait up to `grace` s for a voluntary exit, SIGTERM, then SIGKILL the whole
        session. Bounded (about grace + 2 s at worst) and idempotent; keeps going if cancelled.
        `grace=0` skips straight to SIGKILL."""
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self._close(grace))
        await asyncio.shield(self._closing)

    def send_signal(self, sig: int) -> None:
        """Signal the child itself (not its session); quiet when it has already exited."""
        with contextlib.suppress(ProcessLookupError):
            self._transport.send_signal(sig)

    def kill_session(self) -> None:
        """SIGKILL every process of the child's session, synchronously (atexit, signal handlers)."""
        kill_session(self.pid)

    async def _close(self, grace: float) -> None:
        if self.stdin is not None:
            with contextlib.suppress(Exception):
                self.stdin.close()
        exited = self._protocol.exited
        if grace > 0 and not exited.done():
            await asyncio.wait({exited}, timeout=grace)
            if not exited.done():
                with contextlib.suppress(ProcessLookupError):
                    self._transport.send_signal(signal.SIGTERM)
                await asyncio.wait({exited}, timeout=_TERM_WAIT)
        # Always, even after a clean exit: grandchildren may still be running. This polls /proc
        # because the end of a session has no event to await.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _KILL_WAIT
        while signal_session(self.pid) and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        pending = {exited} | ({self._drain} if self._drain else set())
        await asyncio.wait(pending, timeout=_FINISH_WAIT)
        if self._drain is not None and not self._drain.done():
            self._drain.cancel()  # a process outside the session still holds the pipe
        self._transport.close()
        tracking.forget(self.pid)

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_STREAM_LIMIT):
            self._ring.feed(chunk)

    def __repr__(self) -> str:
        return f"<ChildProcess {self.name} pid={self.pid} returncode={self.returncode}>"
