"""Go servers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="gopls",
        command=("gopls",),
        probe=("gopls", "version"),
        extensions={".go": "go"},
        markers=("go.work", "go.mod"),
        checker=("go", "vet", "./..."),
        symbol_limit=100,
    ),
)
