"""The live runs of one `serve --http` process: opening (roots confined to `--runs-under`),
lookup by id, idle expiry, the run limit, and closing every run within a bound at shutdown.

Each run lives in a task of the registry's task group: the task enters the face's hosting and
the session manager, waits to be told to stop, and closes the run on the way out, so the SDK's
task groups are entered and left in one task."""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from ....host import Host
from ....options import OptionError
from ....run import Run
from ....sandbox import BwrapSandbox
from ....sandbox.options import SandboxOptionError
from ....tiers import Surface
from .face import HttpFace
from .metrics import Metrics

log = logging.getLogger("livetools.serve.http")

SINGLE_ID = "default"
DEFAULT_TTL = 30 * 60.0
DEFAULT_MAX_RUNS = 64
CLOSE_BOUND = 20.0  # seconds all runs together may take to close at shutdown


class RunRefused(Exception):
    """A run cannot be opened; `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(eq=False)
class RunSlot:
    id: str
    root: Path
    surface_name: str
    conversation_id: str
    run: Run
    face: HttpFace
    token: str | None
    last_seen: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    closing: bool = False
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)

    def idle_seconds(self, now: float | None = None) -> float:
        if self.in_flight:
            return 0.0
        return max(0.0, (now if now is not None else time.monotonic()) - self.last_seen)

    @contextlib.contextmanager
    def serving(self) -> Any:
        """Around one HTTP request of this run: it is not idle while a request is open."""
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self.last_seen = time.monotonic()


class Runs:
    def __init__(
        self,
        host: Host,
        metrics: Metrics,
        *,
        runs_under: Path | None = None,
        instance: str | None = None,
        ttl: float | None = DEFAULT_TTL,
        max_runs: int = DEFAULT_MAX_RUNS,
        max_body: int = 4 * 1024 * 1024,
        close_bound: float = CLOSE_BOUND,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        self.host = host
        # The command line's run options: the base of every created run's. Its sandbox is the
        # operator's boundary, so a client's options cannot name another one.
        self.defaults = dict(defaults or {})
        self.metrics = metrics
        self.runs_under = runs_under.resolve() if runs_under is not None else None
        self.instance = instance
        self.ttl = ttl
        self.max_runs = max_runs
        self.max_body = max_body
        self.close_bound = close_bound
        self.closed_calls = 0
        self._slots: dict[str, RunSlot] = {}
        self._tasks: anyio.abc.TaskGroup | None = None
        self._opening = 0

    # -- lifetime of the registry --------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """While the app runs: the runs' tasks and the idle reaper; at the end every run closes
        (together, within `close_bound`)."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            if self.ttl is not None:
                tasks.start_soon(self._reap)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self.close_all("shutdown")
                self._tasks = None
                tasks.cancel_scope.cancel()

    async def close_all(self, reason: str) -> None:
        slots = list(self._slots.values())
        with anyio.move_on_after(self.close_bound):
            async with anyio.create_task_group() as closing:
                for slot in slots:
                    closing.start_soon(self.close, slot.id, reason)
        left = [s.id for s in slots if not s.done.is_set()]
        if left:
            log.warning(
                "%d runs did not close within %.0f s: %s", len(left), self.close_bound, left
            )

    async def _reap(self) -> None:
        assert self.ttl is not None
        period = max(0.05, min(self.ttl / 4, 30.0))
        while True:
            await anyio.sleep(period)
            now = time.monotonic()
            for slot in list(self._slots.values()):
                if slot.id != SINGLE_ID and slot.idle_seconds(now) > self.ttl:
                    log.info("run %s idle for %.0f s: closing it", slot.id, slot.idle_seconds(now))
                    assert self._tasks is not None
                    self._tasks.start_soon(self.close, slot.id, "idle")

    # -- runs --------------------------------------------------------------------------------

    def get(self, run_id: str) -> RunSlot | None:
        slot = self._slots.get(run_id)
        return None if slot is None or slot.closing else slot

    def list(self) -> list[RunSlot]:
        return [s for s in self._slots.values() if not s.closing]

    def confine(self, root: str) -> Path:
        """The run root for a request's `root`: relative to `--runs-under` or absolute inside
        it, an existing directory; anything else is refused (403 outside, 400 not a dir)."""
        assert self.runs_under is not None
        path = Path(root)
        if not path.is_absolute():
            path = self.runs_under / path
        resolved = path.resolve()
        if resolved != self.runs_under and not resolved.is_relative_to(self.runs_under):
            raise RunRefused(403, f"root {root!r}: not under the server's --runs-under folder")
        if not resolved.is_dir():
            raise RunRefused(400, f"root {root!r}: not a directory under --runs-under")
        return resolved

    def options_for(self, asked: dict[str, Any]) -> dict[str, Any]:
        """A created run's options: the server's, then the client's. The client may pick no
        sandbox or bwrap only where the server set none; a launcher is the operator's to give.
        RunRefused (400) says which, as it does for any option the families do not accept
        (the sentence `call` and `session` print)."""
        try:
            asked = self.host.check_options(asked)
        except OptionError as exc:
            raise RunRefused(400, str(exc)) from None
        if "sandbox" not in asked:
            return {**self.defaults, **asked}
        wanted, mine = asked["sandbox"], self.defaults.get("sandbox")
        if mine is not None and wanted != mine:
            raise RunRefused(400, "options.sandbox: every run here starts in the server's sandbox")
        if mine is None and wanted not in (None, "none", "bwrap"):
            raise RunRefused(
                400, 'options.sandbox: "bwrap" or "none" (a launcher is the server\'s)'
            )
        if wanted == "bwrap" and (missing := BwrapSandbox.available()):
            raise RunRefused(400, f"options.sandbox: {missing}")
        return {**self.defaults, **asked}

    async def open(
        self,
        root: Path,
        surface: Surface,
        surface_name: str,
        *,
        conversation_id: str | None = None,
        options: dict[str, Any] | None = None,
        run_id: str | None = None,
        token: str | None = None,
        mint_token: bool = True,
    ) -> RunSlot:
        if self._tasks is None:
            raise RunRefused(503, "the server is shutting down")
        if run_id is None and len(self._slots) + self._opening >= self.max_runs:
            self.metrics.refused["max_runs"] += 1
            raise RunRefused(503, f"{self.max_runs} runs are open (the server's --max-runs)")
        self._opening += 1
        try:
            try:
                run = await self.host.open_run(
                    root, conversation_id=conversation_id, options=options
                )
            except (OptionError, SandboxOptionError) as exc:
                raise RunRefused(400, str(exc)) from None
            try:
                face = HttpFace(
                    run,
                    surface,
                    session_idle_timeout=self.ttl or DEFAULT_TTL,
                    max_sessions=100,
                    max_body=self.max_body,
                )
                if run_id is None:
                    run_id = new_run_id(self.instance)
                if token is None and mint_token:
                    token = secrets.token_urlsafe(32)
                slot = RunSlot(run_id, root, surface_name, run.conversation_id, run, face, token)
                await self._tasks.start(self._live, slot)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await run.aclose()
                raise
        finally:
            self._opening -= 1
        self._slots[slot.id] = slot
        self.metrics.runs_opened += 1
        self.metrics.runs_open = len(self._slots)
        return slot

    async def _live(self, slot: RunSlot, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            async with slot.face.hosting(), slot.face.manager.run():
                task_status.started()
                await slot.stop.wait()
        finally:
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(self.close_bound):
                    await slot.run.aclose()
                slot.done.set()

    async def close(self, run_id: str, reason: str = "deleted") -> bool:
        slot = self._slots.get(run_id)
        if slot is None:
            return False
        first = not slot.closing
        slot.closing = True
        slot.stop.set()
        await slot.done.wait()
        if first:
            self._slots.pop(run_id, None)
            self.closed_calls += slot.face.calls
            self.metrics.runs_closed[reason] += 1
            self.metrics.runs_open = len(self._slots)
        return True

    def tool_calls(self) -> int:
        return self.closed_calls + sum(s.face.calls for s in self._slots.values())


def new_run_id(instance: str | None) -> str:
    """128 random bits, prefixed with the instance name so a proxy routes by path."""
    token = secrets.token_hex(16)
    return f"{instance}-{token}" if instance else token
