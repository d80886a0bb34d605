#!/usr/bin/env bash
# Installs the external servers, adapters and binaries the tests drive. Core keeps its list in
# core/test-deps.sh and each family its own in plugins/<family>/test-deps.sh; this runs them all
# (idempotent; run as root, as CI does).
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    export LIVETOOLS_APT_UPDATED=1
fi
for script in core/test-deps.sh plugins/*/test-deps.sh; do
    [ -f "$script" ] || continue
    echo "== $script"
    bash "$script"
done
