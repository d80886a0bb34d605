#!/usr/bin/env bash
# External programs the core tests drive: Debian's nginx, the reverse proxy in front of two
# `serve --http` instances (tests/core/test_http_proxy.py), and bubblewrap, the real sandbox of
# the sandbox suites (tests/*/test_sandbox*.py). Idempotent.
set -euo pipefail

need=()
command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)

if [ "${#need[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    [ -n "${LIVETOOLS_APT_UPDATED:-}" ] || apt-get update
    apt-get install -y --no-install-recommends "${need[@]}"
fi
