#!/usr/bin/env bash
# Eclipse CDT's gdb debug adapter (npm cdt-gdb-adapter, `cdtDebugAdapter`: DAP on stdio over
# gdb/MI) for tests/debug/test_unshipped_adapter.py: an adapter livetools does not ship, defined
# there only by configuration. Root, idempotent, pinned. Its install script (a pty addon for
# `openGdbConsole`) is skipped: the adapter runs gdb on pipes without it.
set -euo pipefail

version=1.7.0
command -v gdb >/dev/null 2>&1 || {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends gdb
}
manifest="$(npm root -g)/cdt-gdb-adapter/package.json"
installed=$(node -p "require('$manifest').version" 2>/dev/null || true)
if [ "$installed" != "$version" ] || ! command -v cdtDebugAdapter >/dev/null 2>&1; then
    npm install -g --no-fund --no-audit --ignore-scripts "cdt-gdb-adapter@$version"
fi
