"""The workers of one run: a queue in front of a concurrency limit, one task per attempt, states
with timestamps, results kept until the run closes, and every attempt stopped by `aclose()`.

States: queued -> running -> settled | failed | killed. vibe_send puts a worker back in the queue
(ahead of the others when it was running: it already had a slot). A kill cancels the attempt's
task; the backend stops its processes on the way out and the pool kills every session the attempt
registered, and every worker the attempt spawned in-process (nested vibe_spawn through the run).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from livetools import Resource, Surface, ToolError, cap_text
from livetools.procs import kill_session

from . import config as vibe_config
from .backend import Backend, WorkerFailure, WorkerRequest, worker_surface

if TYPE_CHECKING:
    from livetools import Run

QUEUED, RUNNING, SETTLED, FAILED, KILLED = "queued", "running", "settled", "failed", "killed"
ACTIVE = frozenset({QUEUED, RUNNING})
KILL_WAIT = 8.0  # for an attempt to stop after its task was cancelled
MAX_KEPT = 200_000  # characters of one result or error kept (head and tail)

# The worker whose attempt is running on this task: a vibe_spawn made inside it is its child.
_CURRENT: ContextVar[str | None] = ContextVar("livetools_vibe_worker", default=None)


def stamp(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


@dataclass(eq=False)
class Worker:
    id: str
    label: str
    tier: str
    brief: str
    surface: Surface
    parent: str | None = None
    messages: list[str] = field(default_factory=list)
    state: str = QUEUED
    queued_at: float = field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    attempts: int = 0
    backend: str | None = None
    result: str | None = None
    error: str | None = None
    sessions: list[int] = field(default_factory=list)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def full_brief(self) -> str:
        if not self.messages:
            return self.brief
        parts = [self.brief.rstrip("\n")]
        for n, message in enumerate(self.messages, 1):
            parts.append(f"--- follow-up {n} ---\n{message.rstrip(chr(10))}")
        return "\n\n".join(parts) + "\n"

    def elapsed(self, now: float | None = None) -> float:
        """Seconds queued (while queued) or running (since the attempt started)."""
        now = time.time() if now is None else now
        start = self.started_at if self.started_at is not None else self.queued_at
        end = self.ended_at if self.ended_at is not None else now
        return max(end - start, 0.0)

    def last_result(self) -> str | None:
        return self.error if self.state == FAILED else self.result

    def to_data(self, result_limit: int | None = None) -> dict[str, Any]:
        last = self.last_result()
        if last is not None and result_limit is not None:
            last = cap_text(last, result_limit, tail=result_limit // 2)
        return {
            "id": self.id,
            "label": self.label,
            "tier": self.tier,
            "state": self.state,
            "elapsed_s": round(self.elapsed(), 3),
            "attempts": self.attempts,
            "backend": self.backend,
            "surface": self.surface.name,
            "parent": self.parent,
            "queued_at": stamp(self.queued_at),
            "started_at": stamp(self.started_at),
            "ended_at": stamp(self.ended_at),
            "result": last if self.state != FAILED else None,
            "error": last if self.state == FAILED else None,
        }

    def _transition(self, state: str) -> None:
        self.state = state
        old, self.changed = self.changed, asyncio.Event()
        old.set()


class WorkerPool(Resource):
    key = "vibe"

    def __init__(self, run: Run) -> None:
        self.run = run
        self.workers: dict[str, Worker] = {}
        self._queue: deque[Worker] = deque()
        self._active: set[asyncio.Task[None]] = set()
        self._config: vibe_config.VibeConfig | None = None
        self._backends: list[Backend] | None = None
        self._problems: list[str] = []
        self._closed = False

    # -- configuration -----------------------------------------------------------------------

    @property
    def config(self) -> vibe_config.VibeConfig:
        if self._config is None:
            import os

            self._config = vibe_config.load(self.run.root, self.run.options, os.environ)
        return self._config

    def backends(self) -> list[Backend]:
        """Asked once per run from the family hook, ordered by priority."""
        if self._backends is None:
            found: list[Backend] = []
            hook = getattr(self.run.host.plugins.pm.hook, "livetools_vibe_backends", None)
            if hook is not None:
                for impl in hook.get_hookimpls():
                    try:
                        offered = impl.function(
                            **{
                                k: v
                                for k, v in (("run", self.run), ("config", self.config))
                                if k in impl.argnames
                            }
                        )
                        items = offered if isinstance(offered, list | tuple) else [offered]
                        found.extend(b for b in items if b is not None)
                    except Exception as exc:
                        self._problems.append(
                            f"plugin {impl.plugin_name}: worker backends failed: "
                            f"{type(exc).__name__}: {exc}"
                        )
            self._backends = sorted(found, key=lambda b: b.priority)
        return self._backends

    def problems(self) -> list[str]:
        return self.config.problems + self._problems

    def _pick(self, request: WorkerRequest) -> Backend:
        backends = self.backends()
        wanted = self.config.backend
        if wanted is not None:
            named = [b for b in backends if b.name == wanted]
            if not named:
                have = ", ".join(b.name for b in backends) or "none"
                raise ToolError(
                    f'the vibe config names backend "{wanted}", which is not installed '
                    f"(backends: {have}); fix `backend` in the vibe config"
                )
            backends = named
        if not backends:
            raise ToolError(
                "no worker backend: configure a worker command ([tool.livetools.vibe] "
                "fast/good in pyproject.toml, or LIVETOOLS_VIBE_COMMAND), or have the harness "
                "pass Ports(workers=...)"
            )
        reasons = []
        for backend in backends:
            why = backend.unavailable(request)
            if why is None:
                return backend
            reasons.append(f"{backend.name}: {why}")
        problems = self.problems()
        extra = f" (config problems: {'; '.join(problems)})" if problems else ""
        raise ToolError(f"cannot start a {request.tier} worker: " + "; ".join(reasons) + extra)

    def _request(self, worker: Worker) -> WorkerRequest:
        return WorkerRequest(
            worker_id=worker.id,
            label=worker.label,
            tier=worker.tier,
            brief=worker.full_brief(),
            surface=worker.surface,
            run=self.run,
            attempt=worker.attempts + 1,
            on_track=worker.sessions.append,
        )

    # -- the operations behind the tools -----------------------------------------------------

    def get(self, worker_id: str) -> Worker:
        worker = self.workers.get(worker_id.strip())
        if worker is None:
            known = ", ".join(self.workers) or "none yet"
            raise ToolError(f'no worker "{worker_id}" in this run; workers: {known} (vibe_list)')
        return worker

    def spawn(self, brief: str, label: str, tier: str, spawner: Surface) -> Worker:
        if self._closed:
            raise ToolError("the run is closing; no new workers")
        worker = Worker(
            id=f"w{len(self.workers) + 1}",
            label=label,
            tier=tier,
            brief=brief,
            surface=worker_surface(spawner),
            parent=_CURRENT.get(),
        )
        self._pick(self._request(worker))  # refuse now, not in a failed worker later
        self.workers[worker.id] = worker
        self._queue.append(worker)
        self._schedule()
        return worker

    async def send(self, worker: Worker, message: str, sender: Surface) -> str:
        """Append `message` and run the worker again; returns the state it had."""
        if self._closed:
            raise ToolError("the run is closing; no new attempts")
        async with worker.lock:
            surface = worker_surface(sender)
            probe = self._request(worker)
            probe.surface = surface
            self._pick(probe)
            previous = worker.state
            worker.messages.append(message)
            worker.surface = surface
            if previous == QUEUED:
                return previous
            old = worker.task if previous == RUNNING else None
            self._requeue(worker, front=old is not None)
            if old is not None:
                await self._stop_attempt(worker, old)
            self._schedule()
            return previous

    async def kill(self, worker: Worker) -> str:
        """Stop `worker` (and the workers it spawned); returns the state it had."""
        async with worker.lock:
            previous = worker.state
            if previous == QUEUED:
                self._queue.remove(worker)
                worker.ended_at = time.time()
                worker._transition(KILLED)
            elif previous == RUNNING:
                task = worker.task
                worker.ended_at = time.time()
                worker._transition(KILLED)
                if task is not None:
                    await self._stop_attempt(worker, task)
        await self._kill_children(worker.id)
        return previous

    async def wait(self, worker: Worker, timeout: float) -> bool:  # noqa: ASYNC109
        """True once the worker has settled, failed or been killed; False after `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while worker.state in ACTIVE:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            changed = worker.changed
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                return worker.state not in ACTIVE
        return True

    # -- scheduling --------------------------------------------------------------------------

    def _requeue(self, worker: Worker, front: bool) -> None:
        worker.queued_at = time.time()
        worker.started_at = worker.ended_at = None
        worker._transition(QUEUED)
        if front:
            self._queue.appendleft(worker)
        else:
            self._queue.append(worker)

    def _schedule(self) -> None:
        while self._queue and len(self._active) < self.config.max_workers and not self._closed:
            self._start(self._queue.popleft())

    def _start(self, worker: Worker) -> None:
        request = self._request(worker)
        worker.attempts = request.attempt
        worker.started_at = time.time()
        worker.ended_at = None
        worker._transition(RUNNING)
        try:
            backend = self._pick(request)
        except ToolError as exc:  # the config allowed it at spawn; a later send changed the surface
            self._finish(worker, request.attempt, FAILED, error=str(exc))
            return
        worker.backend = backend.name
        task = asyncio.get_running_loop().create_task(
            self._attempt(worker, backend, request), name=f"vibe worker {worker.id}"
        )
        worker.task = task
        self._active.add(task)
        # A callback, not the task's `finally`: a task cancelled before its first step never
        # runs its body, and its slot must still be freed.
        task.add_done_callback(self._attempt_done)

    def _attempt_done(self, task: asyncio.Task[None]) -> None:
        self._active.discard(task)
        self._schedule()

    async def _attempt(self, worker: Worker, backend: Backend, request: WorkerRequest) -> None:
        _CURRENT.set(worker.id)
        timeout = self.config.timeout
        try:
            async with asyncio.timeout(timeout):
                text = await backend.run(request)
        except TimeoutError:
            self._finish(
                worker,
                request.attempt,
                FAILED,
                error=f"timed out after {timeout:g}s (vibe config `timeout`); "
                "the worker and its processes were stopped",
            )
        except WorkerFailure as exc:
            detail = f"\nstderr (last lines):\n{exc.detail}" if exc.detail else ""
            self._finish(worker, request.attempt, FAILED, error=f"{exc}{detail}")
        except asyncio.CancelledError:
            pass  # killed, superseded by vibe_send, or the run closed: the canceller set the state
        except Exception as exc:
            self._finish(
                worker,
                request.attempt,
                FAILED,
                error=f"{backend.name} backend failed: {type(exc).__name__}: {exc}",
            )
        else:
            self._finish(worker, request.attempt, SETTLED, result=text)
        finally:
            await asyncio.shield(self._cleanup(worker, request))

    async def _cleanup(self, worker: Worker, request: WorkerRequest) -> None:
        """Whatever the backend left: registered sessions, then workers this attempt spawned."""
        for sid in request.sessions:
            await asyncio.to_thread(kill_session, sid)
        await self._kill_children(worker.id)

    def _finish(
        self,
        worker: Worker,
        attempt: int,
        state: str,
        result: str | None = None,
        error: str | None = None,
    ) -> None:
        if worker.attempts != attempt or worker.state != RUNNING:
            return  # a later attempt or a kill owns the worker now
        worker.ended_at = time.time()
        if state == SETTLED:
            worker.result, worker.error = cap_text(result or "", MAX_KEPT, tail=MAX_KEPT // 2), None
        else:
            worker.error = cap_text(error or "", MAX_KEPT, tail=MAX_KEPT // 2)
        worker._transition(state)

    async def _stop_attempt(self, worker: Worker, task: asyncio.Task[None]) -> None:
        task.cancel()
        await asyncio.wait({task}, timeout=KILL_WAIT)

    async def _kill_children(self, parent: str) -> None:
        children = [w for w in self.workers.values() if w.parent == parent and w.state in ACTIVE]
        if children:
            await asyncio.gather(*(self.kill(child) for child in children))

    # -- resource ----------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        backends = self.backends()
        counts: dict[str, int] = {}
        for worker in self.workers.values():
            counts[worker.state] = counts.get(worker.state, 0) + 1
        usable = any(b.status().get("usable", True) for b in backends)
        out: dict[str, Any] = {
            "usable": usable,
            "backends": {b.name: b.status() for b in backends},
            "max_workers": self.config.max_workers,
            "timeout_s": self.config.timeout,
            "config": self.config.sources or ["defaults"],
            "workers": counts,
        }
        if not usable:
            out["reason"] = (
                "no worker backend: set a worker command ([tool.livetools.vibe] fast/good in "
                "pyproject.toml, [vibe] in .livetools.toml or LIVETOOLS_VIBE_COMMAND)"
            )
        if self.problems():
            out["problems"] = self.problems()
        return out

    async def aclose(self) -> None:
        """Kill every worker (queued ones first, so none starts) and every session they had."""
        self._closed = True
        for worker in list(self._queue):
            worker.ended_at = time.time()
            worker._transition(KILLED)
        self._queue.clear()
        running = [w for w in self.workers.values() if w.state == RUNNING]
        if running:
            await asyncio.gather(*(self.kill(w) for w in running), return_exceptions=True)
        for worker in self.workers.values():
            for sid in worker.sessions:
                await asyncio.to_thread(kill_session, sid)
