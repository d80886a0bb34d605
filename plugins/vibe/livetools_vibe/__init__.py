"""livetools plugin `vibe`: background workers (vibe_spawn, vibe_send, vibe_wait, vibe_kill,
vibe_list), live only while vibe mode is on for the run (`--vibe`, or the run option
`{"vibe": True}`).

Worker backends come from the family hook `livetools_vibe_backends` (hookspecs.py). This module
implements it for the built-ins: the harness's own agent passed as `Ports(workers=...)` (the
callable backend) and any CLI configured as the command backend. Nothing starts at import or at
run open: the first vibe_spawn reads the config and starts a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from livetools import hookimpl
from livetools.options import Flag, Option, Settings

from . import hookspecs
from .backend import Backend, CallableBackend, WorkerFailure, WorkerRequest

if TYPE_CHECKING:
    from livetools import Run, Tool

    from .config import VibeConfig
    from .pool import WorkerPool

__all__ = [
    "Backend",
    "CallableBackend",
    "WorkerFailure",
    "WorkerRequest",
    "disable",
    "enable",
    "vibe_mode",
]


def vibe_mode(run: Run) -> bool:
    return run.options.get("vibe") is True


@hookimpl
def livetools_addhooks(pluginmanager: Any) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def livetools_options() -> list[Option]:
    return [
        Option("vibe", Flag(), False, "true turns vibe mode on (the vibe_* tools)"),
        Option(
            "vibe_config",
            Settings(),
            None,
            "worker settings over the files' [vibe] tables (docs/vibe.md)",
        ),
    ]


@hookimpl
def livetools_vibe_backends(run: Run, config: VibeConfig) -> list[Backend]:
    from .backend import backends_from_port
    from .command import CommandBackend

    return [*backends_from_port(run.ports.workers), CommandBackend(config)]


@hookimpl
def livetools_resources(run: Run) -> Any:
    if not vibe_mode(run):
        return None
    from .pool import WorkerPool

    return WorkerPool(run)


@hookimpl
def livetools_register_tools(register: Callable[[Tool], None], run: Run) -> None:
    # The tools name the "vibe" resource: without vibe mode it is not connected, so they are in
    # no schema and refused as unknown tools. `enable(run)` connects it mid-run.
    from .tools import make_tools

    for tool in make_tools():
        register(tool)


def enable(run: Run) -> WorkerPool:
    """Switch vibe mode on mid-run: the vibe tools appear (tool-change listeners are told)."""
    from .pool import WorkerPool

    run.options["vibe"] = True
    pool = run.resource("vibe")
    if pool is None:
        pool = WorkerPool(run)
        run.connect(pool)
    return pool


async def disable(run: Run) -> None:
    """Switch vibe mode off mid-run: every worker is killed and the vibe tools disappear."""
    run.options["vibe"] = False
    await run.disconnect("vibe")
