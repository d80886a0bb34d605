#!/usr/bin/env bash
# The PyPI-installed servers of tests/lsp/breadth/test_pypi_servers.py (idempotent; run as root).
# Each gets its own environment through `uv tool install`, its command linked into a bin folder on
# PATH: cmake-language-server needs pygls 1 where the workspace has pygls 2, and none of them
# should pin anything of the workspace. pyright and pylsp come from `uv sync` (the dev group and
# the lsp plugin's test extra); ruff too. fortls and cmake-language-server need no compiler;
# cmake-language-server asks `cmake --help-*` for its hovers, so CMake comes from Debian.
set -euo pipefail

export UV_TOOL_BIN_DIR="${UV_TOOL_BIN_DIR:-/usr/local/bin}"
if command -v uv >/dev/null 2>&1; then UV=(uv); else UV=(python3 -m uv); fi

tool() {  # tool COMMAND VERSION SPEC [--with REQ ...]: install unless COMMAND reports VERSION
    local command="$1" version="$2" spec="$3"
    shift 3
    if "$command" --version 2>/dev/null | grep -qF "$version"; then
        return
    fi
    "${UV[@]}" tool install --force --quiet "$spec" "$@"
}

tool jedi-language-server 0.47.0 jedi-language-server==0.47.0
tool ty 1.0.0 ty==1.0.0
tool pyrefly 1.5.1 pyrefly==1.5.1
tool fortls 3.2.2 fortls==3.2.2
tool cmake-language-server 0.1.11 cmake-language-server==0.1.11 --with pygls==1.3.1
# systemd-language-server has no --version: its installed version is asked of uv.
if ! "${UV[@]}" tool list 2>/dev/null | grep -qF "systemd-language-server v0.3.5"; then
    "${UV[@]}" tool install --force --quiet systemd-language-server==0.3.5
fi

if ! command -v cmake >/dev/null 2>&1; then
    [ -n "${LIVETOOLS_APT_UPDATED:-}" ] || apt-get update -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        -o DPkg::Lock::Timeout=600 cmake
fi
