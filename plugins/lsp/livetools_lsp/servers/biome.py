"""Biome as a linter (diagnostics only) beside the navigating servers of JavaScript, TypeScript,
JSON and CSS, where the project configures it (biome.json): it never takes navigation from
typescript-language-server or vscode-json/css-language-server.

`biome lsp-proxy` connects to Biome's daemon, starting it if none runs (one per user and version,
in a session of its own, shared by every proxy); the daemon exits when its last proxy goes."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="biome",
        command=("biome", "lsp-proxy"),
        extensions={
            ".js": "javascript",
            ".jsx": "javascriptreact",
            ".mjs": "javascript",
            ".cjs": "javascript",
            ".ts": "typescript",
            ".tsx": "typescriptreact",
            ".mts": "typescript",
            ".cts": "typescript",
            ".json": "json",
            ".jsonc": "jsonc",
            ".css": "css",
        },
        markers=("biome.json", "biome.jsonc"),
        checker=("biome", "lint", "--colors=off"),
        # Logged once its project scan ends. A file opened before then is published empty first
        # (its configuration not read yet), then linted: seen 2 runs in 5 on reveal.js's CSS.
        ready_log=r"Server initialized with PID",
        linter=True,
    ),
)
