"""The worker lifecycle with the command backend and real subprocess workers (worker.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import datetime

import pytest

from livetools.procs import session_members
from tests.support import alive, assert_gone
from tests.vibe.conftest import WORKER_ARGV, lines, ok, vibe_run, wait_for_file


async def test_spawn_returns_at_once_and_wait_settles_with_the_result(tmp_path):
    async with vibe_run(tmp_path) as run:
        started = time.monotonic()
        spawn = await ok(
            run, "vibe_spawn", {"brief": lines("sleep 0.8", "say all done"), "label": "slow"}
        )
        assert time.monotonic() - started < 0.5
        assert spawn.text.startswith("w1 running (command): slow")
        assert spawn.data["state"] == "running"
        waited = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert waited.text.startswith("w1 settled in ")
        assert waited.text.endswith("all done")
        assert waited.data["timed_out"] is False
        assert waited.data["state"] == "settled"
        assert waited.data["result"] == "all done"
        assert waited.data["elapsed_s"] >= 0.8


async def test_wait_timeout_is_still_running_not_settled(tmp_path):
    async with vibe_run(tmp_path) as run:
        await ok(run, "vibe_spawn", {"brief": lines("sleep 1.5", "say late"), "label": "l"})
        started = time.monotonic()
        waited = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 0.3})
        assert 0.3 <= time.monotonic() - started < 1.2
        assert waited.data["timed_out"] is True and waited.data["state"] == "running"
        assert "still running after waiting 0.3s" in waited.text
        assert waited.data["result"] is None
        polled = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 0})
        assert polled.data["timed_out"] is True
        done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert done.data["timed_out"] is False and done.data["result"] == "late"


async def test_send_stops_the_running_attempt_and_reruns_with_the_appended_brief(tmp_path):
    async with vibe_run(tmp_path) as run:
        brief = lines("pidfile first.pid", "hold 60", "brief")
        await ok(run, "vibe_spawn", {"brief": brief, "label": "refine"})
        first = int(await wait_for_file(tmp_path / "first.pid"))
        started = time.monotonic()
        sent = await ok(run, "vibe_send", {"worker_id": "w1", "message": "say also this"})
        assert time.monotonic() - started < 5
        assert sent.data["previous"] == "running"
        assert "stopped and re-queued" in sent.text
        assert_gone([first])
        done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert done.data["state"] == "settled" and done.data["attempts"] == 2
        # The re-run read the original brief with the message appended, and obeyed both.
        assert (
            done.data["result"]
            == lines(
                "pidfile first.pid", "hold 60", "brief", "", "--- follow-up 1 ---", "say also this"
            )
            + "\nalso this"
        )
        # A settled worker re-runs too; the brief keeps every follow-up in order.
        again = await ok(run, "vibe_send", {"worker_id": "w1", "message": "say third"})
        assert again.data["previous"] == "settled"
        done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert done.data["attempts"] == 3
        result = done.data["result"]
        assert result.index("follow-up 1") < result.index("follow-up 2") < result.index("third")


async def test_kill_takes_the_whole_tree_including_processes_that_left_the_session(tmp_path):
    async with vibe_run(tmp_path) as run:
        brief = lines("pidfile worker.pid", "tree tree.pids", "sleep 600")
        await ok(run, "vibe_spawn", {"brief": brief, "label": "tree"})
        pids = [int(p) for p in (await wait_for_file(tmp_path / "tree.pids")).split()]
        worker_pid = int((tmp_path / "worker.pid").read_text())
        assert all(alive(p) for p in [worker_pid, *pids])
        pool = run.resource("vibe")
        [sid] = pool.workers["w1"].sessions
        started = time.monotonic()
        killed = await ok(run, "vibe_kill", {"worker_id": "w1"})
        assert time.monotonic() - started < 5
        assert killed.data["previous"] == "running" and killed.data["state"] == "killed"
        assert killed.text.startswith("killed w1 (was running")
        assert_gone([worker_pid, *pids], within=2)
        assert session_members(sid) == []
        waited = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 5})
        assert waited.data["state"] == "killed" and "was killed" in waited.text
        again = await ok(run, "vibe_kill", {"worker_id": "w1"})
        assert again.data["previous"] == "killed" and "nothing to stop" in again.text


@pytest.mark.parametrize("sampling", [True, False], ids=["sampled", "unsampled"])
async def test_a_settled_worker_leaves_no_background_process(tmp_path, monkeypatch, sampling):
    """Unsampled: the worker exits before any sample, so its setsid'd grandchild has already
    left the tree and only the attempt's environment mark finds it."""
    if not sampling:
        from livetools_vibe import command

        async def no_sampling(*args: object) -> None:
            return None

        monkeypatch.setattr(command, "_sample", no_sampling)
    async with vibe_run(tmp_path) as run:
        await ok(run, "vibe_spawn", {"brief": lines("tree tree.pids", "say quick"), "label": "bg"})
        done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert done.data["result"] == "quick"
        pids = [int(p) for p in (tmp_path / "tree.pids").read_text().split()]
        assert_gone(pids, within=2)


