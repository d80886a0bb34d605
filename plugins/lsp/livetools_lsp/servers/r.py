"""R servers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="arity",
        command=("arity", "lsp"),
        extensions={".R": "r", ".r": "r"},
        # Its linter, the same rules as its diagnostics (findings go to stderr; exit 1 = found).
        checker=("arity", "lint", "--output", "concise", "--color", "never", "."),
    ),
)
