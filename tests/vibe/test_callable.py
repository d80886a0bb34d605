"""The callable backend (a harness's in-process agent), third-party backends through the family
hook, and vibe mode switched on and off mid-run."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

import livetools_vibe
from livetools import Ports, Result, Tier, Tool, hookimpl
from livetools_vibe import Backend, WorkerFailure, WorkerRequest
from tests.vibe.conftest import WORKER_ARGV, host, kit_host, lines, ok, vibe_run


class NoArgs(BaseModel):
    pass


class AskStub:
    """A read-tier ask_user, to show that worker surfaces never carry it."""

    @hookimpl
    def livetools_register_tools(self, register):
        async def ask(ctx, args):
            return "answer"

        register(Tool("ask_user", Tier.READ, NoArgs, ask, "stub"))


async def settle(run, worker_id: str = "w1", within: float = 30):
    return await ok(run, "vibe_wait", {"worker_id": worker_id, "timeout_seconds": within})


async def test_the_harness_agent_gets_a_capped_surface_and_reaches_tools_through_it(tmp_path):
    seen: list[WorkerRequest] = []

    async def agent(request: WorkerRequest) -> str:
        seen.append(request)
        names = sorted(s["name"] for s in request.schemas("json") if not s["name"].startswith("v"))
        touched = await request.call("touch", {"path": "a.txt", "content": "x"})
        echoed = await request.call("echo", {"text": request.brief})
        return f"{names} touch_ok={not touched.is_error} echo={echoed.text}"

    h = kit_host(("askstub", AskStub()))
    async with vibe_run(tmp_path, h, Ports(workers=agent)) as run:
        assert "ask_user" in {t.name for t in run.tools("plan")}
        await ok(run, "vibe_spawn", {"brief": "look", "label": "reader"}, surface="plan")
        done = await settle(run)
        assert done.data["backend"] == "harness"
        assert done.data["result"] == "['echo', 'picture', 'unlock'] touch_ok=False echo=look"
        assert not (tmp_path / "a.txt").exists()
        plan_request = seen[0]
        assert plan_request.surface.tiers == frozenset({Tier.READ})
        assert "ask_user" in plan_request.surface.exclude
        assert plan_request.surface.name == "worker<=plan"
        assert (plan_request.worker_id, plan_request.label, plan_request.tier) == (
            "w1",
            "reader",
            "good",
        )

        await ok(run, "vibe_spawn", {"brief": "edit", "label": "writer", "tier": "fast"})
        done = await settle(run, "w2")
        assert "touch_ok=True" in done.data["result"] and "'nap'" in done.data["result"]
        assert "ask_user" not in done.data["result"]
        assert (tmp_path / "a.txt").read_text() == "x"


async def test_kill_cancels_the_agent_and_the_workers_it_spawned(tmp_path):
    cancelled: list[str] = []

    async def agent(request: WorkerRequest) -> str:
        try:
            if request.brief == "parent":
                child = await request.call("vibe_spawn", {"brief": "child", "label": "sub"})
                assert not child.is_error, child.text
            await asyncio.Event().wait()
        finally:
            cancelled.append(request.brief)
        return "never"

    async with vibe_run(tmp_path, ports=Ports(workers=agent)) as run:
        await ok(run, "vibe_spawn", {"brief": "parent", "label": "p"})
        pool = run.resource("vibe")
        for _ in range(200):
            if "w2" in pool.workers and pool.workers["w2"].state == "running":
                break
            await asyncio.sleep(0.01)
        assert pool.workers["w2"].parent == "w1"
        killed = await ok(run, "vibe_kill", {"worker_id": "w1"})
        assert killed.data["previous"] == "running"
        assert sorted(cancelled) == ["child", "parent"]
        assert pool.workers["w2"].state == "killed"


async def test_an_attempt_that_ends_stops_the_workers_it_left_running(tmp_path):
    async def agent(request: WorkerRequest) -> str:
        if request.brief == "parent":
            await request.call("vibe_spawn", {"brief": "child", "label": "sub"})
            return "spawned and left"
        await asyncio.Event().wait()
        return "never"

    async with vibe_run(tmp_path, ports=Ports(workers=agent)) as run:
        await ok(run, "vibe_spawn", {"brief": "parent", "label": "p"})
        assert (await settle(run)).data["result"] == "spawned and left"
        child = await settle(run, "w2", 5)
        assert child.data["state"] == "killed"


async def test_agent_failures_become_failed_workers(tmp_path):
    async def agent(request: WorkerRequest) -> object:
        if request.brief == "raise":
            raise RuntimeError("no model quota left")
        if request.brief == "failure":
            raise WorkerFailure("gave up", "the last thing it saw")
        if request.brief == "result":
            return Result.error("could not find the bug")
        return Result("found it")

    async with vibe_run(tmp_path, ports=Ports(workers=agent)) as run:
        for brief in ("raise", "failure", "result", "fine"):
            await ok(run, "vibe_spawn", {"brief": brief, "label": brief})
        texts = [(await settle(run, f"w{n}")).text for n in range(1, 5)]
        assert (
            "failed" in texts[0]
            and "harness backend failed: RuntimeError: no model quota left" in texts[0]
        )
        assert (
            "failed" in texts[1] and "gave up" in texts[1] and "the last thing it saw" in texts[1]
        )
        assert "failed" in texts[2] and "could not find the bug" in texts[2]
        assert texts[3].endswith("settled in 0.0s:\nfound it")


async def test_the_harness_agent_goes_first_and_the_config_can_name_another(tmp_path):
    async def agent(request: WorkerRequest) -> str:
        return "from the harness"

    async with vibe_run(tmp_path, ports=Ports(workers=agent)) as run:
        await ok(run, "vibe_spawn", {"brief": "say from the command", "label": "a"})
        assert (await settle(run)).data["result"] == "from the harness"
    async with vibe_run(tmp_path, ports=Ports(workers=agent), backend="command") as run:
        await ok(run, "vibe_spawn", {"brief": "say from the command", "label": "a"})
        assert (await settle(run)).data["result"] == "from the command"


class Echo(Backend):
    name = "echo"
    priority = 10

    def unavailable(self, request: WorkerRequest) -> str | None:
        return None if request.tier == "fast" else "echo only does fast work"

    async def run(self, request: WorkerRequest) -> str:
        return f"echo: {request.brief}"


class EchoPlugin:
    @hookimpl
    def livetools_vibe_backends(self, config):
        return Echo()


class BrokenPlugin:
    @hookimpl
    def livetools_vibe_backends(self, run):
        raise RuntimeError("cannot list backends")


async def test_a_third_party_backend_through_the_family_hook(tmp_path):
    h = host(("echo", EchoPlugin()), ("broken", BrokenPlugin()))
    assert not h.plugins.failures
    async with vibe_run(tmp_path, h) as run:
        await ok(run, "vibe_spawn", {"brief": "hi", "label": "f", "tier": "fast"})
        assert (await settle(run)).data["result"] == "echo: hi"
        await ok(run, "vibe_spawn", {"brief": "say by command", "label": "g"})
        done = await settle(run, "w2")
        assert done.data["backend"] == "command" and done.data["result"] == "by command"
        status = await run.resource("vibe").status()
        assert list(status["backends"]) == ["echo", "command"]
        assert (
            "plugin broken: worker backends failed: RuntimeError: cannot list backends"
            in (status["problems"])
        )
    async with vibe_run(tmp_path, h, backend="echo") as run:
        refused = await run.call("vibe_spawn", {"brief": "hi", "label": "g"})
        assert refused.is_error and "echo: echo only does fast work" in refused.text
    async with vibe_run(tmp_path, h, backend="cloud") as run:
        refused = await run.call("vibe_spawn", {"brief": "hi", "label": "g"})
        assert refused.is_error
        assert 'names backend "cloud", which is not installed (backends: echo, command)' in (
            refused.text
        )


async def test_vibe_mode_switched_on_and_off_mid_run(tmp_path):
    changes: list[int] = []
    async with host().open_run(tmp_path) as run:
        run.on_tools_changed(lambda: changes.append(1))
        assert not [t for t in run.tools() if t.name.startswith("vibe_")]
        refused = await run.call("vibe_list")
        assert refused.is_error and 'unknown tool "vibe_list"' in refused.text
        run.options["vibe_config"] = {"command": [*WORKER_ARGV]}
        pool = livetools_vibe.enable(run)
        assert livetools_vibe.enable(run) is pool and changes == [1]
        assert len([t for t in run.tools("plan") if t.name.startswith("vibe_")]) == 5
        await ok(run, "vibe_spawn", {"brief": lines("sleep 60"), "label": "x"})
        await livetools_vibe.disable(run)
        assert pool.workers["w1"].state == "killed" and changes == [1, 1]
        assert not [t for t in run.tools() if t.name.startswith("vibe_")]
