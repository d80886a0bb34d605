"""The vibe family's own hook: which worker backends exist. A third party adds one (a hosted agent
API, a container runner) with a tiny plugin implementing `livetools_vibe_backends`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from livetools import hookspec

if TYPE_CHECKING:
    from livetools import Run

    from .backend import Backend
    from .config import VibeConfig


@hookspec
def livetools_vibe_backends(run: Run, config: VibeConfig) -> Backend | list[Backend] | None:
    """The worker backends this plugin offers for `run` (vibe mode is on). Called once per run,
    at the first vibe call; `config` is the run's merged vibe config. Cheap: start nothing here.
    The pool uses the backend named by `config.backend`, else the first by `priority` that can
    run the attempt (`Backend.unavailable(request) is None`)."""
