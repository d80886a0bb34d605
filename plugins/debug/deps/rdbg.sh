#!/usr/bin/env bash
# Ruby's debug gem (rdbg, DAP over TCP) for tests/debug/test_unshipped_adapter.py: Debian's ruby
# (3.1) bundles it (debug 1.4.0). Root, idempotent; the version is Debian's, checked below.
set -euo pipefail

if ! command -v ruby >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    [ -n "${LIVETOOLS_APT_UPDATED:-}" ] || apt-get update
    apt-get install -y --no-install-recommends ruby
fi
version=$(ruby -e "require 'debug/version'; print DEBUGGER__::VERSION")
[ "$version" = 1.4.0 ] || echo "note: Ruby's debug gem is $version; the tests know 1.4.0" >&2
