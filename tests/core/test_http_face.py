"""`livetools serve --http --root DIR` as MCP clients see it: the real `mcp` streamable HTTP
client in both protocol eras on the one `/mcp` endpoint, and fastmcp's client; the same tools,
results, list_changed and ask_user elicitation as the stdio face."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.core.http_serving import WAIT, connect, serve_http, text_of

ERAS = ["handshake", "modern"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("http_root")
    with serve_http("--no-token", "--root", str(root)) as server:
        yield server, root


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_tools_results_and_writes(era: str, served: Any) -> None:
    server, root = served
    async with connect(era, f"{server.url}/mcp") as conn:
        tools = await conn.list_tools()
        assert {"echo", "picture", "touch", "nap", "write", "edit"} <= set(tools)
        assert tools["echo"].meta == {"livetools/tier": "read"}
        assert tools["write"].meta == {"livetools/tier": "write"}
        out = await conn.call("echo", {"text": "hi"})
        assert not out.is_error and text_of(out) == "hi"
        assert (out.meta or {}).get("livetools/data") == {"echo": "hi"}
        assert out.structured_content is None
        out = await conn.call("picture")
        images = [c for c in out.content if isinstance(c, types.ImageContent)]
        assert base64.b64decode(images[0].data).startswith(b"\x89PNG")
        out = await conn.call("write", {"path": f"{era}/a.txt", "content": "one\n"})
        assert not out.is_error, text_of(out)
        assert (root / era / "a.txt").read_text() == "one\n"
        out = await conn.call("no_such_tool")
        assert out.is_error and 'unknown tool "no_such_tool"' in text_of(out)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_tool_appearing_mid_run_is_announced(era: str, tmp_path: Path) -> None:
    # A fresh run per era: unlocking is per run.
    with serve_http("--no-token", "--root", str(tmp_path)) as server:
        async with connect(era, f"{server.url}/mcp") as conn:
            assert "vault_peek" not in await conn.list_tools()
            out = await conn.call("unlock")
            assert not out.is_error, text_of(out)
            await conn.tools_changed()
            assert "vault_peek" in await conn.list_tools()
            assert text_of(await conn.call("vault_peek")) == "gold"


@pytest.mark.anyio
async def test_both_eras_share_the_run(served: Any) -> None:
    """One endpoint, one run: what a handshake session writes, a 2026 request reads."""
    server, root = served
    async with connect("handshake", f"{server.url}/mcp") as old:
        out = await old.call("write", {"path": "shared.txt", "content": "from 2025\n"})
        assert not out.is_error, text_of(out)
        async with connect("modern", f"{server.url}/mcp") as new:
            out = await new.call("edit", {"path": "shared.txt", "old": "2025", "new": "2026"})
            assert not out.is_error, text_of(out)
    assert (root / "shared.txt").read_text() == "from 2026\n"


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_ask_user_over_http_elicitation(era: str, tmp_path: Path) -> None:
    forms: list[types.ElicitRequestFormParams] = []

    async def human(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        forms.append(params)
        return types.ElicitResult(action="accept", content={"choice": "sqlite"})

    question = {
        "question": "Which database?",
        "options": [{"label": "postgres"}, {"label": "sqlite"}],
    }
    with serve_http("--no-token", "--root", str(tmp_path)) as server:
        async with connect(era, f"{server.url}/mcp", elicitation=human) as conn:
            assert "ask_user" in await conn.list_tools()
            out = await conn.call("ask_user", question)
            assert not out.is_error, text_of(out)
            assert "sqlite" in text_of(out)
    assert len(forms) == 1 and "Which database?" in forms[0].message


@pytest.mark.anyio
async def test_fastmcp_client(served: Any) -> None:
    from fastmcp import Client as FastClient

    server, _ = served
    with anyio.fail_after(WAIT):
        async with FastClient(f"{server.url}/mcp") as client:
            names = {t.name for t in await client.list_tools()}
            assert {"echo", "write"} <= names
            result = await client.call_tool("echo", {"text": "fast"})
            assert "fast" in "".join(getattr(c, "text", "") for c in result.content)
