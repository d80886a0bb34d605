"""Dart servers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="dart",
        command=("dart", "language-server", "--protocol=lsp"),
        extensions={".dart": "dart"},
        markers=("pubspec.yaml",),
        checker=("dart", "analyze"),
    ),
)
