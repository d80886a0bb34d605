#!/usr/bin/env bash
# Nothing external: ipykernel, jupyter_client and deno (its binary ships in the PyPI wheel) are
# runtime dependencies of livetools-eval, pandas and matplotlib are its `test` extra; `uv sync`
# installs them all. The idiom tests only need sh and bash, present on Debian. Idempotent.
set -euo pipefail

if ! command -v bash >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends bash
fi
