"""PHP: intelephense (the free features: navigation, hover, outline, diagnostics)."""

from __future__ import annotations

from ..spec import ServerSpec
from .json import NODE_PROBE

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="intelephense",
        command=("intelephense", "--stdio"),
        # `--version` is not an option: it prints its bundle and exits 1.
        probe=NODE_PROBE,
        extensions={".php": "php", ".phtml": "php"},
        checker=("php", "-l", "{file}"),
        warmup=15.0,
        await_progress=True,  # it indexes the workspace as one "indexing" progress
    ),
)
