"""`livetools serve --approve ask` driven by fastmcp's client in both protocol eras (2025-11-25:
`elicitation/create` in the middle of the call; 2026-07-28: `InputRequiredResult` and the
client's retry). The approval is a form with one choice (Allow / Deny / Allow this tool for the
rest of the run); decline and cancel deny; a client that cannot elicit is refused; expiry
refuses. A refused call writes nothing. Every test runs on the stdio face and on `serve --http`."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport

from tests.core.http_serving import serve_http
from tests.support import plugin_env

WAIT = 60
ERAS = ["legacy", "auto"]  # fastmcp's names: the 2025-11-25 handshake, and 2026-07-28


class Human:
    """fastmcp's elicitation handler: scripted replies, and a record of every form."""

    def __init__(self, *replies: ElicitResult | str) -> None:
        self.replies = list(replies)
        self.forms: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, message: str, response_type: Any, params: Any, ctx: Any) -> Any:
        self.forms.append((message, params.requested_schema))
        reply = self.replies.pop(0)
        if reply == "never":
            await anyio.sleep_forever()
        if reply == "late allow":
            await anyio.sleep(2.5)
            reply = "allow"
        if isinstance(reply, str):
            return ElicitResult(action="accept", content={"decision": reply})
        return reply


@asynccontextmanager
async def _serving(
    face: str, root: Path, mode: str, human: Human | None, *extra: str
) -> AsyncIterator[Client]:
    """`serve --approve ask` on stdio or over HTTP (`serve --http`, one run at /mcp)."""
    argv = ["--root", str(root), "--approve", "ask", *extra]
    kwargs: dict[str, Any] = {} if human is None else {"elicitation_handler": human}
    with contextlib.ExitStack() as stack:
        if face == "http":
            served = stack.enter_context(
                serve_http(*argv, "--no-token", env={"LIVETOOLS_PLUGINS": "testkit"})
            )
            transport: Any = f"{served.url}/mcp"
        else:
            args = ["-m", "livetools.faces.cli", "serve", *argv]
            env = plugin_env(LIVETOOLS_PLUGINS="testkit")
            transport = StdioTransport(sys.executable, args, env=env)
        client = Client(transport, mode=mode, timeout=WAIT, init_timeout=WAIT, **kwargs)  # type: ignore[arg-type]
        async with client as c:
            assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            yield c


@pytest.fixture(params=["stdio", "http"])
def serving(request: pytest.FixtureRequest) -> Any:
    """Each test on both MCP faces: the approval form is the same over stdio and HTTP."""
    return functools.partial(_serving, request.param)


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def data_of(result: Any) -> Any:
    return (result.meta or {}).get("livetools/data")


async def call(c: Client, name: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(WAIT):
        return await c.call_tool(name, args, raise_on_error=False)


@pytest.mark.parametrize("mode", ERAS)
async def test_allow_deny_always_over_elicitation(serving: Any, mode: str, tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("one\n")
    human = Human("allow", "deny", "always")
    async with serving(tmp_path, mode, human) as c:
        out = await call(c, "write", {"path": "a.txt", "content": "hello\nworld\n"})
        assert not out.is_error, text_of(out)
        denied = await call(c, "edit", {"path": "old.txt", "old": "one", "new": "two"})
        assert denied.is_error and data_of(denied)["reason"] == "declined"
        assert "the operator declined edit (approval #2)" in text_of(denied)
        out = await call(c, "touch", {"path": "b.txt", "content": "x"})
        assert not out.is_error, text_of(out)
        out = await call(c, "touch", {"path": "c.txt", "content": "x"})  # not asked again
        assert not out.is_error, text_of(out)
        echo = await call(c, "echo", {"text": "hi"})  # read: never asked
        assert text_of(echo) == "hi"
    assert len(human.forms) == 3
    message, schema = human.forms[0]
    assert message.startswith("Approval #1: allow write (write)?")
    assert "write a.txt: create 12 bytes, 2 lines" in message and "  hello" in message
    assert message.endswith("Declining denies.")
    field = schema["properties"]["decision"]
    assert schema["required"] == ["decision"]
    assert [o["title"] for o in field["oneOf"]] == [
        "Allow",
        "Deny",
        "Allow write for the rest of this run",
    ]
    assert "- one" in human.forms[1][0] and "+ two" in human.forms[1][0]
    assert (tmp_path / "old.txt").read_text() == "one\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.txt", "old.txt"]  # noqa: ASYNC240


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_deny(
    serving: Any, mode: str, action: str, tmp_path: Path
) -> None:
    async with serving(tmp_path, mode, Human(ElicitResult(action=action))) as c:  # type: ignore[arg-type]
        out = await call(c, "touch", {"path": "a.txt", "content": "x"})
    assert out.is_error and data_of(out)["reason"] == "declined", text_of(out)
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_that_cannot_elicit_is_refused(
    serving: Any, mode: str, tmp_path: Path
) -> None:
    async with serving(tmp_path, mode, None) as c:
        with anyio.fail_after(WAIT):
            names = {t.name for t in await c.list_tools()}
        assert "ask_user" not in names and "touch" in names
        out = await call(c, "touch", {"path": "a.txt", "content": "x"})
    assert out.is_error and data_of(out)["reason"] == "no_human"
    assert "no human is attached" in text_of(out)
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("mode", ERAS)
async def test_expiry_refuses(serving: Any, mode: str, tmp_path: Path) -> None:
    """Handshake era: the pending form is cancelled. 2026 era: the server cannot withdraw an
    input request, so the approval expires on the server and a late Allow still refuses."""
    human = Human("never" if mode == "legacy" else "late allow")
    async with serving(tmp_path, mode, human, "--option", "approve_expiry=1") as c:
        out = await call(c, "touch", {"path": "a.txt", "content": "x"})
    assert out.is_error and data_of(out)["reason"] == "expired", text_of(out)
    assert "expired after 1s" in text_of(out)
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("mode", ERAS)
async def test_deny_policy_asks_nobody(serving: Any, mode: str, tmp_path: Path) -> None:
    human = Human()
    async with serving(tmp_path, mode, human, "--approve", "deny") as c:
        out = await call(c, "touch", {"path": "a.txt", "content": "x"})
    assert out.is_error and data_of(out)["reason"] == "policy"
    assert human.forms == [] and not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("mode", ERAS)
async def test_concurrent_calls_each_get_their_own_form(
    serving: Any, mode: str, tmp_path: Path
) -> None:
    """Two write calls at once: neither approval waits for the other (in the 2026 era the
    first is parked until the client's retry)."""
    both_asked = anyio.Event()
    forms: list[str] = []

    async def human(message: str, response_type: Any, params: Any, ctx: Any) -> Any:
        forms.append(message)
        if len(forms) == 2:
            both_asked.set()
        with anyio.fail_after(WAIT):
            await both_asked.wait()  # answers only once both cards are up
        return ElicitResult(action="accept", content={"decision": "allow"})

    results: dict[str, Any] = {}
    async with serving(tmp_path, mode, human) as c:  # type: ignore[arg-type]

        async def touch(name: str) -> None:
            results[name] = await call(c, "touch", {"path": name, "content": "x"})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(touch, "a.txt")
            tasks.start_soon(touch, "b.txt")
    assert len(forms) == 2
    assert all(not r.is_error for r in results.values()), [text_of(r) for r in results.values()]
    assert {f.splitlines()[0] for f in forms} == {
        "Approval #1: allow touch (write)?",
        "Approval #2: allow touch (write)?",
    }
