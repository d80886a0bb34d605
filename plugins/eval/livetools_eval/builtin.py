"""The built-in kernels: ipykernel for Python, Deno's kernel for JavaScript/TypeScript."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from .hookspecs import KernelSpec, KernelUnavailable


def ipykernel_argv() -> list[str]:
    if importlib.util.find_spec("ipykernel") is None:
        raise KernelUnavailable(
            "ipykernel is not installed in the host's interpreter; install livetools-eval "
            "(it depends on ipykernel)"
        )
    # No history database: an agent's cells need no sqlite file shared by every kernel.
    return [
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "--HistoryManager.enabled=False",
        # No Out/_ cache: each cell's last value would stay referenced (a 200 KB string per cell).
        "--InteractiveShell.cache_size=0",
        "-f",
        "{connection_file}",
    ]


def deno_argv() -> list[str]:
    """Deno's built-in kernel with our own spec: never `deno jupyter --install`, which writes a
    kernelspec with signal interrupts (which Deno ignores) into the user's home."""
    binary = os.environ.get("LIVETOOLS_DENO") or _deno_from_wheel() or shutil.which("deno")
    if not binary:
        raise KernelUnavailable(
            "deno not found: install the `deno` PyPI package (a dependency of livetools-eval) "
            "or put deno on PATH"
        )
    return [binary, "jupyter", "--kernel", "--conn", "{connection_file}"]


def _deno_from_wheel() -> str | None:
    beside = Path(sys.executable).with_name("deno")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    if importlib.util.find_spec("deno") is None:
        return None
    try:
        import deno

        found = deno.find_deno_bin()
    except Exception:
        return None
    return str(found) if found else None


def builtin_kernels() -> list[KernelSpec]:
    bin_dir = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in (bin_dir, os.environ.get("PATH", "")) if p)
    return [
        KernelSpec(
            language="python",
            name="ipykernel",
            argv=ipykernel_argv,
            dialect="ipython",
            transport="ipc",
            interrupt_mode="signal",
            # `!pip`/`!python` must reach the kernel's own interpreter; Agg would silence
            # plt.show() (the inline backend is what turns figures into PNGs).
            env={"PATH": path, "MPLBACKEND": None, "PYDEVD_DISABLE_FILE_VALIDATION": "1"},
        ),
        KernelSpec(
            language="javascript",
            name="deno",
            argv=deno_argv,
            dialect="javascript",
            transport="tcp",  # Deno's kernel refuses unix sockets
            interrupt_mode="message",  # SIGINT does nothing to it
            env={"NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"},
            settle=0.02,  # its output can trail its idle status (up to ~4 ms measured)
        ),
    ]
