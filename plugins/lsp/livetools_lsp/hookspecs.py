"""The family's own hook: a plugin adds (or replaces, by id) language servers by returning specs.

from livetools import hookimpl
from livetools_lsp import ServerSpec

@hookimpl
def livetools_lsp_servers():
    return ServerSpec(id="gleam", command=("gleam", "lsp"), extensions={".gleam": "gleam"},
                      markers=("gleam.toml",))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from livetools import hookspec

if TYPE_CHECKING:
    from livetools import Run

    from .spec import ServerSpec


@hookspec
def livetools_lsp_servers(run: Run) -> ServerSpec | list[ServerSpec] | None:
    """Language servers this plugin offers for `run`. Earlier answers win a tie for a file type;
    the built-ins answer last, and a spec with a built-in's id replaces it."""
