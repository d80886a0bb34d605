"""Start-up cost of the CLI: `livetools tools --format json` (every installed plugin discovered,
a run opened, schemas exported) next to a bare `python -c pass`, same interpreter, interleaved.

    uv run python bench/startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def compile_bytecode() -> None:
    """pip byte-compiles at install time, uv does not; with PYTHONDONTWRITEBYTECODE set, every
    start would recompile pydantic. Measure what an installed livetools costs."""
    import compileall
    import sysconfig

    for path in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        compileall.compile_dir(path, quiet=1, workers=0)
    import livetools

    compileall.compile_dir(livetools.__path__[0], quiet=1)
    for plugin in Path(livetools.__path__[0]).parents[1].glob("plugins/*/livetools_*"):
        compileall.compile_dir(plugin, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    compile_bytecode()
    bare_argv = [sys.executable, "-c", "pass"]
    tools_argv = [sys.executable, "-m", "livetools.faces.cli", "tools", "--format", "json"]
    timed(bare_argv), timed(tools_argv)  # warm the file cache
    bare, tools = [], []
    for _ in range(runs):
        bare.append(timed(bare_argv))
        tools.append(timed(tools_argv))
    b, t = statistics.median(bare), statistics.median(tools)
    plugins = subprocess.run(
        [sys.executable, "-c", "import livetools; print(len(livetools.Host().plugins.loaded))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"plugins loaded: {plugins}; runs: {runs} each, medians")
    print(f"python -c pass                 {b * 1000:7.1f} ms")
    print(f"livetools tools --format json  {t * 1000:7.1f} ms")
    print(f"above bare interpreter         {(t - b) * 1000:7.1f} ms (target < 250 ms)")
    print(f"ratio                          {t / b:7.2f}x")


if __name__ == "__main__":
    main()
