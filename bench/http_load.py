"""Many runs over `serve --http` at once, next to the same calls on one run alone.

One run server (`serve --http --runs-under`) in its own process; the clients (the mcp SDK's
streamable HTTP client, one per run) in others, so their CPU is measured apart from the
server's. The loaded phases spread the runs over CLIENTS client processes (default 10, five
runs each): in the field every conversation's client is a process of its own, and 50 clients in
one Python process queue behind each other (~3 ms of client CPU per call) and add that queue to
the tail measured (same build, quiet machine: ast_grep p99 2.34x of one run alone with one
client process, 2.02x with ten). Phases:
  alone:  one run, ALONE_ROUNDS rounds of ast_grep + lsp status + eval + lsp symbols, paced
          (think ALONE_THINK s +-50%) and back to back (the baselines of the loaded phases);
  idle:   RUNS runs opened and left idle: the server's RSS per idle run;
  paced:  RUNS runs at once, each ROUNDS rounds of ast_grep + lsp status (the first EVAL runs
          also eval a cell, the first LSP runs also ask for symbols), each call followed by a
          think time of THINK s +-50% (uniform), the runs starting at random offsets;
  closed: the same runs calling back to back, no pause (saturation: calls/s is capacity);
  close:  SIGTERM with every run live: time until the server has exited.

Why pace: an agent calls a tool, then the model reads the result and writes its next call,
which takes seconds (time to first token plus the call's tokens). 1.5 s is the fast end of
that, so the paced phase errs toward more load; it is the latency a conversation sees. The
closed loop keeps RUNS calls in flight at every moment, so on a few cores its latency is
queueing for CPU (~RUNS x CPU per call / cores), a capacity figure and not a latency one.

Per phase: errors, p50/p99 per call kind next to the run alone and p99/p99-alone (goal <= 2x),
calls/s, CPU in cores of the server process, of its children (kernels, language servers), of
this client, and of the whole machine (other work shares it), with the load average.

    uv run python bench/http_load.py [--runs 50] [--eval 10] [--lsp 5] [--rounds 10]
        [--alone-rounds 300] [--alone-think 0.25] [--think 1.5] [--phases paced,closed]
        [--era modern|legacy] [--clients 10] [--client sdk|lean] [--save FILE]
    uv run python bench/http_load.py --pool FILE [FILE ...]

`--client lean` (lean_client.py) sends the same requests without the SDK: its ~0.2-0.7 ms of
CPU per call instead of ~3 ms leaves the shared cores to the server, as remote clients would.

The run alone's p99 is the baseline of every ratio, so it gets enough samples to be one:
ALONE_ROUNDS (default 300, at least ROUNDS) calls of each kind, its p99 then the 4th largest.
With 40 or 100 samples (the bench before 2026-12) the "p99" was their maximum, set by one stall
of the machine: 15-28 ms against p50s of 5-11 ms, which flattered the ratios to 0.5-0.8x. The
run alone thinks 0.25 s instead of 1.5 s to fit 1,200 calls in ~5 minutes. Even so its p99 moved
between 8 and 23 ms from one quiet run to the next: judge ratios by several runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from lean_client import LeanClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from livetools.procs.sessions import descendants

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parent.parent
PROJECT = REPO / "tests" / "fixtures" / "projects" / "lsp" / "py"
EVAL_DESC = "add one and one for the load benchmark"
ADMIN_ENV = "LIVETOOLS_HTTP_LOAD_ADMIN"  # a client process's admin token (never in argv)
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "ast_grep": ("ast_grep", {"pattern": "def $F($$$A): $$$B", "language": "python"}),
    "status": ("lsp", {"action": "status"}),
    "eval": ("eval", {"code": "1 + 1", "description": EVAL_DESC}),
    "lsp": ("lsp", {"action": "symbols", "file": "shapes.py"}),
}


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS now, the most RSS the process has held), KiB; one read of its status."""
    fields: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
    except OSError:
        pass
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def rss_kib(pid: int) -> int:
    return memory_kib(pid)[0]


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


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy() -> float:
    """Busy CPU seconds of the whole machine so far, every process's (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / TICK


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass
class Sample:
    """What the clock and the CPU counters say at one moment."""

    wall: float
    server: float
    children: float
    client: float
    machine: float
    load: str
    rss: int  # the server's, KiB
    peak: int

    @classmethod
    def take(cls, server_pid: int, clients: list[int] | None = None) -> Sample:
        """`clients`: client processes whose CPU counts with this one's."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return cls(
            time.perf_counter(),
            cpu_seconds(server_pid),
            sum(cpu_seconds(p) for p in descendants(server_pid)),
            usage.ru_utime + usage.ru_stime + sum(cpu_seconds(p) for p in clients or []),
            machine_busy(),
            load_average(),
            *memory_kib(server_pid),
        )


