#!/usr/bin/env bash
# The npm web-and-data servers of tests/lsp/breadth/test_npm_servers.py, tombi (TOML, from PyPI:
# taplo's npm and PyPI builds both leave its language server out) and php-cli for `php -l`
# (idempotent; root; pinned). yaml-language-server stays on 1.x: 2.0 needs Node 22.
set -euo pipefail

npm_missing=()
need() { command -v "$1" >/dev/null 2>&1 || npm_missing+=("${@:2}"); }
need vscode-json-language-server vscode-langservers-extracted@4.10.0
need yaml-language-server yaml-language-server@1.25.0
need intelephense intelephense@1.18.5
need docker-langserver dockerfile-language-server-nodejs@0.15.0
need svelteserver svelte-language-server@0.18.4
# svelte-check with the compiler svelte-language-server bundles (svelte 4), not its peer default.
need svelte-check svelte-check@4.7.9 svelte@4.2.20
need graphql-lsp graphql-language-service-cli@3.5.0
need prisma-language-server @prisma/language-server@31.12.10
need biome @biomejs/biome@2.6.9
if ((${#npm_missing[@]})); then
    npm install -g --no-fund --no-audit "${npm_missing[@]}"
fi

if ! command -v php >/dev/null 2>&1; then
    apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        -o DPkg::Lock::Timeout=600 php-cli
fi

export UV_TOOL_BIN_DIR="${UV_TOOL_BIN_DIR:-/usr/local/bin}"
if command -v uv >/dev/null 2>&1; then UV=(uv); else UV=(python3 -m uv); fi
if ! tombi --version 2>/dev/null | grep -qF "tombi 1.9.6"; then
    "${UV[@]}" tool install --force --quiet tombi==1.9.6
fi
