"""JSON: vscode-json-language-server (vscode-langservers-extracted). No other server navigates
.json; biome lints it beside (biome.py)."""

from __future__ import annotations

from ..spec import ServerSpec

# The vscode-langservers-extracted binaries have no --version: any flag is a missing connection
# (exit 1), and --stdio at the end of an empty stdin exits 1 too. node running is what is left to
# check (the command itself was found on PATH).
NODE_PROBE = ("node", "--version")

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="vscode-json-language-server",
        command=("vscode-json-language-server", "--stdio"),
        probe=NODE_PROBE,
        extensions={".json": "json", ".jsonc": "jsonc"},
        # Formatting is off unless asked for; the rest answers without configuration.
        init_options={"provideFormatter": True},
    ),
)
