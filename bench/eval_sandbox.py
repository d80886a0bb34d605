"""`eval` in a bubblewrap sandbox next to the same call on a local kernel.

Two runs on one checkout: one with the host's kernels, one with `BwrapSandbox` (python: ipykernel
over unix sockets in the shared folder; javascript: Deno behind the relay). After a warm-up,
interleaved, N times each: `run.call("eval", {"code": "1+1"})`. Prints the medians and the ratio.

    uv run python bench/eval_sandbox.py [--repeats 20] [--languages python,javascript]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "plugins"
sys.path.insert(0, str(TESTS))

import livetools_eval  # noqa: E402
import livetools_testkit  # noqa: E402
from livetools import Host, Ports, Run  # noqa: E402
from livetools.sandbox import BwrapSandbox  # noqa: E402

DESC = "add one and one for the benchmark"


async def one(run: Run, language: str) -> float:
    t0 = time.perf_counter()
    result = await run.call("eval", {"code": "1+1", "description": DESC, "language": language})
    elapsed = time.perf_counter() - t0
    assert result.text == "2", result.text
    return elapsed


async def bench(language: str, repeats: int) -> None:
    host = Host(
        plugins=[("testkit", livetools_testkit), ("eval", livetools_eval)], entry_points=False
    )
    with tempfile.TemporaryDirectory() as root:
        sandbox = BwrapSandbox(Path(root))
        try:
            async with (
                host.open_run(root) as local,
                host.open_run(root, ports=Ports(sandbox=sandbox)) as boxed,
            ):
                starts = []
                for run in (local, boxed):
                    t0 = time.perf_counter()
                    await one(run, language)
                    starts.append(time.perf_counter() - t0)
                for _ in range(5):
                    await one(local, language)
                    await one(boxed, language)
                times: dict[str, list[float]] = {"local": [], "bwrap": []}
                for _ in range(repeats):
                    times["local"].append(await one(local, language))
                    times["bwrap"].append(await one(boxed, language))
        finally:
            sandbox.close()
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"[{language}] eval 1+1, median of {repeats} interleaved")
    print(f"  local kernel : {med['local']:6.2f} ms  (first call with start: {starts[0]:.2f} s)")
    print(f"  inside bwrap : {med['bwrap']:6.2f} ms  (first call with start: {starts[1]:.2f} s)")
    print(f"  ratio (bwrap / local): {med['bwrap'] / med['local']:.2f}x")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--languages", default="python,javascript")
    args = parser.parse_args()
    missing = BwrapSandbox.available()
    if missing:
        sys.exit(missing)
    for language in args.languages.split(","):
        await bench(language.strip(), args.repeats)


if __name__ == "__main__":
    asyncio.run(main())
