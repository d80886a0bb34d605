"""ask_user through MCP elicitation on `livetools serve`: the real `mcp` client with an
elicitation callback over stdio, in both protocol eras (2025-11-25: `elicitation/create` in the
middle of the call; 2026-07-28: `InputRequiredResult` and the client's automatic retry)."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.shared.memory import create_client_server_memory_streams
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

import livetools_ask
from livetools import Host, Result
from livetools.faces.mcp import elicit as mcp_elicit
from livetools.faces.mcp.server import McpFace
from livetools.questions import Option, Question, QuestionPortDetached
from tests.support import plugin_env

ERAS = ["handshake", "modern"]
WAIT = 60  # seconds; every wait on the server is bounded by this (generous: a loaded machine)

CHOICE = {
    "question": "Which database?",
    "context": "Both drivers are installed.",
    "options": [{"label": "postgres", "description": "the server"}, {"label": "sqlite"}],
}
MULTI = {
    "question": "Which checks should run?",
    "options": [{"label": "lint"}, {"label": "types"}, {"label": "tests", "description": "slow"}],
    "multi_select": True,
}
FREE = {"question": "What should the table be called?", "allow_free_text": True}


def accept(**content: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


Reply = types.ElicitResult | Callable[[], Awaitable[types.ElicitResult]]


class Human:
    """The client's elicitation callback: answers from a script, and a record of every form."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.forms: list[types.ElicitRequestFormParams] = []
        self.asked = anyio.Event()
        self.cancelled = anyio.Event()

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.forms.append(params)
        self.asked.set()
        reply = self.replies.pop(0)
        if isinstance(reply, types.ElicitResult):
            return reply
        try:
            return await reply()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise

    @staticmethod
    async def never() -> types.ElicitResult:
        await anyio.sleep_forever()
        raise AssertionError

    @staticmethod
    def late(seconds: float, result: types.ElicitResult) -> Callable[[], Awaitable[Any]]:
        async def reply() -> types.ElicitResult:
            await anyio.sleep(seconds)
            return result

        return reply


def serve_args(root: Path) -> list[str]:
    return ["-m", "livetools.faces.cli", "serve", "--root", str(root)]


class Conn:
    def __init__(self, target: ClientSession | Client) -> None:
        self.target = target

    async def tools(self) -> dict[str, types.Tool]:
        with anyio.fail_after(WAIT):
            if isinstance(self.target, Client):
                result = await self.target.list_tools(cache_mode="bypass")
            else:
                result = await self.target.list_tools()
        return {tool.name: tool for tool in result.tools}

    async def ask(self, args: dict[str, Any]) -> types.CallToolResult:
        with anyio.fail_after(WAIT):
            return await self.target.call_tool("ask_user", args)


@asynccontextmanager
async def connect(era: str, root: Path, human: Human | None, **env: str) -> AsyncIterator[Conn]:
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(root), env=plugin_env(**env)
    )
    # Client task groups must not straddle a fail_after scope: the handshakes are bounded by
    # the read timeout instead.
    async with AsyncExitStack() as stack:
        if era == "handshake":
            read, write = await stack.enter_async_context(stdio_client(params))
            session = ClientSession(
                read, write, read_timeout_seconds=WAIT, elicitation_callback=human
            )
            await stack.enter_async_context(session)
            init = await session.initialize()
            assert init.protocol_version == "2025-11-25"
            yield Conn(session)
        else:
            client = Client(
                params, mode="auto", read_timeout_seconds=WAIT, elicitation_callback=human
            )
            await stack.enter_async_context(client)
            assert client.protocol_version == "2026-07-28"
            yield Conn(client)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def data_of(result: types.CallToolResult) -> Any:
    assert result.structured_content is None
    return (result.meta or {}).get("livetools/data")


