#!/usr/bin/env bash
# External adapters the debug tests drive: lldb-vscode-16 (apt lldb-16), delve + go (apt).
# debugpy is a Python dependency of the plugin itself (installed by `uv sync`). Idempotent.
set -euo pipefail

need=()
command -v lldb-vscode-16 >/dev/null 2>&1 || command -v lldb-dap >/dev/null 2>&1 || need+=(lldb-16)
command -v dlv >/dev/null 2>&1 || need+=(delve)
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v cc >/dev/null 2>&1 || need+=(gcc)

if [ "${#need[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${need[@]}"
fi
