#!/usr/bin/env bash
# The native, shell and scripting servers of tests/lsp/breadth/test_native_servers.py
# (idempotent; root; pinned). bash-language-server, shellcheck, clangd and TypeScript 7 (tsgo)
# come from ../test-deps.sh.
set -euo pipefail

apt_missing=()
command -v ccls >/dev/null 2>&1 || apt_missing+=(ccls=0.20220729-2)
perl -MPerl::LanguageServer -e 1 >/dev/null 2>&1 || apt_missing+=(libperl-languageserver-perl=2.5.0-1)
command -v fish >/dev/null 2>&1 || apt_missing+=(fish)  # fish-lsp asks fish itself
if ((${#apt_missing[@]})); then
    [ -n "${LIVETOOLS_APT_UPDATED:-}" ] || apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${apt_missing[@]}"
fi

# arity (R): a Rust binary in a PyPI wheel, in its own uv tool environment, its command linked
# into a folder on PATH (as deps/pypi.sh does).
if ! arity --version 2>/dev/null | grep -qF 0.27.0; then
    if command -v uv >/dev/null 2>&1; then UV=(uv); else UV=(python3 -m uv); fi
    UV_TOOL_BIN_DIR="${UV_TOOL_BIN_DIR:-/usr/local/bin}" "${UV[@]}" tool install --force --quiet arity==0.27.0
fi

npm_missing=()
command -v vim-language-server >/dev/null 2>&1 || npm_missing+=(vim-language-server@2.3.1)
command -v fish-lsp >/dev/null 2>&1 || npm_missing+=(fish-lsp@1.1.4)
if ((${#npm_missing[@]})); then
    npm install -g --no-fund --no-audit "${npm_missing[@]}"
fi