@dataclass
class Stats:
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    first_error: dict[str, str] = field(default_factory=dict)
    begin: Sample | None = None
    end: Sample | None = None

    def calls(self) -> int:
        return sum(len(v) for v in self.times.values())


class Step:
    """Where a process's runs meet before each phase and after the last: once all are there,
    one of them runs `sync` (a client process checks in with the coordinator) before any goes
    on, so a phase starts in every process at once."""

    def __init__(self, parties: int, sync: Callable[[], Any]) -> None:
        self.barrier = asyncio.Barrier(parties)
        self.sync = sync

    async def wait(self) -> None:
        if await self.barrier.wait() == 0:
            await self.sync()
        await self.barrier.wait()

    async def abort(self) -> None:
        await self.barrier.abort()


@dataclass
class Phase:
    name: str
    think: float  # mean seconds after each call; 0: back to back
    stats: Stats = field(default_factory=Stats)


class SdkClient:
    """The `mcp` SDK's client, answering as LeanClient does: (failed, why)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        result = await self.client.call_tool(name, arguments)
        return result.is_error, str(result.content[:1])[:200]


Caller = SdkClient | LeanClient


async def timed_call(client: Caller, tool: str, stats: Stats) -> None:
    name, args = CALLS[tool]
    t0 = time.perf_counter()
    try:
        failed, why = await client.call_tool(name, args)
    except Exception as exc:  # counted, not fatal
        failed, why = True, f"{type(exc).__name__}: {exc}"[:200]
    stats.times[tool].append(time.perf_counter() - t0)
    if failed:
        stats.errors[tool] += 1
        stats.first_error.setdefault(tool, why)


@contextlib.asynccontextmanager
async def open_client(url: str, token: str, era: str, lean: bool) -> AsyncIterator[Caller]:
    if lean:
        async with LeanClient(url, token, era) as client:
            yield client
        return
    auth = {"Authorization": f"Bearer {token}"}
    mode = "legacy" if era == "legacy" else "auto"
    async with (
        httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(120)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield SdkClient(client)


async def run_client(
    base: str,
    admin: httpx2.AsyncClient,
    tools: list[str],
    rounds: int,
    phases: list[Phase],
    era: str,
    lean: bool,
    step: Step | None = None,
    sample: Callable[[], Sample] | None = None,
) -> None:
    """One run's client: open it, warm it (the first eval starts a kernel, the first lsp call
    a language server), then each phase's rounds, in step with the other runs."""
    try:
        made = await admin.post("/runs", json={"root": "proj"})
        made.raise_for_status()
        run = made.json()
        async with open_client(f"{base}{run['url']}", run["token"], era, lean) as client:
            for tool in tools:
                await timed_call(client, tool, Stats())
            for phase in phases:
                if step is not None:
                    # Phases start together, once every run is warm: a kernel or language
                    # server starting is seconds of CPU that would show up as queueing.
                    await step.wait()
                if sample is not None:
                    phase.stats.begin = sample()
                if phase.think:
                    await asyncio.sleep(random.uniform(0, phase.think))  # no lockstep
                for _ in range(rounds):
                    for tool in tools:
                        await timed_call(client, tool, phase.stats)
                        if phase.think:
                            await asyncio.sleep(phase.think * random.uniform(0.5, 1.5))
                if sample is not None:
                    phase.stats.end = sample()
            if step is not None:
                await step.wait()
    except BaseException:
        if step is not None:
            await step.abort()  # the others stop waiting for this run and fail too
        raise


