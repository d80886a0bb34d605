"""fish shell servers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="fish-lsp",
        command=("fish-lsp", "start"),
        extensions={".fish": "fish"},
        # fish's own syntax check (fish-lsp's diagnostics are its own lints; it runs this one
        # only as an experimental code 9999).
        checker=("fish", "--no-execute", "{file}"),
    ),
)
