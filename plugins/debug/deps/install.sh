#!/usr/bin/env bash
# Debug adapters livetools does not ship, which tests/debug/test_unshipped_adapter.py defines only
# by configuration. Root, idempotent (each script checks before it installs).
set -euo pipefail
here=$(dirname "$0")
bash "$here/cdt-gdb-adapter.sh"
bash "$here/rdbg.sh"
