"""The command backend: any agent CLI as a worker. The brief goes to its stdin, its final stdout
is the result, a non-zero exit is a failure explained by its stderr tail.

The worker starts through `livetools.sandbox.spawn`: on the host, or inside the run's sandbox (its
cwd the root as the sandbox sees it), in its own session either way, with the spawner's ceiling in
LIVETOOLS_SURFACE and LIVETOOLS_WORKER=1, which every livetools face started inside it obeys. When
an attempt ends (exit, kill, timeout, run closed) its session is killed, and so is every sampled
descendant that left the session (see tree.py). A sandbox launcher such as bwrap is a local
process, so its descendants are visible in /proc and sampled the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from typing import Any

from livetools.procs import ProcessStartError, forget, track
from livetools.sandbox import Process, spawn

from . import tree
from .backend import ENV_SURFACE, ENV_WORKER, Backend, WorkerFailure, WorkerRequest
from .config import VibeConfig

MAX_STDOUT = 1_000_000  # bytes of stdout kept (the end: the final answer comes last)
STDERR_LINES = 20
STDERR_CHARS = 4000
SAMPLE_INTERVALS = (0.05, 0.1, 0.2, 0.4)  # then SAMPLE_INTERVAL: early forks are the likeliest
SAMPLE_INTERVAL = 0.5
ENV_ATTEMPT = "LIVETOOLS_VIBE_ATTEMPT"  # marks every process of one attempt (see tree.marked)
READER_WAIT = 1.0
PLACEHOLDERS = ("tier", "label", "worker_id", "root", "surface", "brief")


def where_to_configure(tier: str, readonly: bool = False) -> str:
    table = "[tool.livetools.vibe.readonly]" if readonly else "[tool.livetools.vibe]"
    env = "" if readonly else f", or LIVETOOLS_VIBE_{tier.upper()}"
    return (
        f"set {tier} (or command) = [argv...] under {table} in pyproject.toml "
        f"(or [vibe{'.readonly' if readonly else ''}] in .livetools.toml){env}"
    )


class CommandBackend(Backend):
    name = "command"
    priority = 100

    def __init__(self, config: VibeConfig) -> None:
        self.config = config

    def template(self, request: WorkerRequest) -> list[str] | None:
        """The argv template for this attempt: the read-only one for a restricted spawner."""
        if not request.may_write:
            readonly = self.config.readonly.get(request.tier)
            if readonly is not None or not self.config.honours_surface:
                return readonly
        return self.config.templates.get(request.tier)

    def unavailable(self, request: WorkerRequest) -> str | None:
        if request.tier not in self.config.templates and request.tier not in self.config.readonly:
            return f"no command for tier {request.tier!r}: {where_to_configure(request.tier)}"
        if self.template(request) is None:
            return (
                f"this caller's surface ({request.surface_env()}) may not write, and the "
                f"{request.tier} command is not known to respect that: "
                f"{where_to_configure(request.tier, readonly=True)} with a read-only invocation "
                "of the worker, or set honours_surface = true if the worker edits only through "
                "livetools serve/session"
            )
        return None

    def argv(self, request: WorkerRequest) -> list[str]:
        template = self.template(request)
        assert template is not None
        values = {
            "tier": request.tier,
            "label": request.label,
            "worker_id": request.worker_id,
            "root": str(request.root),
            "surface": request.surface_env(),
            "brief": request.brief,
        }
        out = []
        for arg in template:
            for key in PLACEHOLDERS:
                arg = arg.replace("{" + key + "}", values[key])
            out.append(arg)
        return out

    def env(self, request: WorkerRequest, attempt: str = "") -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.config.env)
        env.update(
            {
                ENV_SURFACE: request.surface_env(),
                ENV_WORKER: "1",
                "LIVETOOLS_WORKER_ID": request.worker_id,
                "LIVETOOLS_VIBE_TIER": request.tier,
                ENV_ATTEMPT: attempt,
            }
        )
        return env

    async def run(self, request: WorkerRequest) -> str:
        argv = self.argv(request)
        attempt = f"{request.worker_id}-{secrets.token_hex(8)}"
        try:
            child = await spawn(
                request.run.sandbox,
                argv,
                cwd=request.root,
                env=self.env(request, attempt),
                name=f"vibe {request.worker_id}",
            )
        except ProcessStartError as exc:
            raise WorkerFailure(f"{exc}; check the vibe config's {request.tier} command") from exc
        request.track(child.pid)
        known: set[tree.Ident] = set()
        escaped: set[int] = set()
        stdout = bytearray()
        dropped = [0]
        tasks = [
            asyncio.create_task(_feed(child, request.brief)),
            asyncio.create_task(_sample(child.pid, known, escaped)),
        ]
        reader = asyncio.create_task(_read(child, stdout, dropped))
        try:
            code = await child.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.shield(_stop(child, known, escaped, reader, attempt))
        text = stdout.decode("utf-8", "replace").strip()
        if dropped[0]:
            text = f"[first {dropped[0]} bytes of stdout dropped]\n{text}"
        if code == 0:
            return text
        code = code if code is not None else -1
        why = f"exit {code}" if code >= 0 else f"killed by signal {-code}"
        tail = child.stderr_tail(STDERR_LINES)[-STDERR_CHARS:]
        if not tail and text:
            tail = "(stderr empty; stdout ends with)\n" + text[-STDERR_CHARS:]
        raise WorkerFailure(why, tail)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for tier in ("fast", "good"):
            out[tier] = self.config.templates.get(tier) or "not configured"
            if tier in self.config.readonly:
                out[f"{tier} (readonly)"] = self.config.readonly[tier]
        out["usable"] = bool(self.config.templates or self.config.readonly)
        if not out["usable"]:
            out["reason"] = "no worker command: " + where_to_configure("fast")
        return out


async def _feed(child: Process, brief: str) -> None:
    if child.stdin is None:
        return
    with contextlib.suppress(ConnectionError, OSError):
        child.stdin.write(brief.encode("utf-8"))
        await child.stdin.drain()
        child.stdin.close()


async def _read(child: Process, into: bytearray, dropped: list[int]) -> None:
    if child.stdout is None:
        return
    while chunk := await child.stdout.read(65536):
        into += chunk
        if len(into) > MAX_STDOUT:
            cut = len(into) - MAX_STDOUT
            del into[:cut]
            dropped[0] += cut


async def _sample(pid: int, known: set[tree.Ident], escaped: set[int]) -> None:
    """Remember the worker's descendants, so those that leave its session die with it; the
    sessions they lead go to the host's reaper too, so they die even if the host is killed."""
    intervals = iter(SAMPLE_INTERVALS)
    while True:
        found = await asyncio.to_thread(tree.sample, pid)
        known |= {(member, start) for member, (_sid, start) in found.items()}
        for member, (sid, _start) in found.items():
            if sid == member and member not in escaped:
                escaped.add(member)
                track(member)
        await asyncio.sleep(next(intervals, SAMPLE_INTERVAL))


async def _stop(
    child: Process,
    known: set[tree.Ident],
    escaped: set[int],
    reader: asyncio.Task[None],
    attempt: str,
) -> None:
    """Kill the attempt's session and every known escapee — sampled, or found by the attempt's
    environment mark when it left the tree before a sample saw it; collect what stdout is left."""
    table = await asyncio.to_thread(tree.snapshot)
    known |= tree.descendants({child.pid}, table)
    known |= await asyncio.to_thread(tree.marked, f"{ENV_ATTEMPT}={attempt}", table)
    await child.aclose(grace=0)
    if known:
        await asyncio.to_thread(tree.kill_tree, known)
    for sid in escaped:
        forget(sid)
    await asyncio.wait({reader}, timeout=READER_WAIT)
    if not reader.done():
        reader.cancel()
