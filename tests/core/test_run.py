"""The run: surfaces at listing and call time, validation, approval, serialization, timeouts,
write wrapping and closing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import livetools_testkit
from livetools import (
    AGENT,
    PLAN,
    ApprovalRequest,
    Host,
    Ports,
    Resource,
    Result,
    Tier,
    Tool,
    hookimpl,
)


def kit_host(*extra: object) -> Host:
    return Host(plugins=[("testkit", livetools_testkit), *extra], entry_points=False)


async def test_surfaces_hide_and_refuse(tmp_path):
    async with kit_host().open_run(tmp_path) as run:
        agent = {t.name for t in run.tools("agent")}
        plan = {t.name for t in run.tools("plan")}
        assert {"echo", "touch", "nap"} <= agent
        assert plan == {"echo", "picture", "unlock"}
        assert {t.name for t in run.tools("readonly")} == plan
        refused = await run.call("touch", {"path": "a.txt", "content": "x"}, surface=PLAN)
        assert refused.is_error and 'unknown tool "touch" on surface "plan"' in refused.text
        assert not (tmp_path / "a.txt").exists()
        ok = await run.call("touch", {"path": "a.txt", "content": "x"}, surface=AGENT)
        assert not ok.is_error and (tmp_path / "a.txt").read_text() == "x"


async def test_custom_surface_and_exclusion(tmp_path):
    host = kit_host()
    host.define_surface("runner", ["read", "exec"], exclude=["picture"])
    async with host.open_run(tmp_path) as run:
        names = {t.name for t in run.tools("runner")}
        assert "nap" in names and "touch" not in names and "picture" not in names
        assert (await run.call("picture", {}, surface="runner")).is_error
        bad = await run.call("echo", {"text": "x"}, surface="nope")
        assert bad.is_error and "unknown surface 'nope'" in bad.text


async def test_refused_tool_never_reaches_approval(tmp_path):
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    async with kit_host().open_run(tmp_path, ports=Ports(approve=approve)) as run:
        await run.call("touch", {"path": "a.txt"}, surface="plan")
        assert asked == []
        declined = await run.call("touch", {"path": "a.txt"})
        assert declined.is_error and "declined" in declined.text
        assert [r.tool for r in asked] == ["touch"] and asked[0].tier is Tier.WRITE
        assert not (tmp_path / "a.txt").exists()
        assert not (await run.call("echo", {"text": "read tools need no approval"})).is_error
        assert len(asked) == 1


async def test_async_approval_allows(tmp_path):
    async def approve(request: ApprovalRequest) -> bool:
        return request.args.get("path") == "ok.txt"

    async with kit_host().open_run(tmp_path, ports=Ports(approve=approve)) as run:
        assert not (await run.call("touch", {"path": "ok.txt"})).is_error
        assert (await run.call("touch", {"path": "no.txt"})).is_error
    assert (tmp_path / "ok.txt").exists() and not (tmp_path / "no.txt").exists()


async def test_validation_errors_are_results_naming_the_field(tmp_path):
    async with kit_host().open_run(tmp_path) as run:
        missing = await run.call("echo", {})
        assert missing.is_error and "text: Field required" in missing.text
        wrong = await run.call("nap", {"seconds": "soon"})
        assert wrong.is_error and "seconds:" in wrong.text and "'soon'" in wrong.text
        extra = await run.call("echo", {"text": "a", "txt": "b"})
        assert extra.is_error and "unknown argument 'txt'" in extra.text


async def test_timeout_is_bounded_and_reported(tmp_path):
    async with kit_host().open_run(tmp_path) as run:
        started = time.monotonic()
        result = await run.call("nap", {"seconds": 30})
        assert time.monotonic() - started < 5
        assert result.is_error and "timed out after 2s" in result.text
        # a per-run override
    async with kit_host().open_run(tmp_path, options={"call_timeouts": {"nap": 0.2}}) as run:
        result = await run.call("nap", {"seconds": 1})
        assert result.is_error and "0.2s" in result.text


async def test_serialized_tools_do_not_overlap(tmp_path):
    async with kit_host().open_run(tmp_path) as run:
        started = time.monotonic()
        results = await asyncio.gather(*(run.call("nap", {"seconds": 0.3}) for _ in range(3)))
        assert all(not r.is_error for r in results)
        assert time.monotonic() - started >= 0.85
        started = time.monotonic()
        await asyncio.gather(*(run.call("echo", {"text": str(i)}) for i in range(20)))
        assert time.monotonic() - started < 1


class Faulty:
    """Tools that misbehave in the ways a plugin can."""

    @hookimpl
    def livetools_register_tools(self, register: Any) -> None:
        from pydantic import BaseModel

        class NoArgs(BaseModel):
            pass

        async def boom(ctx: Any, args: Any) -> Result:
            raise RuntimeError("kaboom")

        async def reenter(ctx: Any, args: Any) -> Result:
            return await ctx.call("reenter", {})

        register(Tool("boom", Tier.READ, NoArgs, boom, "Raise."))
        register(Tool("reenter", Tier.EXEC, NoArgs, reenter, "Call itself.", parallel_safe=False))
        register(Tool("echo", Tier.READ, NoArgs, boom, "A duplicate name."))


async def test_handler_failures_and_reentry_are_results(tmp_path):
    async with kit_host(("faulty", Faulty())).open_run(tmp_path) as run:
        boom = await run.call("boom", {})
        assert boom.is_error and "boom failed: RuntimeError: kaboom" in boom.text
        reenter = await asyncio.wait_for(run.call("reenter", {}), 5)
        assert reenter.is_error and "cannot be called from inside its own call" in reenter.text
        assert any("already registered by 'testkit'" in p for p in run.problems)


class Closable(Resource):
    key = "closable"
    closed = 0

    async def aclose(self) -> None:
        await asyncio.sleep(0.05)
        type(self).closed += 1


class ClosablePlugin:
    @hookimpl
    def livetools_resources(self, run: Any) -> Resource:
        return Closable()


async def test_resources_close_on_error_and_on_cancellation(tmp_path):
    host = kit_host(("closable", ClosablePlugin()))
    Closable.closed = 0
    with pytest.raises(ZeroDivisionError):
        async with host.open_run(tmp_path):
            1 / 0  # noqa: B018
    assert Closable.closed == 1

    async def hold() -> None:
        async with host.open_run(tmp_path) as run:
            await run.call("nap", {"seconds": 1.5})

    task = asyncio.create_task(hold())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert Closable.closed == 2


async def test_aclose_cancels_calls_in_flight(tmp_path):
    run = await kit_host().open_run(tmp_path)
    call = asyncio.create_task(run.call("nap", {"seconds": 1.8}))
    await asyncio.sleep(0.1)
    await run.aclose()
    result = await asyncio.wait_for(call, 2)
    assert result.is_error and "closed" in result.text
    assert (await run.call("echo", {"text": "x"})).is_error


async def test_tools_change_with_resources(tmp_path):
    async with kit_host().open_run(tmp_path) as run:
        changes: list[int] = []
        run.on_tools_changed(lambda: changes.append(1))
        assert "vault_peek" not in {t.name for t in run.tools()}
        assert (await run.call("vault_peek", {})).is_error
        await run.call("unlock", {})
        assert changes == [1]
        assert (await run.call("vault_peek", {})).text == "gold"
        await run.disconnect("vault")
        assert changes == [1, 1] and "vault_peek" not in {t.name for t in run.tools()}


async def test_resource_gating_hides_tools(tmp_path):
    async with kit_host().open_run(tmp_path, options={"testkit_off": True}) as run:
        assert run.tools() == []


async def test_write_wrapping_notes_and_decorator(tmp_path):
    async with kit_host().open_run(tmp_path, options={"testkit_observe": True}) as run:
        result = await run.call("touch", {"path": "src/new.py", "content": "x = 1\n"})
        assert "testkit saw src/new.py created" in result.text

        @run.wrap_write(lambda path, text: [path])
        async def harness_write(path: str, text: str) -> int:
            return (tmp_path / path).write_text(text)

        written, notes = await harness_write("src/new.py", "x = 2\n")
        assert written == 6 and notes == ["testkit saw src/new.py changed"]


class BrokenObserver:
    @hookimpl
    def livetools_observe_write(self, run: Any, paths: Any, notes: Any) -> Any:
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def observe() -> Any:
            yield
            raise RuntimeError("observer crashed")

        return observe()


async def test_failing_observer_becomes_a_note_not_a_failed_write(tmp_path):
    async with kit_host(("broken", BrokenObserver())).open_run(tmp_path) as run:
        async with run.writing(["a.txt"]) as notes:
            (tmp_path / "a.txt").write_text("kept")
        assert (tmp_path / "a.txt").read_text() == "kept"
        assert notes == ["broken: write observer failed after the write: observer crashed"]
