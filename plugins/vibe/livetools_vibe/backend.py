"""What a worker backend is: something that runs one attempt of a brief at a tier and returns the
result text. Backends come from the family hook `livetools_vibe_backends` (see hookspecs.py); the
pool picks one per attempt. Stopping an attempt is cancelling it: a backend must let
`CancelledError` through and stop everything it started (the pool also kills every session the
attempt registered with `request.track`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import Result, Surface, Tier
from livetools.tiers import inherited_ceiling

if TYPE_CHECKING:
    from livetools import Run

ENV_SURFACE = "LIVETOOLS_SURFACE"  # honoured by the CLI faces (serve, session, tools, call)
ENV_WORKER = "LIVETOOLS_WORKER"  # no face inside a worker offers ask_user
WORKER_EXCLUDED = frozenset({"ask_user"})  # a worker's questions go through whoever spawned it
WORKER_CEILING = Surface("worker", frozenset(Tier), WORKER_EXCLUDED)


class WorkerFailure(Exception):
    """An attempt that ended without a result: `str(exc)` says why in one line, `detail` holds
    what explains it (a stderr tail)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


@dataclass
class WorkerRequest:
    """One attempt of a worker, as a backend sees it.

    `brief` is the whole brief: the original plus every vibe_send message in order. `surface` is
    the worker's own surface: its spawner's ceiling with ask_user removed. An in-process agent
    must reach tools only through `call`/`schemas` (or `run.call(..., surface=surface)`)."""

    worker_id: str
    label: str
    tier: str
    brief: str
    surface: Surface
    run: Run
    attempt: int = 1
    sessions: list[int] = field(default_factory=list)
    on_track: Callable[[int], None] | None = field(default=None, repr=False)

    @property
    def root(self) -> Path:
        return self.run.root

    @property
    def may_write(self) -> bool:
        """Whether the worker may do everything an agent may (write and exec tiers)."""
        return self.surface.tiers >= frozenset(Tier)

    def surface_env(self) -> str:
        """The ceiling as LIVETOOLS_SURFACE spells it, exclusions included."""
        return self.surface.spec()

    def track(self, sid: int) -> None:
        """Register the session id of a process this attempt started: killed with the worker."""
        self.sessions.append(sid)
        if self.on_track is not None:
            self.on_track(sid)

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Result:
        """Call a tool of the run as this worker (its surface, never more)."""
        return await self.run.call(name, args or {}, surface=self.surface)

    def schemas(self, format: str = "mcp") -> list[dict[str, Any]]:
        """The tools this worker may use, in a harness's schema format."""
        return self.run.schemas(self.surface, format)


class Backend:
    """Base class of worker backends. `priority` orders the automatic choice (lower first): the
    harness's own agent (0) before third-party backends (50) before the command backend (100).
    A config `backend = "<name>"` picks one by name instead."""

    name: str = ""
    priority: int = 50

    def unavailable(self, request: WorkerRequest) -> str | None:
        """Why this backend cannot run `request` (e.g. no command for its tier), or None."""
        return None

    async def run(self, request: WorkerRequest) -> str:
        """Run one attempt; return the result text, raise WorkerFailure when it fails."""
        raise NotImplementedError

    def status(self) -> dict[str, Any]:
        return {}


# `async def agent(request) -> str` (a plain function works too; its value is used as is).
WorkerAgent = Callable[[WorkerRequest], Awaitable[Any] | Any]


class CallableBackend(Backend):
    """An in-process harness agent: `Ports(workers=agent)` with `async def agent(request:
    WorkerRequest) -> str`. Returning a livetools Result works too (is_error = failed); raising
    is a failure with the exception's text; a kill cancels the agent's task."""

    priority = 0

    def __init__(self, agent: WorkerAgent, name: str = "harness") -> None:
        self.agent = agent
        self.name = name

    async def run(self, request: WorkerRequest) -> str:
        out = self.agent(request)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, Result):
            if out.is_error:
                raise WorkerFailure(out.text)
            return out.text
        return "" if out is None else str(out)

    def status(self) -> dict[str, Any]:
        return {"usable": True, "agent": getattr(self.agent, "__qualname__", repr(self.agent))}


def backends_from_port(workers: Any) -> list[Backend]:
    """`Ports(workers=...)`: an async callable, a Backend, or a list of them."""
    if workers is None:
        return []
    items: Iterable[Any] = workers if isinstance(workers, list | tuple) else [workers]
    out: list[Backend] = []
    for index, item in enumerate(items):
        if isinstance(item, Backend):
            out.append(item)
        elif callable(item):
            out.append(CallableBackend(item, "harness" if index == 0 else f"harness{index + 1}"))
        else:
            raise TypeError(
                f"Ports(workers=...) item {item!r} is neither a Backend nor an async callable "
                "taking a WorkerRequest"
            )
    return out


def worker_surface(spawner: Surface, environ: Mapping[str, str] | None = None) -> Surface:
    """The surface a worker gets: never more than its spawner's (nor than a ceiling this process
    itself inherited), and never ask_user."""
    surface = WORKER_CEILING.capped_by(spawner)
    ceiling = inherited_ceiling(os.environ if environ is None else environ)
    return surface if ceiling is None else surface.capped_by(ceiling)
