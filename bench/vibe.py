"""vibe workers against their anchor, a bare asyncio subprocess, in one process.

Each case runs the same tiny worker (read the brief on stdin, print it): the anchor starts it with
`asyncio.create_subprocess_exec` and `communicate()`; ours is `vibe_spawn` + `vibe_wait` through a
real run (config, pool, own session, tree sampling, session kill at the end). A third case times
`vibe_kill` of a worker with a grandchild until every process is gone, against `os.killpg` +
`wait()` of a bare process group. Medians of --runs; the ratio is ours/anchor (lower is better).

    uv run python bench/vibe.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import livetools_vibe
from livetools import Host
from livetools.procs import session_members

ECHO = "import sys; sys.stdout.write(sys.stdin.read())"
TREE = (
    "import subprocess, sys, time; sys.stdin.read();"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
    "print('up', flush=True); time.sleep(60)"
)


async def anchor_echo() -> float:
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ECHO, stdin=-1, stdout=-1, stderr=-1
    )
    out, _ = await proc.communicate(b"brief")
    assert out == b"brief"
    return time.perf_counter() - start


async def anchor_kill() -> float:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TREE, stdin=-1, stdout=-1, start_new_session=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    await proc.stdout.readline()
    start = time.perf_counter()
    os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
    while session_members(proc.pid):  # noqa: ASYNC110 (no event marks a session's end)
        await asyncio.sleep(0.001)
    return time.perf_counter() - start


async def ours(runs: int, root: Path) -> tuple[list[float], list[float]]:
    host = Host(plugins=[("vibe", livetools_vibe)], entry_points=False)
    config = {"command": [sys.executable, "-c", ECHO], "max_workers": 4}
    echo, kill = [], []
    async with host.open_run(root, options={"vibe": True, "vibe_config": config}) as run:
        pool = run.resource("vibe")
        for n in range(runs):
            start = time.perf_counter()
            await run.call("vibe_spawn", {"brief": "brief", "label": f"e{n}"})
            done = await run.call("vibe_wait", {"worker_id": f"w{len(pool.workers)}"})
            echo.append(time.perf_counter() - start)
            assert done.data["result"] == "brief", done.text
        pool.config.templates = {t: [sys.executable, "-c", TREE] for t in ("fast", "good")}
        for n in range(runs):
            await run.call("vibe_spawn", {"brief": "x", "label": f"k{n}"})
            worker = pool.workers[f"w{len(pool.workers)}"]
            while not worker.sessions or len(session_members(worker.sessions[0])) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            start = time.perf_counter()
            await run.call("vibe_kill", {"worker_id": worker.id})
            assert session_members(worker.sessions[0]) == []
            kill.append(time.perf_counter() - start)
    return echo, kill


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base_echo = [await anchor_echo() for _ in range(runs)]
        base_kill = [await anchor_kill() for _ in range(runs)]
        echo, kill = await ours(runs, Path(tmp))
    print(f"{'case':<28}{'anchor ms':>11}{'vibe ms':>10}{'ratio':>8}")
    for name, base, mine in (
        ("spawn+wait (echo worker)", base_echo, echo),
        ("kill worker with grandchild", base_kill, kill),
    ):
        b, m = statistics.median(base) * 1000, statistics.median(mine) * 1000
        print(f"{name:<28}{b:>11.1f}{m:>10.1f}{m / b:>8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    asyncio.run(main(parser.parse_args().runs))
