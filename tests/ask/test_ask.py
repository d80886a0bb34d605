"""ask_user through the programmatic, JSON-lines and terminal ports."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pexpect
import pytest

import livetools_ask
from livetools import Host, Ports
from livetools.questions import Answer, Question, QuestionPortDetached
from tests.support import plugin_env

CHOICE = {
    "question": "Which database?",
    "context": "Both drivers are installed.",
    "options": [{"label": "postgres", "description": "the server"}, {"label": "sqlite"}],
}


def host() -> Host:
    return Host(plugins=[("ask", livetools_ask)], entry_points=False)


def replying(answer: Answer, seen: list[Question] | None = None):
    async def port(question: Question) -> Answer:
        if seen is not None:
            seen.append(question)
        return answer

    return port


async def ask(port, args, **options):
    ports = Ports(question=port, target_space="test")
    async with host().open_run(".", ports=ports, options=options) as run:
        return await run.call("ask_user", args)


async def test_single_choice_answer_and_card():
    seen: list[Question] = []
    result = await ask(replying(Answer(choices=("sqlite",)), seen), CHOICE)
    assert not result.is_error and result.text == "Answer to question #1: sqlite"
    assert result.data["choices"] == ["sqlite"]
    card = seen[0].card()
    assert card.startswith("Question #1: Which database?")
    assert "  1. postgres — the server" in card and "  2. sqlite" in card


async def test_multi_select_and_free_text():
    args = {**CHOICE, "multi_select": True, "allow_free_text": True}
    result = await ask(replying(Answer(choices=("postgres", "sqlite"), text="both, really")), args)
    assert result.text == 'Answer to question #1: postgres, sqlite — "both, really"'
    free = await ask(
        replying(Answer(text="use duckdb")), {"question": "Which?", "allow_free_text": True}
    )
    assert free.text == "Answer to question #1: use duckdb"


async def test_skip_is_success_with_instruction():
    result = await ask(replying(Answer(skipped=True)), CHOICE)
    assert not result.is_error and result.data["skipped"]
    assert "skipped question #1" in result.text and "do not ask this again" in result.text


async def test_expiry_is_error_with_the_same_instruction():
    async def never(question: Question) -> Answer:
        await asyncio.sleep(60)
        raise AssertionError

    started = time.monotonic()
    result = await ask(never, CHOICE, ask_expiry=0.3)
    assert time.monotonic() - started < 3
    assert result.is_error and "expired after 0.3s" in result.text
    assert "do not ask this again" in result.text


async def test_detached_port_is_error_not_hang():
    async def detached(question: Question) -> Answer:
        await asyncio.sleep(0.05)
        raise QuestionPortDetached("client went away")

    result = await asyncio.wait_for(ask(detached, CHOICE), 5)
    assert result.is_error and "the human detached (client went away)" in result.text


@pytest.mark.parametrize(
    "ports",
    [Ports(), Ports(question=replying(Answer())), Ports(target_space="test")],
    ids=["nothing", "no-target-space", "no-port"],
)
async def test_not_registered_without_port_and_target_space(ports):
    async with host().open_run(".", ports=ports) as run:
        assert "ask_user" not in {t.name for t in run.tools()}
        assert (await run.call("ask_user", CHOICE)).data == {"error": "usage"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"question": "  ", "allow_free_text": True}, "question is empty"),
        ({"question": "Q?", "options": [{"label": "a"}, {"label": "a"}]}, "duplicate option"),
        ({"question": "Q?"}, "no options and allow_free_text is false"),
        ({"question": "Q?", "options": [{"label": "a"}], "multi_select": True}, "at least 2"),
        ({"question": "Q?", "options": [{"label": " "}]}, "empty label"),
    ],
)
async def test_bad_questions_get_clear_errors(args, expected):
    asked: list[Question] = []
    result = await ask(replying(Answer(), asked), args)
    assert result.is_error and expected in result.text
    assert asked == []


async def test_bad_expiry_setting_is_reported_and_the_tool_says_why(monkeypatch):
    """A family that cannot connect stays visible: its tool answers why, never "unknown tool"."""
    monkeypatch.setenv("LIVETOOLS_ASK_EXPIRY", "soon")
    ports = Ports(question=replying(Answer()), target_space="test")
    async with host().open_run(".", ports=ports) as run:
        assert any("'soon': expected a positive number of seconds" in p for p in run.problems)
        result = await run.call("ask_user", {"question": "Q?", "allow_free_text": True})
    assert result.is_error
    assert "not available in this run" in result.text and "'soon'" in result.text


async def test_questions_are_numbered_per_run():
    ports = Ports(question=replying(Answer(text="ok")), target_space="test")
    async with host().open_run(".", ports=ports) as run:
        args = {"question": "Q?", "allow_free_text": True}
        texts = [(await run.call("ask_user", args)).text for _ in range(3)]
    assert [t.split(":")[0] for t in texts] == [f"Answer to question #{n}" for n in (1, 2, 3)]


async def test_ask_user_is_read_tier_on_plan_surfaces():
    ports = Ports(question=replying(Answer(text="ok")), target_space="test")
    async with host().open_run(".", ports=ports) as run:
        assert "ask_user" in {t.name for t in run.tools("plan")}


# -- JSON-lines session port -------------------------------------------------------------------


def session(lines: list[object], *args: str, **env: str) -> list[dict]:
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "session", *args],
        input=text,
        env=plugin_env(LIVETOOLS_PLUGINS="ask", **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_session_question_event_and_answer_line(tmp_path):
    replies = session(
        [
            {"tool": "ask_user", "args": {**CHOICE, "multi_select": True}, "id": "q"},
            "not json",
            {"choices": ["nope"]},
            {"reply": "2,1"},
            {"tool": "ask_user", "args": CHOICE},
            {"skip": True},
        ],
        "--root",
        str(tmp_path),
    )
    event, bad_json, bad_label, answer, event2, skipped = replies
    assert event["event"] == "question" and event["number"] == 1
    assert event["options"][0] == {"label": "postgres", "description": "the server"}
    assert event["card"].startswith("Question #1: Which database?")
    assert bad_json["event"] == "question_error" and "is open: expected" in bad_json["text"]
    assert bad_label["event"] == "question_error" and "'nope' is not one of" in bad_label["text"]
    assert (
        answer["ok"] and answer["id"] == "q" and answer["data"]["choices"] == ["sqlite", "postgres"]
    )
    assert event2["number"] == 2 and skipped["ok"] and skipped["data"]["skipped"]


def test_session_only_an_answer_object_answers_an_open_question(tmp_path):
    """`{}` or a tool line while a question is open is no skip: it gets question_error (a tool
    line is refused, not run, and says so with its id), and the human's answer that follows
    still answers."""
    (tmp_path / "keep.txt").write_text("x")
    replies = session(
        [
            {"tool": "ask_user", "args": CHOICE, "id": "q"},
            {},
            {"tool": "ask_user", "args": CHOICE, "id": "t"},
            {"skip": "yes"},
            [1],
            {"choices": ["sqlite"]},
            {"tool": "ask_user", "args": CHOICE, "id": "after"},
            {"choices": "postgres"},
        ],
        "--root",
        str(tmp_path),
    )
    event, empty, tool_line, bad_skip, array, answer, event2, answer2 = replies
    assert event["event"] == "question"
    for bad in (empty, tool_line, bad_skip, array):
        assert bad["event"] == "question_error" and bad["number"] == 1, bad
    assert "tool line was refused (not run)" in tool_line["text"] and tool_line["id"] == "t"
    assert "id" not in empty
    assert answer["ok"] and answer["id"] == "q" and answer["data"]["choices"] == ["sqlite"]
    assert event2["number"] == 2  # the refused line never became question #2
    assert answer2["id"] == "after" and answer2["data"]["choices"] == ["postgres"]


def test_session_input_ending_mid_question_is_an_error(tmp_path):
    replies = session([{"tool": "ask_user", "args": CHOICE}], "--root", str(tmp_path))
    assert replies[0]["event"] == "question"
    assert not replies[1]["ok"] and "the human detached (input ended)" in replies[1]["text"]


def test_session_expiry_emits_an_event(tmp_path):
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "livetools.faces.cli", "session", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=plugin_env(LIVETOOLS_PLUGINS="ask", LIVETOOLS_ASK_EXPIRY="0.5"),
        text=True,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps({"tool": "ask_user", "args": CHOICE}) + "\n")
    proc.stdin.flush()
    lines = [json.loads(proc.stdout.readline()) for _ in range(3)]
    proc.stdin.close()
    assert proc.wait(10) == 0
    assert time.monotonic() - started < 10
    assert [x.get("event") for x in lines[:2]] == ["question", "question_expired"]
    assert not lines[2]["ok"] and "expired after 0.5s" in lines[2]["text"]


def test_worker_session_has_no_ask_user(tmp_path):
    replies = session(
        [{"tool": "ask_user", "args": CHOICE}], "--root", str(tmp_path), LIVETOOLS_WORKER="1"
    )
    assert not replies[0]["ok"] and 'unknown tool "ask_user"' in replies[0]["text"]


def test_call_without_a_tty_has_no_ask_user(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "call", "ask_user", json.dumps(CHOICE)],
        stdin=subprocess.DEVNULL,
        env=plugin_env(LIVETOOLS_PLUGINS="ask"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and 'unknown tool "ask_user"' in out.stdout


# -- terminal port -----------------------------------------------------------------------------


@contextmanager
def card_in_a_pty(args: dict, root) -> Iterator[pexpect.spawn]:
    """`livetools call ask_user` on a real pseudo-terminal; the card must be answered there."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "livetools.faces.cli", "call", "ask_user", json.dumps(args), "--root", str(root)],
        env=plugin_env(LIVETOOLS_PLUGINS="ask"),
        encoding="utf-8",
        timeout=30,
    )
    try:
        yield child
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_terminal_card_answered_in_a_real_pty(tmp_path):
    with card_in_a_pty({**CHOICE, "allow_free_text": True}, tmp_path) as child:
        child.expect("Question #1: Which database\\?")
        child.expect("1. postgres — the server")
        child.expect("> ")
        child.sendline("7")
        child.expect("no option 7; options are 1-2")
        child.sendline("2")
        child.expect("Answer to question #1: sqlite")


def test_terminal_empty_line_skips(tmp_path):
    with card_in_a_pty(CHOICE, tmp_path) as child:
        child.expect("> ")
        child.sendline("")
        child.expect("skipped question #1")
