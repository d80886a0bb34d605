"""Rust servers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="rust-analyzer",
        command=("rust-analyzer",),
        extensions={".rs": "rust"},
        markers=("Cargo.toml",),
        checker=("cargo", "check", "--quiet", "--message-format=short"),
        warmup=15.0,
        first_diagnostics=20.0,
    ),
)
