#!/usr/bin/env bash
# What the eval tests need beyond `uv sync`. ipykernel, jupyter_client and deno (its binary ships
# in the PyPI wheel) are runtime dependencies of livetools-eval; pandas, matplotlib, bash_kernel
# and jupyter-kernel-gateway (tests/eval/test_gateway.py starts one on loopback) are its `test`
# extra (the root dev group pulls it). Here: IRkernel from Debian (it installs its kernelspec
# under /usr/share/jupyter/kernels/ir) and bash_kernel's kernelspec into the project's venv
# (--sys-prefix). Idempotent.
set -euo pipefail

if ! command -v R >/dev/null 2>&1 || [ ! -f /usr/share/jupyter/kernels/ir/kernel.json ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends r-cran-irkernel
fi
uv run python -m bash_kernel.install --sys-prefix
