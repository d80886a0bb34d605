#!/usr/bin/env bash
# What the astgrep tests drive: the ast-grep CLI as the oracle. It is a PyPI package
# (ast-grep-cli, pinned in this plugin's `test` extra), so `uv sync` installs it with the dev group
# and there is nothing to apt-get or npm-install. The grammars come from the
# tree-sitter-language-pack 0.13.x wheel (bundled, no download at run time).
# The JavaScript differential test also reads npm's own sources when npm is installed.
set -euo pipefail
cd "$(dirname "$0")/../.."

if command -v uv >/dev/null 2>&1; then
    uv sync --quiet
    uv run ast-grep --version
fi
