#!/usr/bin/env bash
# External language servers the lsp tests drive (idempotent; runs as root on a fresh Debian machine
# with python3/node/npm). basedpyright and pylsp come from PyPI through `uv sync`.
# Versions: typescript stays below 7 (7 is the native port without tsserver, which
# typescript-language-server needs); typescript-language-server 5.x supports Node 20.
set -euo pipefail

apt_missing=()
command -v clangd >/dev/null 2>&1 || apt_missing+=(clangd)
command -v gopls >/dev/null 2>&1 || apt_missing+=(gopls)
command -v go >/dev/null 2>&1 || apt_missing+=(golang-go)
command -v shellcheck >/dev/null 2>&1 || apt_missing+=(shellcheck)
if ((${#apt_missing[@]})); then
    apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=600 "${apt_missing[@]}"
fi

npm_missing=()
command -v typescript-language-server >/dev/null 2>&1 || npm_missing+=(typescript-language-server@5.3.0)
command -v tsserver >/dev/null 2>&1 || npm_missing+=(typescript@6.0.3)
command -v bash-language-server >/dev/null 2>&1 || npm_missing+=(bash-language-server@5.8.1)
if ((${#npm_missing[@]})); then
    npm install -g --no-fund --no-audit "${npm_missing[@]}"
fi

# TypeScript 7 (the native port, tsc --lsp) beside the global 6, in the user cache: the tsgo test
# checks that it is usable with 7 and not with 6.
ts7="${XDG_CACHE_HOME:-$HOME/.cache}/livetools/ts7"
if [ ! -x "$ts7/node_modules/.bin/tsc" ]; then
    mkdir -p "$ts7"
    npm install --prefix "$ts7" --no-fund --no-audit --no-save typescript@7.0.2
fi

# The breadth servers, a script per group (plugins/lsp/deps/).
for script in "$(dirname "$0")"/deps/*.sh; do
    [ -f "$script" ] || continue
    echo "== $script"
    bash "$script"
done
