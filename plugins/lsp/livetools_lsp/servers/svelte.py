"""Svelte components: svelte-language-server (`svelteserver`), TypeScript inside through its own
svelte2tsx."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="svelte-language-server",
        command=("svelteserver", "--stdio"),
        extensions={".svelte": "svelte"},
        warmup=10.0,
    ),
)
