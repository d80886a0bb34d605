"""The five vibe tools. All read tier: what a worker may change is decided by the worker's own
surface, which is capped by its spawner's (see backend.worker_surface)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from livetools import CallContext, Result, Tier, Tool, cap_items, cap_text

from .pool import FAILED, KILLED, QUEUED, RUNNING, SETTLED, Worker, WorkerPool

MAX_WAIT = 1800.0
WAIT_RESULT_CHARS = 12_000
LIST_RESULT_CHARS = 160
LIST_MAX = 50


def _lean(schema: dict[str, Any]) -> None:
    """Every schema byte is paid on every model call: defaults are documented by behaviour,
    bounds are checked by validators (which the schema does not show), empty properties go."""
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)
    if not schema.get("properties"):
        schema.pop("properties", None)


class _Args(BaseModel):
    model_config = ConfigDict(json_schema_extra=_lean)


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _wait_bound(value: float) -> float:
    if not 0 <= value <= MAX_WAIT:
        raise ValueError(f"must be between 0 and {MAX_WAIT:g} seconds")
    return value


Text = Annotated[str, AfterValidator(_nonblank)]


class SpawnArgs(_Args):
    brief: Text
    label: Text
    tier: Literal["fast", "good"] = "good"


class SendArgs(_Args):
    worker_id: str
    message: Text


class WaitArgs(_Args):
    worker_id: str
    timeout_seconds: Annotated[float, AfterValidator(_wait_bound)] = 60.0


class KillArgs(_Args):
    worker_id: str


class ListArgs(_Args):
    pass


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _pool(ctx: CallContext) -> WorkerPool:
    return ctx.resource


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}… (+{len(flat) - limit} chars)"


def _started(pool: WorkerPool, worker: Worker) -> str:
    if worker.state == QUEUED:
        ahead = sum(1 for w in pool.workers.values() if w.state == RUNNING)
        return f"queued ({ahead} running, limit {pool.config.max_workers})"
    return f"{worker.state} ({worker.backend})"


async def vibe_spawn(ctx: CallContext, args: SpawnArgs) -> Result:
    pool = _pool(ctx)
    worker = pool.spawn(args.brief, _one_line(args.label, 80), args.tier, ctx.surface)
    text = f"{worker.id} {_started(pool, worker)}: {worker.label} [{worker.tier}]"
    return Result(text=text, data=worker.to_data())


async def vibe_send(ctx: CallContext, args: SendArgs) -> Result:
    pool = _pool(ctx)
    worker = pool.get(args.worker_id)
    previous = await pool.send(worker, args.message, ctx.surface)
    n = len(worker.messages)
    how = "stopped and re-queued" if previous == RUNNING else f"was {previous}"
    text = f"{worker.id} follow-up {n} added ({how}); now {_started(pool, worker)}"
    return Result(text=text, data={"previous": previous, **worker.to_data()})


async def vibe_wait(ctx: CallContext, args: WaitArgs) -> Result:
    pool = _pool(ctx)
    worker = pool.get(args.worker_id)
    done = await pool.wait(worker, args.timeout_seconds)
    data = {"timed_out": not done, **worker.to_data(WAIT_RESULT_CHARS)}
    took = duration(worker.elapsed())
    if not done:
        text = (
            f"{worker.id} still {worker.state} after waiting {args.timeout_seconds:g}s "
            f"({worker.state} {took}); wait again later, or vibe_kill it"
        )
    elif worker.state == SETTLED:
        body = cap_text(worker.result or "", WAIT_RESULT_CHARS, tail=WAIT_RESULT_CHARS // 2)
        text = f"{worker.id} settled in {took}:\n{body or '(no output)'}"
    elif worker.state == FAILED:
        body = cap_text(worker.error or "", WAIT_RESULT_CHARS, tail=WAIT_RESULT_CHARS // 2)
        text = f"{worker.id} failed after {took}: {body}"
    else:
        text = f"{worker.id} was killed after {took}; vibe_send restarts it with a follow-up"
    return Result(text=text, data=data)


async def vibe_kill(ctx: CallContext, args: KillArgs) -> Result:
    pool = _pool(ctx)
    worker = pool.get(args.worker_id)
    previous = await pool.kill(worker)
    took = duration(worker.elapsed())
    if previous in (QUEUED, RUNNING):
        text = f"killed {worker.id} (was {previous}, {took}) and every process it started"
    else:
        text = f"{worker.id} had already {'been killed' if previous == KILLED else previous}; "
        text += "nothing to stop"
    return Result(text=text, data={"previous": previous, **worker.to_data()})


async def vibe_list(ctx: CallContext, args: ListArgs) -> Result:
    pool = _pool(ctx)
    workers = list(pool.workers.values())
    if not workers:
        return Result(text="no workers yet; start one with vibe_spawn", data={"workers": []})
    kept, note = cap_items(workers[::-1], LIST_MAX)  # newest first
    lines = []
    for w in kept:
        last = w.last_result()
        shown = f": {_one_line(last, LIST_RESULT_CHARS)}" if last else ""
        lines.append(
            f"{w.id} {w.tier} {w.state} {duration(w.elapsed())} {_one_line(w.label, 80)}{shown}"
        )
    if note:
        lines.append(note)
    data = {"workers": [w.to_data(LIST_RESULT_CHARS) for w in kept], "truncated": note}
    return Result(text="\n".join(lines), data=data)


def make_tools() -> list[Tool]:
    def tool(name: str, args: type[BaseModel], handler, description: str, **kw) -> Tool:  # type: ignore[no-untyped-def]
        return Tool(name, Tier.READ, args, handler, description, resource="vibe", **kw)

    return [
        tool(
            "vibe_spawn",
            SpawnArgs,
            vibe_spawn,
            "Start a background worker; returns its id. fast: clear spec; good: judgement.",
            timeout=30.0,
        ),
        tool("vibe_send", SendArgs, vibe_send, "Append to its brief; rerun.", timeout=30.0),
        tool("vibe_wait", WaitArgs, vibe_wait, "Block until it settles.", timeout=MAX_WAIT + 30),
        tool("vibe_kill", KillArgs, vibe_kill, "Kill its process tree.", timeout=30.0),
        tool("vibe_list", ListArgs, vibe_list, "Workers: state, result.", timeout=10.0),
    ]
