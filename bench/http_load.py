"""Many runs over `serve --http` at once, next to the same calls on one run alone.

One run server (`serve --http --runs-under`), the mcp SDK's streamable HTTP client (2026-07-28
era), one client per run:
  alone:  one run, ROUNDS rounds of ast_grep + lsp status (+ eval, + lsp symbols);
  idle:   RUNS runs opened and left idle: the server's RSS per idle run;
  loaded: RUNS runs at once, each ROUNDS rounds of ast_grep + lsp status; the first EVAL runs
          also eval a cell, the first LSP runs also ask the language server for symbols;
  close:  SIGTERM with every run live: time until the server has exited.
Per tool: errors, p50/p99 per call alone and loaded, and the p99 ratio (goal <= 2x).

    uv run python bench/http_load.py [--runs 50] [--eval 10] [--lsp 5] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "tests" / "fixtures" / "projects" / "lsp" / "py"
EVAL_DESC = "add one and one for the load benchmark"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "ast_grep": ("ast_grep", {"pattern": "def $F($$$A): $$$B", "language": "python"}),
    "status": ("lsp", {"action": "status"}),
    "eval": ("eval", {"code": "1 + 1", "description": EVAL_DESC}),
    "lsp": ("lsp", {"action": "symbols", "file": "shapes.py"}),
}


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children[ppid].append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def start_server(under: Path, token: str, max_runs: int) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "livetools.faces.cli", "serve", "--http", "127.0.0.1:0"]
    command += ["--runs-under", str(under), "--max-runs", str(max_runs)]
    env = {**os.environ, "LIVETOOLS_HTTP_TOKEN": token}
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    ready = threading.Event()
    url: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"listening on (http://\S+)", line)
            if found and not url:
                url.append(found.group(1))
                ready.set()
            elif not found:
                sys.stderr.write(f"  server: {line}")
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(120)
    if not url:
        raise SystemExit("serve --http did not start")
    return proc, url[0]


def alive(pids: list[int]) -> list[int]:
    return [p for p in pids if os.path.exists(f"/proc/{p}")]


class Stats:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.first_error: dict[str, str] = {}


async def run_client(
    base: str,
    admin: httpx2.AsyncClient,
    tools: list[str],
    rounds: int,
    stats: Stats,
    warmed: asyncio.Barrier | None = None,
) -> None:
    try:
        await _client_rounds(base, admin, tools, rounds, stats, warmed)
    except BaseException:
        if warmed is not None:
            await warmed.abort()  # the others stop waiting for this run and fail too
        raise


async def _client_rounds(
    base: str,
    admin: httpx2.AsyncClient,
    tools: list[str],
    rounds: int,
    stats: Stats,
    warmed: asyncio.Barrier | None,
) -> None:
    made = await admin.post("/runs", json={"root": "proj"})
    made.raise_for_status()
    run = made.json()
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {run['token']}"}, timeout=httpx2.Timeout(120)
    )
    async with (
        http,
        Client(
            streamable_http_client(f"{base}{run['url']}", http_client=http), mode="auto"
        ) as client,
    ):
        # Warm-up: the first eval starts a kernel, the first lsp call a language server.
        for tool in tools:
            name, args = CALLS[tool]
            await client.call_tool(name, args)
        if warmed is not None:
            # Measure the rounds only once every run is warm: a kernel or language server
            # starting takes seconds of CPU, which would show up as queueing of other calls.
            await warmed.wait()
        for _ in range(rounds):
            for tool in tools:
                name, args = CALLS[tool]
                t0 = time.perf_counter()
                try:
                    result = await client.call_tool(name, args)
                    failed = result.is_error
                    why = str(result.content[:1])[:200]
                except Exception as exc:  # counted, not fatal
                    failed, why = True, f"{type(exc).__name__}: {exc}"[:200]
                stats.times[tool].append(time.perf_counter() - t0)
                if failed:
                    stats.errors[tool] += 1
                    stats.first_error.setdefault(tool, why)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--eval", type=int, default=10)
    ap.add_argument("--lsp", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    opts = ap.parse_args()
    token = secrets.token_urlsafe(24)
    tmp = Path(tempfile.mkdtemp(prefix="livetools-http-load-"))
    shutil.copytree(PROJECT, tmp / "proj")
    proc, base = start_server(tmp, token, opts.runs + 5)
    admin = httpx2.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120
    )
    try:
        print(
            f"livetools serve --http load: {opts.runs} runs, {opts.eval} with eval, "
            f"{opts.lsp} with lsp, {opts.rounds} rounds; CPUs: {os.cpu_count()}"
        )
        alone = Stats()
        await run_client(base, admin, ["ast_grep", "status", "eval", "lsp"], opts.rounds, alone)
        for run in (await admin.get("/runs")).json()["runs"]:
            await admin.delete(f"/runs/{run['id']}")

        before = rss_kib(proc.pid)
        idle_ids = []
        for _ in range(opts.runs):
            made = await admin.post("/runs", json={"root": "proj"})
            idle_ids.append(made.json()["run_id"])
        after = rss_kib(proc.pid)
        print(
            f"server RSS: {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB with "
            f"{opts.runs} idle runs = {(after - before) / opts.runs:.0f} KiB per idle run"
        )
        for run_id in idle_ids:
            await admin.delete(f"/runs/{run_id}")

        loaded = Stats()
        plans = []
        for i in range(opts.runs):
            tools = ["ast_grep", "status"]
            if i < opts.eval:
                tools.append("eval")
            if i < opts.lsp:
                tools.append("lsp")
            plans.append(tools)
        warmed = asyncio.Barrier(len(plans))
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(run_client(base, admin, tools, opts.rounds, loaded, warmed) for tools in plans),
            return_exceptions=True,
        )
        wall = time.perf_counter() - t0
        failed_runs = [r for r in results if isinstance(r, BaseException)]
        print(f"loaded phase: {wall:.1f} s wall, runs that failed outright: {len(failed_runs)}")
        for r in failed_runs[:3]:
            print(f"  {type(r).__name__}: {r}")

        print(
            f"{'call':10} {'n':>5} {'errors':>6} {'alone p50':>10} {'alone p99':>10} "
            f"{'load p50':>10} {'load p99':>10} {'p99 ratio':>9}"
        )
        for tool in CALLS:
            a, b = alone.times[tool], loaded.times[tool]
            ratio = pct(b, 0.99) / pct(a, 0.99) if a and b else float("nan")
            print(
                f"{tool:10} {len(b):5d} {loaded.errors[tool]:6d} {pct(a, 0.5):9.1f}ms "
                f"{pct(a, 0.99):9.1f}ms {pct(b, 0.5):9.1f}ms {pct(b, 0.99):9.1f}ms "
                f"{ratio:8.2f}x"
            )
            for phase, stats in (("alone", alone), ("loaded", loaded)):
                if tool in stats.first_error:
                    print(f"  first error {phase}: {stats.first_error[tool]}")
        mean = statistics.mean(loaded.times["ast_grep"]) * 1000 if loaded.times["ast_grep"] else 0
        print(f"ast_grep mean under load: {mean:.1f} ms")

        # The loaded runs are still open (their clients left without DELETE).
        live = (await admin.get("/runs")).json()["runs"]
        children = descendants(proc.pid)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        closed = time.perf_counter() - t0
        deadline = time.monotonic() + 10
        left = alive(children)
        while left and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            left = alive(children)
        print(
            f"SIGTERM with {len(live)} live runs ({len(children)} child processes): "
            f"exited in {closed:.2f} s, processes left: {len(left)}"
        )
    finally:
        await admin.aclose()
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
