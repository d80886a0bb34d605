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
    apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${apt_missing[@]}"
fi

npm_missing=()
command -v vim-language-server >/dev/null 2>&1 || npm_missing+=(vim-language-server@2.3.1)
command -v fish-lsp >/dev/null 2>&1 || npm_missing+=(fish-lsp@1.1.4)
if ((${#npm_missing[@]})); then
    npm install -g --no-fund --no-audit "${npm_missing[@]}"
fi