async def test_failure_reports_exit_status_and_stderr_tail(tmp_path):
    async with vibe_run(tmp_path) as run:
        noise = [f"err line {n}" for n in range(1, 61)]
        brief = lines("say partial output", *noise, "err Traceback: it broke", "exit 3")
        await ok(run, "vibe_spawn", {"brief": brief, "label": "broken"})
        waited = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert waited.data["state"] == "failed"
        assert waited.text.startswith("w1 failed after ")
        assert "exit 3" in waited.text and "Traceback: it broke" in waited.text
        assert "\nline 60\n" in waited.text and "\nline 1\n" not in waited.text  # a tail
        assert waited.data["error"].startswith("exit 3")
        listed = await ok(run, "vibe_list")
        assert "w1 good failed" in listed.text and "exit 3" in listed.text


async def test_a_command_that_cannot_start_fails_clearly(tmp_path):
    async with vibe_run(tmp_path, command=["no-such-agent-cli", "-p"]) as run:
        await ok(run, "vibe_spawn", {"brief": "x", "label": "missing"})
        waited = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 10})
        assert waited.data["state"] == "failed"
        assert "cannot start 'no-such-agent-cli'" in waited.text
        assert "not found on PATH" in waited.text and "good command" in waited.text


async def test_an_attempt_over_the_configured_timeout_fails_and_is_stopped(tmp_path):
    async with vibe_run(tmp_path, timeout=0.5) as run:
        await ok(run, "vibe_spawn", {"brief": lines("pidfile w.pid", "sleep 60"), "label": "t"})
        pid = int(await wait_for_file(tmp_path / "w.pid"))
        waited = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 10})
        assert waited.data["state"] == "failed" and "timed out after 0.5s" in waited.text
        assert_gone([pid], within=2)


async def test_concurrency_limit_queues_the_rest_in_order(tmp_path):
    async with vibe_run(tmp_path, max_workers=2) as run:
        for n in range(1, 4):
            await ok(run, "vibe_spawn", {"brief": lines("sleep 0.6", f"say {n}"), "label": f"j{n}"})
        pool = run.resource("vibe")
        assert [pool.workers[w].state for w in ("w1", "w2", "w3")] == [
            "running",
            "running",
            "queued",
        ]
        listed = await ok(run, "vibe_list")
        assert "w3 good queued" in listed.text
        third = await ok(run, "vibe_wait", {"worker_id": "w3", "timeout_seconds": 30})
        assert third.data["result"] == "3"
        workers = {w["id"]: w for w in (await ok(run, "vibe_list")).data["workers"]}
        first_end = min(datetime.fromisoformat(workers[w]["ended_at"]) for w in ("w1", "w2"))
        assert datetime.fromisoformat(workers["w3"]["started_at"]) >= first_end
        assert datetime.fromisoformat(workers["w3"]["queued_at"]) < first_end


async def test_a_queued_worker_can_be_killed_and_restarted(tmp_path):
    async with vibe_run(tmp_path, max_workers=1) as run:
        await ok(run, "vibe_spawn", {"brief": lines("sleep 30"), "label": "a"})
        second = await ok(run, "vibe_spawn", {"brief": "say b", "label": "b"})
        assert second.text.startswith("w2 queued (1 running, limit 1)")
        killed = await ok(run, "vibe_kill", {"worker_id": "w2"})
        assert killed.data["previous"] == "queued"
        sent = await ok(run, "vibe_send", {"worker_id": "w2", "message": "say c"})
        assert sent.data["previous"] == "killed" and sent.data["state"] == "queued"
        await ok(run, "vibe_kill", {"worker_id": "w1"})
        done = await ok(run, "vibe_wait", {"worker_id": "w2", "timeout_seconds": 30})
        assert done.data["result"] == "b\nc"