async def client_group(config: dict[str, Any]) -> None:
    """A client process (`--group CONFIG`): its runs' clients. At each phase boundary it says
    `step` on stdout once all its runs are there and goes on when stdin says `go`; at the end
    one JSON line with each phase's times and errors and the runs that failed."""
    loop = asyncio.get_running_loop()

    async def sync() -> None:
        print("step", flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if line.strip() != "go":
            raise RuntimeError("the coordinator stopped the phases")

    token = os.environ[ADMIN_ENV]
    admin = httpx2.AsyncClient(
        base_url=config["base"], headers={"Authorization": f"Bearer {token}"}, timeout=120
    )
    phases = [Phase(name, think) for name, think in config["phases"]]
    plans = config["plans"]
    step = Step(len(plans), sync)
    async with admin:
        results = await asyncio.gather(
            *(
                run_client(
                    config["base"],
                    admin,
                    t,
                    config["rounds"],
                    phases,
                    config["era"],
                    config["lean"],
                    step,
                )
                for t in plans
            ),
            return_exceptions=True,
        )
    failed = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    stats = [
        {"times": p.stats.times, "errors": p.stats.errors, "first_error": p.stats.first_error}
        for p in phases
    ]
    print(json.dumps({"phases": stats, "failed": failed}), flush=True)


async def coordinate(
    server_pid: int,
    base: str,
    token: str,
    plans: list[list[str]],
    opts: argparse.Namespace,
    phases: list[Phase],
) -> list[str]:
    """Run `plans` in --clients processes, every phase starting in all of them at once; each
    phase's stats merged into `phases`, its CPU samples taken here. Returns why runs failed."""
    count = max(1, min(opts.clients, len(plans)))
    env = {**os.environ, ADMIN_ENV: token}
    groups = []
    for i in range(count):
        config = {
            "base": base,
            "plans": plans[i::count],
            "rounds": opts.rounds,
            "phases": [(p.name, p.think) for p in phases],
            "era": opts.era,
            "lean": opts.client == "lean",
        }
        groups.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(SCRIPT),
                "--group",
                json.dumps(config),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        )
    pids = [g.pid for g in groups]
    lines: list[bytes] = []
    failed: list[str] = []
    for boundary in range(len(phases) + 1):
        lines = await asyncio.gather(*(g.stdout.readline() for g in groups if g.stdout))
        if any(line.strip() != b"step" for line in lines):
            failed.append("a run failed before the phases ended")
            break
        sample = Sample.take(server_pid, pids)
        if boundary < len(phases):
            phases[boundary].stats.begin = sample
        if boundary:
            phases[boundary - 1].stats.end = sample
        for g in groups:
            assert g.stdin is not None
            g.stdin.write(b"go\n")
            await g.stdin.drain()
    for index, g in enumerate(groups):
        assert g.stdin is not None and g.stdout is not None
        with contextlib.suppress(ConnectionError):
            g.stdin.write(b"stop\n")  # a group still waiting at a step gives up
            await g.stdin.drain()
        text = (await g.stdout.read()).decode()
        await g.wait()
        found = [lines[index].decode() if index < len(lines) else "", *text.splitlines()]
        result = next((json.loads(x) for x in found if x.startswith("{")), None)
        if result is None:
            failed.append(f"client process {g.pid} exited {g.returncode} without results")
            continue
        failed += result["failed"]
        for phase, got in zip(phases, result["phases"], strict=True):
            for tool, times in got["times"].items():
                phase.stats.times[tool].extend(times)
            for tool, n in got["errors"].items():
                phase.stats.errors[tool] += n
            for tool, why in got["first_error"].items():
                phase.stats.first_error.setdefault(tool, why)
    return failed


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(phase: Phase, alone: Stats | None) -> None:
    """The phase's calls/s, errors and CPU; per call kind, next to `alone`'s times."""
    stats = phase.stats
    assert stats.begin is not None and stats.end is not None
    b, e = stats.begin, stats.end
    wall = e.wall - b.wall
    errors = sum(stats.errors.values())
    what = f"think {phase.think:g} s +-50%" if phase.think else "back to back"
    print(
        f"\n{phase.name} ({what}): {stats.calls()} calls in {wall:.1f} s = "
        f"{stats.calls() / wall:.1f} calls/s, errors {errors}"
    )
    print(
        f"  CPU in cores: server {(e.server - b.server) / wall:.2f}, its children "
        f"{(e.children - b.children) / wall:.2f}, client {(e.client - b.client) / wall:.2f}, "
        f"whole machine {(e.machine - b.machine) / wall:.2f} of {os.cpu_count()}; "
        f"load average {b.load} -> {e.load}"
    )
    print(
        f"  server RSS {b.rss / 1024:.1f} -> {e.rss / 1024:.1f} MiB "
        f"(the most it has held: {e.peak / 1024:.1f} MiB)"
    )
    if alone is not None:
        compare(stats, alone)


def compare(stats: Stats, alone: Stats) -> None:
    """Per call kind: p50/p99 next to the run alone's, and the calls over 2x its p99."""
    print(
        f"  {'call':10} {'n':>5} {'errors':>6} {'alone n':>7} {'alone p50':>10} {'alone p99':>10} "
        f"{'p50':>10} {'p99':>10} {'p99/alone':>9}"
    )
    for tool in CALLS:
        a, t = alone.times[tool], stats.times[tool]
        ratio = pct(t, 0.99) / pct(a, 0.99) if a and t else float("nan")
        print(
            f"  {tool:10} {len(t):5d} {stats.errors[tool]:6d} {len(a):7d} {pct(a, 0.5):8.1f}ms "
            f"{pct(a, 0.99):8.1f}ms {pct(t, 0.5):8.1f}ms {pct(t, 0.99):8.1f}ms "
            f"{ratio:8.2f}x"
        )
        if tool in stats.first_error:
            print(f"    first error: {stats.first_error[tool]}")
    slow = sum(
        sum(1 for t in stats.times[tool] if t * 1000 > 2 * pct(alone.times[tool], 0.99))
        for tool in CALLS
        if alone.times[tool]
    )
    print(f"  calls over 2x their alone p99: {slow} of {stats.calls()}")


