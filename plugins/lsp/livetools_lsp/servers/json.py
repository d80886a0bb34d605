"""JSON: vscode-json-language-server (vscode-langservers-extracted). No other server navigates
.json; biome lints it beside (biome.py)."""

from __future__ import annotations

from ..spec import ServerSpec

# The vscode-langservers-extracted binaries have no --version: any flag is a missing connection
# (exit 1), and --stdio at the end of an empty stdin exits 1 too. node running is what is left to
# check (the command itself was found on PATH).
NODE_PROBE = ("node", "--version")

# JSON-with-comments files named .json (VS Code gives them languageId jsonc; a spec maps suffixes
# only): a schema that allows comments and trailing commas, else a tsconfig.json with a comment
# reads "Comments are not permitted in JSON" [521].
JSONC_FILES = [
    "tsconfig.json",
    "tsconfig.*.json",
    "jsconfig.json",
    "jsconfig.*.json",
    ".vscode/*.json",
    "devcontainer.json",
    ".devcontainer.json",
    ".eslintrc.json",
    "tslint.json",
    "api-extractor.json",
    "typedoc.json",
    "deno.json",
    "biome.json",
    "turbo.json",
]
_JSONC = {"allowComments": True, "allowTrailingCommas": True}

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="vscode-json-language-server",
        command=("vscode-json-language-server", "--stdio"),
        probe=NODE_PROBE,
        extensions={".json": "json", ".jsonc": "jsonc"},
        # Formatting is off unless asked for; the rest answers without configuration.
        init_options={"provideFormatter": True},
        # Pushed settings replace the defaults: validation is off unless they enable it.
        settings={
            "json": {
                "validate": {"enable": True},
                "schemas": [{"fileMatch": JSONC_FILES, "schema": _JSONC}],
            }
        },
    ),
)
