"""Hookspecs of the host. These are all the host itself knows about; a family adds its own
(language servers, adapters, grammars, kernels, worker backends) through `livetools_addhooks`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ..options import Option
    from ..resources import Resource
    from ..run import Run
    from ..tools import Tool

PROJECT = "livetools"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(historic=True)
def livetools_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add a family's hookspecs (`pluginmanager.add_hookspecs(module)`), so third parties can
    implement them without the host knowing the family."""


@hookspec
def livetools_resources(run: Run) -> Resource | list[Resource] | None:
    """Resource discovery: the resources this plugin can connect for `run` (its root,
    conversation id, ports, options). Must be cheap: processes start lazily at call time.
    Return None (or []) when the plugin has nothing for this run, e.g. no question port."""


@hookspec
def livetools_register_tools(register: Callable[[Tool], None], run: Run) -> None:
    """Tool registration: call `register(tool)` per tool. A tool is exposed only while the
    resource it names is connected to the run."""


@hookspec
def livetools_observe_write(
    run: Run, paths: list[Path], notes: list[str]
) -> AbstractAsyncContextManager[Any] | None:
    """Write wrapping: return an async context manager entered before a write of `paths`
    (absolute, inside the run root) and exited after it; append to `notes` on exit to attach
    remarks to the write's result (e.g. newly introduced diagnostics). None = not interested."""


@hookspec
def livetools_options() -> list[Option] | Option | None:
    """The run options this plugin reads, each with its kind, default and one-line doc
    (`livetools.options`). The host checks every run's options against all declarations before
    the run opens: an undeclared name is refused, so declare every option the family reads."""
