"""The approval gate through the Python API: policy, fail-closed refusals, expiry, "always for
this run", the order of checks (hidden and malformed calls are never asked about), the card's
words, and a tool that asks only once it has staged its change (`asks_in_call`)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

import livetools_testkit
from livetools import CallContext, Host, Ports, Result, StagedEdit, Tier, Tool, hookimpl
from livetools.approvals import asks_in_call, confirm, describe_args
from livetools.faces.status import render_status, status_report
from livetools.options import OptionError
from livetools.questions import Answer, Approval, Decision, Question, QuestionPortDetached


class ApprovingPort:
    """A human with an approval form: answers from a script, records every card."""

    def __init__(self, *decisions: Decision) -> None:
        self.decisions = list(decisions)
        self.cards: list[Approval] = []

    async def __call__(self, question: Question) -> Answer:
        raise AssertionError(f"an approval must not arrive as a plain question: {question}")

    async def approve(self, approval: Approval) -> Decision:
        self.cards.append(approval)
        return self.decisions.pop(0)


class Staging(BaseModel):
    files: int


@asks_in_call
async def stage_many(ctx: CallContext, args: Staging) -> Result:
    """A write tool that works out its change first and asks with the real count."""
    contents = {f"f{i}.txt": "x" for i in range(args.files)}
    edit = StagedEdit.stage(ctx.run.root, contents)
    await confirm(ctx, f"write {args.files} files: {', '.join(sorted(contents))}")
    await edit.apply(ctx.run)
    return Result(text=f"wrote {args.files} files")


class StagingPlugin:
    @hookimpl
    def livetools_register_tools(self, register):  # type: ignore[no-untyped-def]
        register(Tool("stage_many", Tier.WRITE, Staging, stage_many, "Stage then write."))


def host() -> Host:
    return Host(
        plugins=[("testkit", livetools_testkit), ("staging", StagingPlugin())], entry_points=False
    )


TOUCH = {"path": "a.txt", "content": "hello"}


async def test_allow_is_the_default_and_asks_nothing(tmp_path):
    port = ApprovingPort()
    async with host().open_run(tmp_path, ports=Ports(question=port, target_space="t")) as run:
        out = await run.call("touch", TOUCH)
        assert not out.is_error and (tmp_path / "a.txt").read_text() == "hello"
        assert port.cards == [] and run.approval.status()["mode"] == "allow"


async def test_deny_refuses_write_and_exec_as_a_result_and_runs_nothing(tmp_path):
    async with host().open_run(tmp_path, options={"approve": "deny"}) as run:
        out = await run.call("touch", TOUCH)
        assert out.is_error and out.data == {"refused": True, "tool": "touch", "reason": "policy"}
        assert "approve=deny" in out.text and "nothing was done" in out.text
        assert "Continue without writing" in out.text
        nap = await run.call("nap", {"seconds": 30})
        assert nap.is_error and "Continue without running it" in nap.text
        assert (await run.call("echo", {"text": "hi"})).text == "hi"  # read: never gated
    assert not (tmp_path / "a.txt").exists()


async def test_ask_without_a_human_refuses_and_says_so(tmp_path):
    async with host().open_run(tmp_path, options={"approve": "ask"}) as run:
        out = await run.call("touch", TOUCH)
    assert out.is_error and out.data["reason"] == "no_human"
    assert "no human is attached" in out.text and "nothing was done" in out.text
    assert not (tmp_path / "a.txt").exists()


async def test_ask_allow_deny_always_and_status(tmp_path):
    port = ApprovingPort(Decision.ALLOW, Decision.DENY, Decision.ALWAYS)
    ports = Ports(question=port, target_space="t")
    h = host()
    async with h.open_run(tmp_path, ports=ports, options={"approve": "ask"}) as run:
        assert not (await run.call("touch", TOUCH)).is_error
        denied = await run.call("touch", {"path": "b.txt", "content": "x"})
        assert denied.is_error and denied.data["reason"] == "declined"
        assert "the operator declined touch (approval #2)" in denied.text
        assert "ask why with ask_user" in denied.text
        assert not (tmp_path / "b.txt").exists()
        assert not (await run.call("touch", {"path": "c.txt", "content": "x"})).is_error
        assert not (await run.call("touch", {"path": "d.txt", "content": "x"})).is_error
        assert [c.number for c in port.cards] == [1, 2, 3]  # the 4th call was not asked
        assert port.cards[0].tool == "touch" and port.cards[0].tier == "write"
        assert "path: a.txt" in port.cards[0].summary
        report = await status_report(h, run)
        assert report["approval"]["always"] == ["touch"]
        assert report["approval"]["asked"] == 3 and report["approval"]["refused"] == 1
        assert "allowed for the rest of this run: touch" in render_status(report)
        # nap is another tool: "always" is per tool.
        port.decisions.append(Decision.DENY)
        assert (await run.call("nap", {"seconds": 0})).is_error
    # Never across runs.
    port.decisions.append(Decision.DENY)
    async with h.open_run(tmp_path, ports=ports, options={"approve": "ask"}) as run:
        assert run.approval.status()["always"] == []
        assert (await run.call("touch", {"path": "e.txt", "content": "x"})).is_error


async def test_hidden_and_malformed_calls_are_never_asked_about(tmp_path):
    port = ApprovingPort()
    ports = Ports(question=port, target_space="t")
    async with host().open_run(tmp_path, ports=ports, options={"approve": "ask"}) as run:
        hidden = await run.call("touch", TOUCH, surface="plan")
        assert 'unknown tool "touch" on surface "plan"' in hidden.text
        bad = await run.call("touch", {"path": "a.txt", "content": 5})
        assert "invalid arguments for touch" in bad.text
        assert "unknown tool" in (await run.call("no_such_tool", {})).text
    assert port.cards == []


async def test_expiry_refuses(tmp_path):
    class Silent(ApprovingPort):
        async def approve(self, approval: Approval) -> Decision:
            self.cards.append(approval)
            await asyncio.sleep(600)
            raise AssertionError

    port = Silent()
    ports = Ports(question=port, target_space="t")
    options = {"approve": "ask", "approve_expiry": 0.3}
    async with host().open_run(tmp_path, ports=ports, options=options) as run:
        out = await run.call("touch", TOUCH)
    assert out.is_error and out.data["reason"] == "expired"
    assert "approval #1 for touch expired after 0.3s" in out.text
    assert port.cards[0].expires_in == 0.3
    assert not (tmp_path / "a.txt").exists()


async def test_a_detached_or_broken_port_refuses(tmp_path):
    class Gone(ApprovingPort):
        async def approve(self, approval: Approval) -> Decision:
            raise QuestionPortDetached("the terminal closed")

    class Broken(ApprovingPort):
        async def approve(self, approval: Approval) -> Decision:
            raise RuntimeError("boom")

    for port, reason in ((Gone(), "detached"), (Broken(), "failed")):
        ports = Ports(question=port, target_space="t")
        async with host().open_run(tmp_path, ports=ports, options={"approve": "ask"}) as run:
            out = await run.call("touch", TOUCH)
        assert out.is_error and out.data["reason"] == reason, out.text
    assert not (tmp_path / "a.txt").exists()


async def test_a_plain_question_port_gets_the_card_as_a_question(tmp_path):
    seen: list[Question] = []

    async def port(question: Question) -> Answer:
        seen.append(question)
        if len(seen) == 1:
            return Answer(choices=(question.options[2].label,))
        return Answer(skipped=True)

    ports = Ports(question=port, target_space="t")
    async with host().open_run(tmp_path, ports=ports, options={"approve": "ask"}) as run:
        assert not (await run.call("touch", TOUCH)).is_error  # "always"
        assert not (await run.call("touch", TOUCH)).is_error
        assert (await run.call("nap", {"seconds": 0})).is_error  # skipped = denied
    assert [o.label for o in seen[0].options] == [
        "Allow",
        "Deny",
        "Allow touch for the rest of this run",
    ]
    assert seen[0].question == "Allow touch (write)?" and len(seen) == 2


async def test_a_bad_policy_fails_closed(tmp_path):
    # Refused before the run opens: nothing runs under a policy nobody can read.
    with pytest.raises(OptionError, match="option approve: expected one of allow, deny, ask"):
        await host().open_run(tmp_path, options={"approve": "sometimes"})
    assert not (tmp_path / "a.txt").exists()


async def test_in_call_approval_sees_the_staged_count_and_writes_nothing_on_deny(tmp_path):
    port = ApprovingPort(Decision.DENY, Decision.ALLOW)
    ports = Ports(question=port, target_space="t")
    async with host().open_run(tmp_path, ports=ports, options={"approve": "ask"}) as run:
        out = await run.call("stage_many", {"files": 3})
        assert out.is_error and out.data["reason"] == "declined", out.text
        assert not list(tmp_path.iterdir())
        assert port.cards[0].summary == "write 3 files: f0.txt, f1.txt, f2.txt"
        assert not (await run.call("stage_many", {"files": 2})).is_error
        assert sorted(p.name for p in tmp_path.iterdir()) == ["f0.txt", "f1.txt"]
    # Under deny the tool is refused before it stages anything.
    (tmp_path / "other").mkdir()
    async with host().open_run(tmp_path / "other", options={"approve": "deny"}) as run:
        assert (await run.call("stage_many", {"files": 1})).data["reason"] == "policy"


async def test_a_harness_approver_still_wins_and_sees_the_summary(tmp_path):
    seen = []

    def approve(request):  # type: ignore[no-untyped-def]
        seen.append(request)
        return request.tool == "stage_many"

    async with host().open_run(tmp_path, ports=Ports(approve=approve)) as run:
        assert (await run.call("touch", TOUCH)).is_error
        assert not (await run.call("stage_many", {"files": 1})).is_error
    assert seen[0].summary.startswith("touch") and seen[1].summary == "write 1 files: f0.txt"


def test_cards_are_capped_and_say_what_will_happen():
    code = "\n".join(f"x{i} = {i}" for i in range(30))
    text = describe_args("eval", {"code": code, "description": "set thirty names", "reset": False})
    lines = text.splitlines()
    assert lines[:3] == ["eval", "set thirty names", "code:"]
    assert lines[3] == "  x0 = 0" and "… 22 more lines" in lines[-2]
    debug = describe_args("debug", {"op": "launch", "program": "app.py", "args": ["-v", "1"]})
    assert debug.splitlines() == ["debug launch", "program: app.py", "args: -v 1"]
    card = Approval(1, "eval", "exec", "\n".join(str(i) for i in range(40)))
    assert card.card().startswith("Approval #1: allow eval (exec)?")
    from livetools.questions import cap_summary

    capped = cap_summary("\n".join(str(i) for i in range(40)))
    assert capped.splitlines()[-1] == "… truncated: 28 more lines"
    with pytest.raises(ValueError, match="empty reply"):
        card.parse_reply("")
    assert card.parse_reply(" A ") is Decision.ALWAYS and card.parse_reply("no") is Decision.DENY


async def test_the_human_s_time_does_not_count_against_the_call_timeout(tmp_path):
    """An in-call approval stops the tool's own clock while the card is up."""

    class Slow(ApprovingPort):
        async def approve(self, approval: Approval) -> Decision:
            await asyncio.sleep(1.0)
            return Decision.ALLOW

    ports = Ports(question=Slow(), target_space="t")
    options = {"approve": "ask", "call_timeouts": {"stage_many": 0.5}}
    async with host().open_run(tmp_path, ports=ports, options=options) as run:
        out = await run.call("stage_many", {"files": 1})
    assert not out.is_error, out.text
    assert (tmp_path / "f0.txt").exists()
