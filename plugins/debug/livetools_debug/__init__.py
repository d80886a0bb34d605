"""livetools plugin `debug`: the `debug` tool over the Debug Adapter Protocol.

Adapters come from the family hook `livetools_debug_adapters` (see hookspecs.py); this module
implements it for the built-ins (debugpy, lldb, delve, dart). Nothing starts at import: the
adapter process starts at `launch`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from livetools import hookimpl
from livetools.options import Check, Number, Option, Table

from . import hookspecs

if TYPE_CHECKING:
    from livetools import Run, Tool

    from .adapters import Adapter


@hookimpl
def livetools_addhooks(pluginmanager: Any) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def livetools_options() -> list[Option]:
    return [
        Option("debug_ttl", Number(), 1800.0, "seconds an idle debug session lives"),
        Option("debug_wait", Number(), 10.0, "seconds continue/step/pause wait for a stop"),
        Option(
            "debug_launch_wait", Number(), 30.0, "seconds launch/attach wait for the first stop"
        ),
        Option(
            "debug_request_timeout", Number(), 10.0, "seconds one request to the adapter may take"
        ),
        Option(
            "debug.adapters",
            Table(Check(_entry, "a table with command, extensions, launch, …"), key="NAME"),
            {},
            "debug adapters by configuration (docs/configuration.md)",
        ),
    ]


def _entry(value: Any) -> Any:
    from .configured import check_entry

    return check_entry(value)


@hookimpl
def livetools_debug_adapters(run: Run) -> list[Adapter]:
    from .adapters import BUILTIN

    return list(BUILTIN)


@hookimpl
def livetools_resources(run: Run) -> Any:
    if not run.root or not run.conversation_id:
        return None
    from .supervisor import DebugSupervisor

    return DebugSupervisor(run)


@hookimpl
def livetools_register_tools(register: Callable[[Tool], None], run: Run) -> None:
    from .tool import make_tool

    register(make_tool())