# -- answers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_single_select_answer_and_form(era: str, tmp_path: Path) -> None:
    human = Human(accept(choice="sqlite"))
    async with connect(era, tmp_path, human) as conn:
        tools = await conn.tools()
        assert "ask_user" in tools
        assert tools["ask_user"].meta == {"livetools/tier": "read"}
        out = await conn.ask(CHOICE)
        # Other tools are unaffected by the question machinery (2026: the background call).
        with anyio.fail_after(WAIT):
            echo = await conn.target.call_tool("echo", {"text": "hi"})
        assert text_of(echo) == "hi" and data_of(echo) == {"echo": "hi"}
    assert not out.is_error, text_of(out)
    assert text_of(out) == "Answer to question #1: sqlite"
    assert out.structured_content is None  # frameworks would show it to the model instead
    assert data_of(out)["choices"] == ["sqlite"]

    (form,) = human.forms
    # The card is the message: numbered, with the option descriptions the form has no slot for.
    assert form.message.startswith("Question #1: Which database?\n\nBoth drivers are installed.")
    assert "  1. postgres — the server\n  2. sqlite" in form.message
    assert "Declining skips the question." in form.message
    assert form.requested_schema == {
        "type": "object",
        "properties": {
            "choice": {
                "type": "string",
                "title": "Choose one",
                "oneOf": [
                    {"const": "postgres", "title": "postgres"},
                    {"const": "sqlite", "title": "sqlite"},
                ],
            }
        },
        "required": ["choice"],
    }


@pytest.mark.parametrize("era", ERAS)
async def test_multi_select_answer(era: str, tmp_path: Path) -> None:
    human = Human(accept(choices=["lint", "tests"]))
    async with connect(era, tmp_path, human) as conn:
        out = await conn.ask(MULTI)
    assert not out.is_error, text_of(out)
    assert text_of(out) == "Answer to question #1: lint, tests"
    (form,) = human.forms
    assert form.requested_schema["properties"] == {
        "choices": {
            "type": "array",
            "title": "Choose one or more",
            "items": {
                "anyOf": [
                    {"const": "lint", "title": "lint"},
                    {"const": "types", "title": "types"},
                    {"const": "tests", "title": "tests"},
                ]
            },
            "minItems": 1,
            "maxItems": 3,
        }
    }
    assert form.requested_schema["required"] == ["choices"]
    assert "  3. tests — slow" in form.message


@pytest.mark.parametrize("era", ERAS)
async def test_free_text_answer(era: str, tmp_path: Path) -> None:
    both = {**CHOICE, "allow_free_text": True}
    human = Human(accept(text="  use duckdb  "), accept(choice="postgres", text="on port 5433"))
    async with connect(era, tmp_path, human) as conn:
        free = await conn.ask(FREE)
        mixed = await conn.ask(both)
    assert not free.is_error, text_of(free)
    assert text_of(free) == "Answer to question #1: use duckdb"
    assert text_of(mixed) == 'Answer to question #2: postgres — "on port 5433"'
    text_only, with_options = human.forms
    assert text_only.requested_schema["properties"]["text"]["type"] == "string"
    assert text_only.requested_schema["required"] == ["text"]
    # Options and free text: either answers, so neither is required.
    assert set(with_options.requested_schema["properties"]) == {"choice", "text"}
    assert "required" not in with_options.requested_schema


@pytest.mark.parametrize("era", ERAS)
async def test_decline_and_cancel_are_skips(era: str, tmp_path: Path) -> None:
    human = Human(types.ElicitResult(action="decline"), types.ElicitResult(action="cancel"))
    async with connect(era, tmp_path, human) as conn:
        declined = await conn.ask(CHOICE)
        cancelled = await conn.ask(CHOICE)
    for number, out in enumerate([declined, cancelled], start=1):
        assert not out.is_error, text_of(out)
        assert f"skipped question #{number}" in text_of(out)
        assert "continue on a stated assumption" in text_of(out)
        assert "do not ask this again" in text_of(out)
        assert data_of(out)["skipped"] is True


@pytest.mark.parametrize("era", ERAS)
async def test_answer_that_does_not_fit_is_asked_again(era: str, tmp_path: Path) -> None:
    human = Human(accept(choice="mysql"), accept(choice="postgres"))
    async with connect(era, tmp_path, human) as conn:
        out = await conn.ask(CHOICE)
    assert text_of(out) == "Answer to question #1: postgres"
    first, second = human.forms
    assert second.message.startswith("That answer did not fit: 'mysql' is not one of the options")
    assert second.message.endswith(first.message)


# -- expiry, no elicitation, detachment ------------------------------------------------------