def save(path: str, opts: argparse.Namespace, phases: list[Phase], alone: dict[str, Phase]) -> None:
    """Every call's time, by phase and kind, for `--pool` to judge several runs together."""
    document: dict[str, Any] = {"era": opts.era, "client": opts.client, "phases": {}}
    for p in phases:
        if p.stats.end is not None:
            document["phases"][p.name] = {
                "times": p.stats.times,
                "errors": p.stats.errors,
                "alone": alone[p.name].stats.times,
            }
    Path(path).write_text(json.dumps(document))


def pool(paths: list[str]) -> None:
    """The calls of several saved runs as one sample each, loaded and alone: a p99 over 5 runs
    rests on 5x the calls, and one run's stall of the machine moves it less."""
    merged: dict[tuple[str, str, str], tuple[Stats, Stats, int]] = {}
    for path in paths:
        document = json.loads(Path(path).read_text())
        for name, got in document["phases"].items():
            key = (document["era"], document["client"], name)
            stats, alone, runs = merged.get(key) or (Stats(), Stats(), 0)
            for tool, times in got["times"].items():
                stats.times[tool].extend(times)
            for tool, n in got["errors"].items():
                stats.errors[tool] += n
            for tool, times in got["alone"].items():
                alone.times[tool].extend(times)
            merged[key] = (stats, alone, runs + 1)
    for (era, client, name), (stats, alone, runs) in merged.items():
        print(f"\n{name}, era {era}, client {client}: {runs} runs pooled")
        compare(stats, alone)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--eval", type=int, default=10)
    ap.add_argument("--lsp", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--alone-rounds", type=int, default=300, help="the run alone's rounds")
    ap.add_argument("--clients", type=int, default=10, help="client processes of loaded phases")
    ap.add_argument("--save", help="write every call's time to this JSON file")
    ap.add_argument("--pool", nargs="+", help="report files --save wrote as one pooled sample")
    ap.add_argument("--group", help=argparse.SUPPRESS)  # a client process's config (JSON)
    ap.add_argument("--think", type=float, default=1.5, help="paced: mean s between calls")
    ap.add_argument(
        "--alone-think", type=float, default=0.25, help="the run alone's paced think time"
    )
    ap.add_argument("--phases", default="paced,closed", help="paced, closed or both")
    ap.add_argument("--era", choices=["modern", "legacy"], default="modern")
    ap.add_argument(
        "--client", choices=["sdk", "lean"], default="sdk", help="the mcp SDK's or lean_client's"
    )
    opts = ap.parse_args()
    if opts.group:
        await client_group(json.loads(opts.group))
        return
    if opts.pool:
        pool(opts.pool)
        return
    wanted = [p.strip() for p in opts.phases.split(",") if p.strip()]
    if not wanted or any(p not in ("paced", "closed") for p in wanted):
        raise SystemExit("--phases: paced, closed or paced,closed")
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
            f"{opts.lsp} with lsp, {opts.rounds} rounds, era {opts.era}, client {opts.client}; "
            f"CPUs: {os.cpu_count()}; load average {load_average()}"
        )

        def sampler() -> Sample:
            return Sample.take(proc.pid)

        # One run alone, back to back and paced: the baselines of the closed and paced phases
        # (a call after a pause can be slower than one right after another: cold caches).
        alone = {"closed": Phase("alone", 0.0), "paced": Phase("alone, paced", opts.alone_think)}
        alone_phases = [alone[name] for name in wanted]
        every = ["ast_grep", "status", "eval", "lsp"]
        rounds = max(opts.alone_rounds, opts.rounds)
        lean = opts.client == "lean"
        await run_client(base, admin, every, rounds, alone_phases, opts.era, lean, None, sampler)
        for phase in alone_phases:
            report(phase, None)
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

        phases = [Phase(name, opts.think if name == "paced" else 0.0) for name in wanted]
        plans = []
        for i in range(opts.runs):
            tools = ["ast_grep", "status"]
            if i < opts.eval:
                tools.append("eval")
            if i < opts.lsp:
                tools.append("lsp")
            plans.append(tools)
        failed_runs = await coordinate(proc.pid, base, token, plans, opts, phases)
        print(f"runs that failed outright: {len(failed_runs)}")
        for why in failed_runs[:3]:
            print(f"  {why}")
        for phase in phases:
            if phase.stats.end is not None:
                report(phase, alone[phase.name].stats)
        if opts.save:
            save(opts.save, opts, phases, alone)

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
            f"\nSIGTERM with {len(live)} live runs ({len(children)} child processes): "
            f"exited in {closed:.2f} s, processes left: {len(left)}"
        )
    finally:
        await admin.aclose()
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
