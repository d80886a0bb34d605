#!/usr/bin/env bash
# External adapters the debug tests drive: lldb-vscode-16 (apt lldb-16), delve + go (apt), cargo.
# debugpy is a Python dependency of the plugin itself (installed by `uv sync`). Idempotent.
set -euo pipefail

need=()
command -v lldb-vscode-16 >/dev/null 2>&1 || command -v lldb-dap >/dev/null 2>&1 || need+=(lldb-16)
command -v dlv >/dev/null 2>&1 || need+=(delve)
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v cc >/dev/null 2>&1 || need+=(gcc)
# debugpy's attach by pid injects itself into the process with gdb
command -v gdb >/dev/null 2>&1 || need+=(gdb)
# Rust programs: cargo + rustc, and rustc's lldb formatters (lib/rustlib/etc/lldb_lookup.py in
# `rustc --print sysroot`; a rustup toolchain ships them, Debian's rustc in rust-lldb).
command -v cargo >/dev/null 2>&1 || need+=(cargo rust-lldb)

if [ "${#need[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${need[@]}"
fi
bash "$(dirname "$0")/deps/install.sh"  # tests/debug/test_unshipped_adapter.py
