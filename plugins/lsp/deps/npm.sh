#!/usr/bin/env bash
# The npm web-and-data servers of tests/lsp/breadth/test_npm_servers.py, plus php-cli for
# `php -l` (idempotent; root; pinned). yaml-language-server stays on 1.x: 2.0 needs Node 22.
set -euo pipefail

npm_missing=()
need() { command -v "$1" >/dev/null 2>&1 || npm_missing+=("$2"); }
need vscode-json-language-server vscode-langservers-extracted@4.10.0
need yaml-language-server yaml-language-server@1.25.0
need intelephense intelephense@1.18.5
need taplo @taplo/cli@0.7.0
if ((${#npm_missing[@]})); then
    npm install -g --no-fund --no-audit "${npm_missing[@]}"
fi

if ! command -v php >/dev/null 2>&1; then
    apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        -o DPkg::Lock::Timeout=600 php-cli
fi
