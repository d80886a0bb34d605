"""The debug family's own hook: which debug adapters exist. A third party adds one (a Zig or a
Dart adapter) with a tiny plugin implementing `livetools_debug_adapters`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from livetools import hookspec

if TYPE_CHECKING:
    from livetools import Run

    from .adapters import Adapter


@hookspec
def livetools_debug_adapters(run: Run) -> Adapter | list[Adapter] | None:
    """The debug adapters this plugin offers for `run`. Cheap: nothing is started or probed here;
    detection (root marker, binary, health probe) runs when the `debug` tool needs an adapter.
    A later plugin's adapter with the same id replaces an earlier one."""
