"""`livetools serve` as agent frameworks nobody here wrote drive it: pydantic-ai's MCP toolset
under a scripted `FunctionModel` (no LLM), and fastmcp's client in both protocol eras.

What is checked is what the *model* gets: frameworks hand `structuredContent` to the model
instead of the text when it is there, so a result whose structured content is not the text
would show the model metadata (`{"status": "ok"}`) instead of eval's `42`."""

from __future__ import annotations

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
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.support import plugin_env

pytestmark = pytest.mark.anyio
WAIT = 120  # seconds: a kernel starts on a loaded machine inside this bound
ERAS = ["legacy", "auto"]  # fastmcp's names: the 2025-11-25 handshake, and 2026-07-28


def transport(root: Path) -> StdioTransport:
    args = ["-m", "livetools.faces.cli", "serve", "--root", str(root), "--surface", "agent"]
    return StdioTransport(sys.executable, args, env=plugin_env(), cwd=str(root))


async def decline(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
    """The human's answer to every question: skip it (a form declined)."""
    return ElicitResult(action="decline")


def client(root: Path, mode: str = "auto", **kwargs: Any) -> Client:
    return Client(transport(root), mode=mode, timeout=WAIT, init_timeout=WAIT, **kwargs)  # type: ignore[arg-type]


Step = tuple[str, dict[str, Any]]


def scripted(steps: list[Step], seen: list[str]) -> FunctionModel:
    """A model that calls `steps` in order, recording the model-visible text of every tool
    result it receives, then answers "done"."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest):
            for part in last.parts:
                if isinstance(part, ToolReturnPart):
                    seen.append(part.model_response_str())
                elif isinstance(part, RetryPromptPart):
                    seen.append(part.model_response())
        calls = sum(isinstance(m, ModelResponse) and bool(m.tool_calls) for m in messages)
        if calls < len(steps):
            name, args = steps[calls]
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{calls}")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


async def run_agent(root: Path, steps: list[Step], **client_kwargs: Any) -> list[str]:
    seen: list[str] = []
    toolset = MCPToolset(client(root, **client_kwargs), max_retries=len(steps) + 1)
    agent = Agent(scripted(steps, seen), toolsets=[toolset])
    with anyio.fail_after(WAIT * 2):
        result = await agent.run("go")
    assert result.output == "done"
    return seen


async def test_pydantic_ai_model_sees_eval_value(tmp_path: Path) -> None:
    steps: list[Step] = [
        ("eval", {"code": "x = 21", "description": "set x to a starting number here"}),
        ("eval", {"code": "x*2", "description": "double x and show the result"}),
    ]
    seen = await run_agent(tmp_path, steps)
    assert len(seen) == 2
    assert "42" in seen[1], seen
    assert "status" not in seen[1], seen  # the text, not eval's metadata


async def test_pydantic_ai_model_sees_skipped_question_instruction(tmp_path: Path) -> None:
    question = {"question": "Which database?", "options": [{"label": "a"}, {"label": "b"}]}
    seen = await run_agent(tmp_path, [("ask_user", question)], elicitation_handler=decline)
    assert len(seen) == 1
    assert "skipped question #1" in seen[0], seen
    assert "continue on a stated assumption" in seen[0], seen


async def test_pydantic_ai_model_sees_which_field_was_wrong(tmp_path: Path) -> None:
    seen = await run_agent(
        tmp_path, [("eval", {"code": 42, "description": "pass the wrong type on purpose"})]
    )
    assert len(seen) == 1
    assert "code" in seen[0] and "invalid arguments for eval" in seen[0], seen
    assert seen[0] != '{"error": "usage"}'


@asynccontextmanager
async def connected(root: Path, mode: str, **kwargs: Any) -> AsyncIterator[Client]:
    async with client(root, mode, **kwargs) as c:
        yield c


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ERAS)
async def test_fastmcp_client_both_eras(mode: str, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    async with connected(tmp_path, mode, elicitation_handler=decline) as c:
        expected = "2026-07-28" if mode == "auto" else "2025-11-25"
        assert c.protocol_version == expected
        with anyio.fail_after(WAIT):
            tools = {t.name for t in await c.list_tools()}
        assert {"eval", "write", "edit", "ask_user", "ast_grep"} <= tools

        async def call(name: str, args: dict[str, Any]) -> Any:
            with anyio.fail_after(WAIT):
                return await c.call_tool(name, args, raise_on_error=False)

        out = await call(
            "eval", {"code": "6*7", "description": "multiply two small numbers for a check"}
        )
        assert not out.is_error and "42" in text_of(out)
        # No structured content: whatever a client shows the model is the text; data rides in
        # _meta for programs.
        assert out.structured_content is None
        assert out.meta is not None and "livetools/data" in out.meta

        out = await call("ask_user", {"question": "Go?", "allow_free_text": True})
        assert not out.is_error and "continue on a stated assumption" in text_of(out)

        out = await call("ast_grep", {"pattern": "print($A)"})
        assert not out.is_error and "a.py:1" in text_of(out)

        out = await call("eval", {"description": "a cell with its code left out"})
        assert out.is_error and "code" in text_of(out)
