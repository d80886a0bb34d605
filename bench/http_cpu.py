"""The run server's CPU per call, by call kind, with 2026-era tools/calls on the direct path
against the same calls through the SDK's own path (LIVETOOLS_HTTP_DIRECT=0), alternately.

One `serve --http --runs-under` process per round, one run, one `mcp` SDK client calling back to
back (after three warm-up calls of each kind); the server's user + system time from /proc over N
calls of each kind. This is the CPU every other run waits behind on the server's one event loop
(bench/http_load.py measures that wait); the server's children (kernel, language server) are
shown apart.

    uv run python bench/http_cpu.py [--calls 300] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx2
from http_load import CALLS, PROJECT, cpu_seconds, descendants, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def one_server(direct: bool, calls: int) -> dict[str, tuple[float, float, float]]:
    """Per kind: (server ms of CPU per call, children ms per call, median wall ms)."""
    os.environ["LIVETOOLS_HTTP_DIRECT"] = "1" if direct else "0"  # the server inherits it
    under = Path(tempfile.mkdtemp(prefix="livetools-http-cpu-"))
    shutil.copytree(PROJECT, under / "proj")
    token = secrets.token_urlsafe(16)
    proc, base = start_server(under, token, 5)
    out: dict[str, tuple[float, float, float]] = {}
    try:
        admin = httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"})
        async with admin:
            run = (await admin.post("/runs", json={"root": "proj"})).json()
        auth = {"Authorization": f"Bearer {run['token']}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(120)) as http,
            Client(streamable_http_client(f"{base}{run['url']}", http_client=http)) as client,
        ):
            for name, args in CALLS.values():
                for _ in range(3):
                    await client.call_tool(name, args)
            for kind, (name, args) in CALLS.items():
                server, children = cpu_seconds(proc.pid), _children(proc.pid)
                walls = []
                for _ in range(calls):
                    started = time.perf_counter()
                    result = await client.call_tool(name, args)
                    walls.append(time.perf_counter() - started)
                    assert not result.is_error, result.content
                out[kind] = (
                    (cpu_seconds(proc.pid) - server) / calls * 1000,
                    (_children(proc.pid) - children) / calls * 1000,
                    statistics.median(walls) * 1000,
                )
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(under, ignore_errors=True)
    return out


def _children(pid: int) -> float:
    return sum(cpu_seconds(p) for p in descendants(pid))


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300, help="calls of each kind per server")
    ap.add_argument("--rounds", type=int, default=2, help="servers of each path, alternating")
    opts = ap.parse_args()
    seen: dict[bool, dict[str, list[tuple[float, float, float]]]] = {
        True: defaultdict(list),
        False: defaultdict(list),
    }
    for _ in range(opts.rounds):
        for direct in (False, True):
            for kind, figures in (await one_server(direct, opts.calls)).items():
                seen[direct][kind].append(figures)
    print(f"server CPU per call, ms ({opts.calls} calls of each kind x {opts.rounds} servers)")
    print(f"  {'call':9} {'SDK path':>10} {'direct':>10} {'ratio':>6}   children  wall p50")
    for kind in CALLS:
        sdk = statistics.median(f[0] for f in seen[False][kind])
        ours = statistics.median(f[0] for f in seen[True][kind])
        kids = statistics.median(f[1] for f in seen[True][kind])
        walls = [statistics.median(f[2] for f in seen[d][kind]) for d in (False, True)]
        print(
            f"  {kind:9} {sdk:10.2f} {ours:10.2f} {ours / sdk:5.2f}x   {kids:8.2f}  "
            f"{walls[0]:.1f} -> {walls[1]:.1f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
