"""A worker never gets more than whoever spawned it: real workers that run the livetools CLI."""

from __future__ import annotations

import json
import sys

from tests.vibe.conftest import WORKER_ARGV, kit_host, lines, ok, vibe_run

READ_TOOLS = {"echo", "picture", "unlock"}  # the testkit plugin's read tools
WRITE = json.dumps({"tool": "write", "args": {"path": "x.txt", "content": "hi"}})


async def worker_result(run, brief: str, surface: str = "agent", **spawn) -> str:
    await ok(run, "vibe_spawn", {"brief": brief, "label": "probe", **spawn}, surface=surface)
    worker_id = f"w{len(run.resource('vibe').workers)}"
    done = await ok(run, "vibe_wait", {"worker_id": worker_id, "timeout_seconds": 60})
    assert done.data["state"] == "settled", done.text
    return done.data["result"]


def tool_tiers(output: str) -> dict[str, str]:
    [listing] = [line for line in output.splitlines() if line.startswith("[")]
    return {t["name"]: t["tier"] for t in json.loads(listing)}


async def test_a_worker_spawned_from_plan_sees_only_read_tools(tmp_path):
    async with vibe_run(tmp_path, honours_surface=True) as run:
        brief = lines("env", "livetools tools --format json --root .")
        out = await worker_result(run, brief, surface="plan")
        assert out.startswith(
            "LIVETOOLS_SURFACE=read,-ask_user LIVETOOLS_WORKER=1 LIVETOOLS_WORKER_ID=w1"
        )
        tiers = tool_tiers(out)
        assert set(tiers) == READ_TOOLS and set(tiers.values()) == {"read"}
        # Asking for more inside the worker does not lift the ceiling.
        lifted = await worker_result(
            run, lines("livetools tools --format json --surface agent --root ."), surface="plan"
        )
        assert set(tool_tiers(lifted)) == READ_TOOLS


async def test_a_worker_spawned_from_agent_sees_write_and_exec_tools(tmp_path):
    async with vibe_run(tmp_path, honours_surface=True) as run:
        out = await worker_result(run, lines("env", "livetools tools --format json --root ."))
        assert out.startswith("LIVETOOLS_SURFACE=read,write,exec,-ask_user LIVETOOLS_WORKER=1")
        assert set(tool_tiers(out).values()) == {"read", "write", "exec"}


async def test_a_plan_agent_cannot_edit_files_through_a_worker(tmp_path):
    async with vibe_run(tmp_path, honours_surface=True) as run:
        refused = await worker_result(run, f"livetools session --root . <<< {WRITE}", "plan")
        line = json.loads(refused)
        assert line["ok"] is False and 'unknown tool "write"' in line["text"]
        assert not (tmp_path / "x.txt").exists()
        allowed = await worker_result(run, f"livetools session --root . <<< {WRITE}", "agent")
        assert json.loads(allowed)["ok"] is True
        assert (tmp_path / "x.txt").read_text() == "hi"


async def test_a_custom_surface_passes_its_tiers(tmp_path):
    h = kit_host()
    h.define_surface("reviewer", ["read", "exec"])
    async with vibe_run(tmp_path, h, honours_surface=True) as run:
        out = await worker_result(run, lines("env"), surface="reviewer")
        assert out.startswith("LIVETOOLS_SURFACE=read,exec,-ask_user LIVETOOLS_WORKER=1")


async def test_a_ceiling_this_process_inherited_caps_its_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("LIVETOOLS_SURFACE", "plan")
    async with vibe_run(tmp_path, honours_surface=True) as run:
        out = await worker_result(run, lines("env"), surface="agent")
        assert out.startswith("LIVETOOLS_SURFACE=read,-ask_user ")


async def test_restricted_spawners_need_a_readonly_command_unless_the_worker_honours_it(tmp_path):
    async with vibe_run(tmp_path) as run:
        refused = await run.call("vibe_spawn", {"brief": "say hi", "label": "x"}, surface="plan")
        assert refused.is_error
        assert "surface (read,-ask_user) may not write" in refused.text
        assert (
            "[tool.livetools.vibe.readonly]" in refused.text and "honours_surface" in refused.text
        )
        assert run.resource("vibe").workers == {}
        # The agent surface still uses the ordinary command.
        assert await worker_result(run, "say hi") == "hi"
    readonly = {"fast": [*WORKER_ARGV, "--read-only"]}
    async with vibe_run(tmp_path, readonly=readonly) as run:
        out = await worker_result(run, lines("argv", "env"), surface="plan", tier="fast")
        assert out.splitlines()[0] == "argv: --read-only"
        assert "LIVETOOLS_SURFACE=read,-ask_user" in out and "LIVETOOLS_VIBE_TIER=fast" in out
        good = await run.call("vibe_spawn", {"brief": "x", "label": "g"}, surface="plan")
        assert good.is_error and "[tool.livetools.vibe.readonly]" in good.text
        assert await worker_result(run, lines("argv"), surface="agent") == "argv:"


async def test_send_reruns_under_the_senders_ceiling(tmp_path):
    async with vibe_run(tmp_path, honours_surface=True) as run:
        first = await worker_result(run, lines("env"), surface="agent")
        assert first.startswith("LIVETOOLS_SURFACE=read,write,exec,")
        await ok(run, "vibe_send", {"worker_id": "w1", "message": "again"}, surface="plan")
        done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert done.data["result"].startswith("LIVETOOLS_SURFACE=read,-ask_user")
        assert done.data["surface"] == "worker<=plan"


async def test_template_placeholders(tmp_path):
    argv = [sys.executable, WORKER_ARGV[1], "{tier}", "{label}", "{worker_id}", "{surface}"]
    async with vibe_run(tmp_path, command=argv) as run:
        out = await worker_result(run, "argv", tier="fast", label="my job")
        assert out == "argv: fast my job w1 read,write,exec,-ask_user"