async def test_list_fields(tmp_path):
    async with vibe_run(tmp_path) as run:
        empty = await ok(run, "vibe_list")
        assert empty.text.startswith("no workers yet")
        await ok(
            run, "vibe_spawn", {"brief": "say " + "x" * 500, "label": "long result", "tier": "fast"}
        )
        await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        await ok(run, "vibe_spawn", {"brief": lines("sleep 30"), "label": "busy"})
        listed = await ok(run, "vibe_list")
        first, second = listed.text.splitlines()
        assert first.startswith("w2 good running ") and first.endswith(" busy")
        assert second.startswith("w1 fast settled ") and " long result: xxx" in second
        assert "… (+340 chars)" in second
        [w2, w1] = listed.data["workers"]
        assert {"id", "label", "tier", "state", "elapsed_s", "result", "error"} <= set(w1)
        assert {"queued_at", "started_at", "ended_at", "attempts", "backend"} <= set(w1)
        assert w1["tier"] == "fast" and w1["state"] == "settled" and w1["backend"] == "command"
        assert w2["ended_at"] is None and w2["elapsed_s"] >= 0


async def test_bad_calls_are_clear_errors(tmp_path):
    async with vibe_run(tmp_path) as run:
        for tool, args in [
            ("vibe_wait", {"worker_id": "w9"}),
            ("vibe_send", {"worker_id": "w9", "message": "m"}),
            ("vibe_kill", {"worker_id": "w9"}),
        ]:
            result = await run.call(tool, args)
            assert result.is_error and 'no worker "w9" in this run' in result.text
        blank = await run.call("vibe_spawn", {"brief": "  ", "label": "x"})
        assert blank.is_error and "brief" in blank.text and "must not be empty" in blank.text
        tier = await run.call("vibe_spawn", {"brief": "b", "label": "x", "tier": "best"})
        assert tier.is_error and "'fast' or 'good'" in tier.text
        long = await run.call("vibe_wait", {"worker_id": "w1", "timeout_seconds": 99999})
        assert long.is_error and "between 0 and 1800" in long.text


async def test_nothing_left_after_run_close(tmp_path):
    async with vibe_run(tmp_path, max_workers=2) as run:
        for n in (1, 2):
            brief = lines(f"pidfile w{n}.pid", f"tree t{n}.pids", "sleep 600")
            await ok(run, "vibe_spawn", {"brief": brief, "label": f"long {n}"})
        await ok(run, "vibe_spawn", {"brief": lines("pidfile w3.pid", "sleep 600"), "label": "q"})
        pids = []
        for n in (1, 2):
            pids += [int(p) for p in (await wait_for_file(tmp_path / f"t{n}.pids")).split()]
            pids.append(int((tmp_path / f"w{n}.pid").read_text()))
        pool = run.resource("vibe")
        sessions = [s for w in pool.workers.values() for s in w.sessions]
        started = time.monotonic()
    assert time.monotonic() - started < 10
    assert_gone(pids, within=2)
    assert all(session_members(sid) == [] for sid in sessions) and len(sessions) == 2
    assert {w.state for w in pool.workers.values()} == {"killed"}
    assert not (tmp_path / "w3.pid").exists()  # the queued one never started
    await asyncio.sleep(0.2)
    assert not (tmp_path / "w3.pid").exists()


HOST_SCRIPT = """
import asyncio, sys
import livetools_vibe
from livetools import Host

async def main(root, worker):
    host = Host(plugins=[("vibe", livetools_vibe)], entry_points=False)
    options = {"vibe": True, "vibe_config": {"command": [sys.executable, worker]}}
    run = await host.open_run(root, options=options)
    brief = "pidfile worker.pid\\ntree tree.pids\\nsleep 600\\n"
    result = await run.call("vibe_spawn", {"brief": brief, "label": "orphan"})
    print(result.text, flush=True)
    await asyncio.sleep(600)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_workers_die_with_a_killed_host(tmp_path):
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_SCRIPT, str(tmp_path), str(WORKER_ARGV[1])],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        pids = [int(p) for p in asyncio.run(wait_for_file(tmp_path / "tree.pids")).split()]
        pids.append(int((tmp_path / "worker.pid").read_text()))
        time.sleep(1.0)  # the sampler has seen the process that left the session
        assert all(alive(p) for p in pids)
    finally:
        os.killpg(host.pid, signal.SIGKILL)
        host.wait(5)
    assert_gone(pids, within=5)
