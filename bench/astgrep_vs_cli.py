"""ast_grep against its anchor, the ast-grep CLI (PyPI `ast-grep-cli`, the version the tests use),
on the same corpus in one process pair: the interpreter's standard library plus a large installed
package, copied into a temporary folder so both walk exactly the same files.

For each case: wall-time medians of both, and the ratio ours/CLI (lower is better).
Ours goes through a real run (`run.call("ast_grep", ...)`), workers and all; "cold" opens a new
run per measurement (fresh workers, empty caches), "warm" repeats a query in the same run.

    uv run python bench/astgrep_vs_cli.py [--runs 3] [--package pandas] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

from livetools import Host
from livetools_astgrep import plugin as astgrep_plugin

# (label, pattern, max_results for ours, target ratio from the issue)
CASES = [
    ("selective", "os.path.join($$$A)", 0, 0.8),
    ("rare identifier", "$X.dispose()", 0, 0.05),
    ("non-selective, all", "$F($$$ARGS)", 0, 1.3),
    ("non-selective, default 50", "$F($$$ARGS)", 50, 0.2),
    ("repeated metavariable", "$A == $A", 0, None),
]


def build_corpus(dest: Path, package: str | None, quick: bool) -> tuple[int, int]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = [("stdlib", stdlib)]
    if package and not quick:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            sources.append((package, Path(spec.origin).parent))
    files = size = 0
    for name, root in sources:
        for path in root.rglob("*.py"):
            rel = path.relative_to(root)
            if "site-packages" in rel.parts or any(p.startswith(".") for p in rel.parts):
                continue
            if quick and len(rel.parts) > 1 and rel.parts[0] not in ("email", "json", "asyncio"):
                continue
            target = dest / name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files += 1
            size += target.stat().st_size
    return files, size


def cli_time(binary: str, pattern: str, corpus: Path, sink: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with sink.open("w") as out:
        proc = subprocess.run(
            [binary, "run", "-p", pattern, "-l", "python", "--json=stream", str(corpus)],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
    elapsed = time.perf_counter() - started
    assert proc.returncode in (0, 1)
    with sink.open() as out:
        count = sum(1 for _ in out)
    return elapsed, count


def host() -> Host:
    return Host(plugins=[("astgrep", astgrep_plugin)], entry_points=False)


async def ours_cold(corpus: Path, pattern: str, limit: int) -> tuple[float, int]:
    async with host().open_run(corpus) as run:
        started = time.perf_counter()
        result = await run.call("ast_grep", {"pattern": pattern, "max_results": limit})
        elapsed = time.perf_counter() - started
    assert not result.is_error, result.text
    return elapsed, len(result.data["matches"])


async def ours_warm(corpus: Path, first: str, pattern: str) -> tuple[float, int]:
    async with host().open_run(corpus) as run:
        await run.call("ast_grep", {"pattern": first, "max_results": 0})
        started = time.perf_counter()
        result = await run.call("ast_grep", {"pattern": pattern, "max_results": 0})
        elapsed = time.perf_counter() - started
    return elapsed, len(result.data["matches"])


def report(label: str, cli: list[float], mine: list[float], counts: str, target: float | None):
    c, m = statistics.median(cli), statistics.median(mine)
    goal = f"target ≤ {target:g}x" if target else ""
    print(f"{label:34} CLI {c:7.2f} s   ours {m:7.2f} s   ratio {m / c:6.3f}x  {counts} {goal}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--package", default="pandas", help="a large installed package")
    parser.add_argument("--quick", action="store_true", help="a small corpus, for a smoke run")
    parser.add_argument("--only", default="", help="run only the cases whose label has this text")
    args = parser.parse_args()
    binary = shutil.which("ast-grep")
    if binary is None:
        raise SystemExit("ast-grep not on PATH: uv sync (ast-grep-cli is in the test extra)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        files, size = build_corpus(corpus, args.package, args.quick)
        sink = Path(tmp) / "cli.json"
        print(f"corpus: {files} files, {size / 1e6:.1f} MB; {version.strip()}; runs: {args.runs}")
        for label, pattern, limit, target in CASES:
            if args.only not in label:
                continue
            cli_runs, our_runs, cli_n, our_n = [], [], 0, 0
            for _ in range(args.runs):
                t, cli_n = cli_time(binary, pattern, corpus, sink)
                cli_runs.append(t)
                t, our_n = asyncio.run(ours_cold(corpus, pattern, limit))
                our_runs.append(t)
            report(f"{label} `{pattern}`", cli_runs, our_runs, f"({cli_n} vs {our_n})", target)
        cli_runs, our_runs = [], []
        for _ in range(args.runs if args.only in "warm" else 0):
            t, cli_n = cli_time(binary, "isinstance($X, str)", corpus, sink)
            cli_runs.append(t)
            t, our_n = asyncio.run(ours_warm(corpus, "$F($$$ARGS)", "isinstance($X, str)"))
            our_runs.append(t)
        if cli_runs:
            report("warm `isinstance($X, str)`", cli_runs, our_runs, f"({cli_n} vs {our_n})", 0.1)


if __name__ == "__main__":
    main()
