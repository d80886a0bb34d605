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

FLOOR = (
    "import asyncio, pluggy, pydantic\n"
    "class M(pydantic.BaseModel):\n    x: int = pydantic.Field(1, description='d')\n"
    "M.model_json_schema()"
)


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
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import asyncio, pluggy, pydantic (the floor)": [sys.executable, "-c", FLOOR],
        "livetools tools --format json": [
            sys.executable,
            "-m",
            "livetools.faces.cli",
            "tools",
            "--format",
            "json",
        ],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        timed(argv)  # warm the file cache
    for _ in range(runs):  # interleaved, so machine noise hits all three alike
        for name, argv in commands.items():
            times[name].append(timed(argv))
    plugins = subprocess.run(
        [sys.executable, "-c", "import livetools; print(len(livetools.Host().plugins.loaded))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"plugins loaded: {plugins}; {runs} runs each, interleaved")
    print(f"{'':46} {'median':>8} {'min':>8}")
    for name, values in times.items():
        print(f"{name:46} {statistics.median(values) * 1000:6.1f}ms {min(values) * 1000:6.1f}ms")
    bare, tools = times["python -c pass"], times["livetools tools --format json"]
    for label, pick in (("median", statistics.median), ("min", min)):
        b, t = pick(bare), pick(tools)
        print(
            f"{label}: {(t - b) * 1000:.1f} ms above the bare interpreter (target < 250 ms), "
            f"ratio {t / b:.1f}x"
        )


if __name__ == "__main__":
    main()
