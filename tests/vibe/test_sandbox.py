"""Command workers inside a real bubblewrap sandbox: the root at /workspace, the result back, kill
and close leaving nothing. Processes are found on the host by a token in their environment (pids
inside are another namespace's)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from livetools import Ports
from livetools.procs import session_members
from tests.sandboxes import TOKEN_ENV, bwrap_sandbox, marked, require_bwrap
from tests.support import assert_gone
from tests.vibe.conftest import WORKER_ARGV, lines, ok, vibe_run, wait_for_file


async def test_a_worker_runs_inside_and_its_result_comes_back(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    with bwrap_sandbox(tmp_path) as sandbox:
        command = [*WORKER_ARGV, "{root}"]  # a host path in argv is mapped to the inside's
        ports = Ports(sandbox=sandbox)
        async with vibe_run(tmp_path, ports=ports, command=command, env={TOKEN_ENV: token}) as run:
            brief = lines("cwd", "pidfile worker.pid", "argv", "say done")
            await ok(run, "vibe_spawn", {"brief": brief, "label": "inside"})
            done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 60})
            assert done.data["state"] == "settled", done.text
            assert done.data["result"] == "/workspace\nargv: /workspace\ndone"
            assert (tmp_path / "worker.pid").is_file()  # written in /workspace, seen on the host
        assert marked(token) == []


async def test_kill_and_close_leave_nothing_of_the_tree(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    with bwrap_sandbox(tmp_path) as sandbox:
        ports = Ports(sandbox=sandbox)
        async with vibe_run(tmp_path, ports=ports, env={TOKEN_ENV: token}, max_workers=2) as run:
            for n in (1, 2):
                brief = lines(f"tree t{n}.pids", "sleep 600")
                await ok(run, "vibe_spawn", {"brief": brief, "label": f"long {n}"})
            for n in (1, 2):
                await wait_for_file(tmp_path / f"t{n}.pids", within=60)
            pool = run.resource("vibe")
            first = marked(token)
            # per worker: bwrap (twice), the worker, its child, the setsid'd leaver and its child
            assert len(first) >= 12, first
            [sid] = pool.workers["w1"].sessions
            w1 = _tree(sid, first)
            assert len(w1) >= 6, (w1, first)
            started = time.monotonic()
            killed = await ok(run, "vibe_kill", {"worker_id": "w1"})
            assert time.monotonic() - started < 10
            assert killed.data["previous"] == "running" and killed.data["state"] == "killed"
            assert_gone(w1, within=5)
            assert session_members(sid) == []
            left = marked(token)
            assert left and not set(left) & w1  # the other worker's tree still runs
        assert_gone(left, within=5)
        assert marked(token) == []


def _tree(sid: int, pids: list[int]) -> set[int]:
    """The pids (of `pids`) below the launcher `sid` by parent links: its setsid'd ones too."""
    parents: dict[int, int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                parents[pid] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            continue
    found = {p for p in pids if p == sid}
    grew = True
    while grew:
        more = {p for p, parent in parents.items() if parent in found or parent == sid} - found
        grew = bool(more)
        found |= more
    return found


HOST_SCRIPT = """
import asyncio, sys
import livetools_vibe
from livetools import Host

async def main(root, worker, key, token):
    host = Host(plugins=[("vibe", livetools_vibe)], entry_points=False)
    config = {"command": [sys.executable, worker], "env": {key: token}}
    options = {"vibe": True, "vibe_config": config, "sandbox": "bwrap"}
    run = await host.open_run(root, options=options)
    brief = "tree tree.pids\\nsleep 600\\n"
    result = await run.call("vibe_spawn", {"brief": brief, "label": "orphan"})
    print(result.text, flush=True)
    await asyncio.sleep(600)

asyncio.run(main(*sys.argv[1:]))
"""


def test_nothing_survives_a_sigkilled_host(tmp_path: Path) -> None:
    require_bwrap()
    token = uuid.uuid4().hex
    # The worker script under the root (mapped inside): this host process's import path does
    # not hold the tests folder, which a private /tmp may hide (a checkout under /tmp).
    worker = tmp_path / "worker.py"
    shutil.copy(WORKER_ARGV[1], worker)
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_SCRIPT, str(tmp_path), str(worker), TOKEN_ENV, token],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    pids: list[int] = []
    try:
        asyncio.run(wait_for_file(tmp_path / "tree.pids", within=60))
        pids = marked(token)
        assert len(pids) >= 6, pids  # bwrap (twice), the worker, its child, the leaver, its child
    finally:
        os.killpg(host.pid, signal.SIGKILL)
        host.wait(10)
    assert_gone(pids, within=10)