async def test_expiry_cancels_the_pending_form_handshake(tmp_path: Path) -> None:
    human = Human(Human.never)
    async with connect("handshake", tmp_path, human, LIVETOOLS_ASK_EXPIRY="1") as conn:
        started = time.monotonic()
        out = await conn.ask(CHOICE)
        elapsed = time.monotonic() - started
        with anyio.fail_after(5):
            await human.cancelled.wait()  # the SDK sent notifications/cancelled
    assert out.is_error
    assert "question #1 expired after 1s" in text_of(out)
    assert "do not ask this again" in text_of(out)
    assert 0.9 < elapsed < 10


async def test_expiry_beats_a_late_answer_modern(tmp_path: Path) -> None:
    """2026 era: the server cannot withdraw an input request, so the question expires on the
    server and the client's late retry gets the expiry, not an answer."""
    human = Human(Human.late(2.5, accept(choice="sqlite")))
    async with connect("modern", tmp_path, human, LIVETOOLS_ASK_EXPIRY="1") as conn:
        started = time.monotonic()
        out = await conn.ask(CHOICE)
        elapsed = time.monotonic() - started
    assert out.is_error
    assert "question #1 expired after 1s" in text_of(out)
    assert "do not ask this again" in text_of(out)
    assert 2.4 < elapsed < 10


@pytest.mark.parametrize("era", ERAS)
async def test_client_without_elicitation_has_no_ask_user(era: str, tmp_path: Path) -> None:
    async with connect(era, tmp_path, None) as conn:
        tools = await conn.tools()
        assert "echo" in tools and "ask_user" not in tools
        out = await conn.ask(CHOICE)
    assert out.is_error
    assert 'unknown tool "ask_user"' in text_of(out)


