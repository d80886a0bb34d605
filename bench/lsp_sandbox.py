"""`lsp` in a bubblewrap sandbox next to the same calls on the host.

Per server, on a copy of its sample project (tests/fixtures/projects/lsp): the first definition of
a fresh run (server start, initialize, project load, answer), COLD times per side, alternating;
then N interleaved warm definitions and references on one run per side. Prints the medians and
the ratios (bwrap / host), the anchor being the host in the same process.

    uv run python bench/lsp_sandbox.py [--servers basedpyright,typescript-language-server]
                                       [--cold 3] [--repeats 20]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from livetools import Host, Ports, Run
from livetools.sandbox import BwrapSandbox

PROJECTS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "projects" / "lsp"
CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "basedpyright": (
        "py",
        {"action": "definition", "file": "app.py", "line": 3, "symbol": "Square"},
        {"action": "references", "file": "shapes.py", "line": 22, "symbol": "total_area"},
    ),
    "typescript-language-server": (
        "ts",
        {"action": "definition", "file": "src/app.ts", "line": 3, "symbol": "Square"},
        {"action": "references", "file": "src/shapes.ts", "line": 15, "symbol": "totalArea"},
    ),
}


async def timed(run: Run, args: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    result = await run.call("lsp", args)
    elapsed = time.perf_counter() - t0
    assert not result.is_error and "/workspace" not in result.text, result.text
    return elapsed


async def cold(
    root: Path, server: str, args: dict[str, Any], sandbox: BwrapSandbox | None
) -> float:
    ports = Ports(sandbox=sandbox) if sandbox else Ports()
    async with Host().open_run(root, ports=ports, options={"lsp": {"prefer": [server]}}) as run:
        return await timed(run, args)


async def bench(server: str, colds: int, repeats: int) -> None:
    fixture, definition, references = CASES[server]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / fixture
        shutil.copytree(PROJECTS / fixture, root)
        sandbox = BwrapSandbox(root)
        try:
            firsts: dict[str, list[float]] = {"host": [], "bwrap": []}
            for _ in range(colds):
                firsts["host"].append(await cold(root, server, definition, None))
                firsts["bwrap"].append(await cold(root, server, definition, sandbox))
            options = {"lsp": {"prefer": [server]}}
            host = Host()
            async with (
                host.open_run(root, options=options) as local,
                host.open_run(root, ports=Ports(sandbox=sandbox), options=options) as boxed,
            ):
                for run in (local, boxed):  # warm-up: start, load, open both files
                    await timed(run, definition)
                    await timed(run, references)
                warm: dict[str, list[float]] = {"host": [], "bwrap": []}
                refs: dict[str, list[float]] = {"host": [], "bwrap": []}
                for _ in range(repeats):
                    for side, run in (("host", local), ("bwrap", boxed)):
                        warm[side].append(await timed(run, definition))
                        refs[side].append(await timed(run, references))
        finally:
            sandbox.close()

    def med(values: list[float]) -> float:
        return statistics.median(values)

    print(f"[{server}] median of {colds} cold runs, then {repeats} interleaved warm calls")
    for label, data, unit in (
        ("first definition (start+init+load)", firsts, 1.0),
        ("warm definition", warm, 1e3),
        ("warm references", refs, 1e3),
    ):
        host_v, box_v = med(data["host"]) * unit, med(data["bwrap"]) * unit
        suffix = "s" if unit == 1.0 else "ms"
        print(
            f"  {label:<36} host {host_v:8.2f} {suffix}   bwrap {box_v:8.2f} {suffix}   "
            f"ratio {box_v / host_v:.2f}x"
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", default="basedpyright,typescript-language-server")
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    missing = BwrapSandbox.available()
    if missing:
        sys.exit(missing)
    for server in args.servers.split(","):
        await bench(server.strip(), args.cold, args.repeats)


if __name__ == "__main__":
    asyncio.run(main())