@asynccontextmanager
async def face_in_process(
    tmp_path: Path,
) -> AsyncIterator[tuple[Any, Any, list[Result], anyio.Event]]:
    """The face over memory streams (no subprocess), so a test can cut the connection and see
    what the run's ask_user call returned. Yields the client's streams, a task group, the call
    results and an event set at the first result."""
    host = Host(plugins=[("ask", livetools_ask)], entry_points=False)
    async with host.open_run(tmp_path) as run:
        results: list[Result] = []
        returned = anyio.Event()
        call = run.call

        async def recording(*args: Any, **kwargs: Any) -> Result:
            result = await call(*args, **kwargs)
            results.append(result)
            returned.set()
            return result

        run.call = recording  # type: ignore[method-assign]
        face = McpFace(run, host.surface("agent"))
        async with (
            create_client_server_memory_streams() as (client_streams, server_streams),
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(face.serve, *server_streams)
            yield client_streams, tasks, results, returned
            tasks.cancel_scope.cancel()


@pytest.mark.parametrize("era", ERAS)
async def test_client_gone_mid_question_is_an_error_not_a_hang(era: str, tmp_path: Path) -> None:
    human = Human(Human.never)
    versions: list[str] = []
    async with face_in_process(tmp_path) as ((read, write), tasks, results, returned):

        async def client_side() -> None:
            # The client's own call fails once the server is gone; only the server side matters.
            with contextlib.suppress(Exception):
                await client_call()

        async def client_call() -> None:
            if era == "handshake":
                async with ClientSession(read, write, elicitation_callback=human) as session:
                    versions.append((await session.initialize()).protocol_version)
                    await session.call_tool("ask_user", CHOICE)
            else:

                @asynccontextmanager
                async def transport() -> AsyncIterator[tuple[Any, Any]]:
                    yield read, write

                async with Client(transport(), mode="auto", elicitation_callback=human) as client:
                    versions.append(client.protocol_version)
                    await client.call_tool("ask_user", CHOICE)

        tasks.start_soon(client_side)
        with anyio.fail_after(WAIT):
            await human.asked.wait()
        assert versions == ["2025-11-25" if era == "handshake" else "2026-07-28"]
        await write.aclose()  # the client goes away: the server reads end of stream
        started = time.monotonic()
        with anyio.fail_after(WAIT):
            await returned.wait()
        (result,) = results
        assert result.is_error
        assert "question #1 could not be answered" in result.text
        assert "the MCP client disconnected" in result.text
        assert time.monotonic() - started < 5


async def test_parked_calls_are_bounded_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2026-era bookkeeping on its own: a retry must name the same call, at most
    PARKED_LIMIT questions wait at once, and a disconnect fails the waiting ones."""
    monkeypatch.setattr(mcp_elicit, "PARKED_LIMIT", 2)
    port = mcp_elicit.ElicitationPort()
    question = Question(1, "Which?", options=(Option("a"), Option("b")))

    async def asking() -> Result:
        try:
            answer = await port(question)
        except QuestionPortDetached as exc:
            return Result.error(f"detached: {exc}")
        return Result(text=f"answer: {answer.choices} skipped={answer.skipped}")

    calls = mcp_elicit.ParkedCalls()
    first = await calls.call("ask_user", {"n": 1}, asking, can_elicit=True)
    second = await calls.call("ask_user", {"n": 2}, asking, can_elicit=True)
    assert isinstance(first, types.InputRequiredResult)
    assert isinstance(second, types.InputRequiredResult)
    assert first.request_state and second.request_state
    assert first.request_state != second.request_state
    (key,) = (first.input_requests or {}).keys()
    # A third waiting question is over the limit: it fails at once instead of parking.
    third = await calls.call("ask_user", {"n": 3}, asking, can_elicit=True)
    assert isinstance(third, Result) and third.is_error
    assert "2 questions are already waiting" in third.text
    # The token is bound to the call it was minted for.
    wrong = await calls.resume("ask_user", {"n": 2}, first.request_state, None)
    assert isinstance(wrong, Result) and "no longer waiting" in wrong.text
    with anyio.fail_after(WAIT):
        done = await calls.resume(
            "ask_user", {"n": 1}, first.request_state, {key: accept(choice="b")}
        )
    assert isinstance(done, Result) and done.text == "answer: ('b',) skipped=False"
    again = await calls.resume("ask_user", {"n": 1}, first.request_state, None)
    assert isinstance(again, Result) and "no longer waiting" in again.text
    # A client that did not declare elicitation on the request gets an error, not a form.
    refused = await calls.call("ask_user", {"n": 4}, asking, can_elicit=False)
    assert isinstance(refused, Result) and "did not declare form elicitation" in refused.text
    with anyio.fail_after(WAIT):
        await calls.detach_all("the MCP client disconnected")
    late = await calls.resume("ask_user", {"n": 2}, second.request_state, None)
    assert isinstance(late, Result) and "no longer waiting" in late.text


# -- the process side of a disconnect (raw stdio, no SDK) -------------------------------------


def envelope(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        PROTOCOL_VERSION_META_KEY: "2026-07-28",
        CLIENT_CAPABILITIES_META_KEY: capabilities,
        CLIENT_INFO_META_KEY: {"name": "raw", "version": "0"},
    }


def handshake_messages() -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ask_user", "arguments": CHOICE},
        },
    ]


def modern_messages() -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "ask_user",
                "arguments": CHOICE,
                "_meta": envelope({"elicitation": {"form": {}}}),
            },
        }
    ]


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[dict[str, Any] | None]:
    """Stdout lines as parsed JSON on a queue (None at end), so every read can be bounded."""
    out: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(json.loads(line))
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


@pytest.mark.parametrize("era", ERAS)
def test_server_exits_when_client_leaves_mid_question(era: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, *serve_args(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=plugin_env(),
        text=True,
    )
    try:
        assert proc.stdin is not None
        messages = handshake_messages() if era == "handshake" else modern_messages()
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        replies = lines_of(proc)
        deadline = time.monotonic() + WAIT
        while True:
            message = replies.get(timeout=max(0.1, deadline - time.monotonic()))
            assert message is not None, "server closed stdout before asking"
            if era == "handshake" and message.get("method") == "elicitation/create":
                assert message["params"]["requestedSchema"]["required"] == ["choice"]
                break
            if era == "modern" and message.get("id") == 1:
                result = message["result"]
                assert result["resultType"] == "input_required"
                (request,) = result["inputRequests"].values()
                assert request["method"] == "elicitation/create"
                assert isinstance(result["requestState"], str)
                break
        proc.stdin.close()
        started = time.monotonic()
        rc = proc.wait(timeout=WAIT)
        # Not held by the open question (it would wait out ask_expiry, 600 s); the bound leaves a
        # loaded machine room for closing the run.
        assert time.monotonic() - started < 30
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0, proc.stderr.read() if proc.stderr else ""
