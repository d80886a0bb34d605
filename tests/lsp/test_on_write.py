"""Diagnostics on write: the harness's write/edit (and the MCP face's edit) come back with only
the diagnostics that write introduced, against real basedpyright and pylsp."""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest

from tests.lsp.conftest import lsp_run
from tests.support import require_binary

SERVERS = {
    "basedpyright": ("basedpyright-langserver", '"undefined_thing" is not defined'),
    "pylsp": ("pylsp", "undefined name 'undefined_thing'"),
}


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest) -> str:
    require_binary(SERVERS[request.param][0], "uv sync")
    return request.param


def read_file(path: Path) -> str:
    return path.read_text()


def new_diagnostics(text: str) -> list[str]:
    lines = text.splitlines()
    if not any(line.startswith("new diagnostics after this write") for line in lines):
        return []
    start = next(i for i, line in enumerate(lines) if line.startswith("new diagnostics"))
    return lines[start + 1 :]


async def test_reported_once_not_when_moved_not_when_fixed_again_when_doubled(
    project, server: str
) -> None:
    root = project("py")
    message = SERVERS[server][1]
    async with lsp_run(root, [server]) as run:
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "big = Square(3.0)\n",
                "new": "big = Square(3.0)\noops = undefined_thing\n",
            },
        )
        assert not r.is_error, r.text
        news = new_diagnostics(r.text)
        assert len(news) == 1, r.text
        assert news[0].startswith("app.py:5: error") and message in news[0], r.text

        # Lines inserted above: the same error moved two lines down; not news.
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "unit = Square(1.0)\n",
                "new": "# a comment\n# another\nunit = Square(1.0)\n",
            },
        )
        assert new_diagnostics(r.text) == [], r.text
        assert "diagnostics not ready" not in r.text

        # A second identical error is news (counted, not deduplicated away).
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "oops = undefined_thing\n",
                "new": "oops = undefined_thing\nagain = undefined_thing\n",
            },
        )
        news = new_diagnostics(r.text)
        assert len(news) == 1 and news[0].startswith("app.py:8:") and message in news[0], r.text

        # Fixed: nothing to say.
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "oops = undefined_thing\nagain = undefined_thing\n",
                "new": "",
            },
        )
        assert r.text == f"edited app.py\nchecked by {server}: the write added no diagnostics", (
            r.text
        )

        # Broken again after the fix: news again.
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "big = Square(3.0)\n",
                "new": "big = Square(3.0)\nx = undefined_thing\n",
            },
        )
        assert len(new_diagnostics(r.text)) == 1, r.text


async def test_errors_already_there_are_not_blamed_on_the_write(project, server: str) -> None:
    root = project("py")
    (root / "old.py").write_text("print(undefined_thing)\n\nvalue = 1\n")
    async with lsp_run(root, [server]) as run:
        r = await run.call("edit", {"path": "old.py", "old": "value = 1", "new": "value = 2"})
        assert r.text == f"edited old.py\nchecked by {server}: the write added no diagnostics", (
            r.text
        )
        # A new file with an error: everything in it is news.
        r = await run.call("write", {"path": "fresh.py", "content": "y = undefined_thing\n"})
        news = new_diagnostics(r.text)
        assert len(news) == 1 and news[0].startswith("fresh.py:1: error"), r.text


async def test_writes_no_server_handles_cost_nothing(project, server: str) -> None:
    root = project("py")
    async with lsp_run(root, [server]) as run:
        started = time.perf_counter()
        r = await run.call("write", {"path": "notes.txt", "content": "hello\n"})
        assert r.text == "created notes.txt"  # not checked: no note, unlike "checked by"
        assert time.perf_counter() - started < 0.5
        assert run.resource("lsp").servers == {}


async def test_hints_and_unused_are_not_reported(project) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = project("py")
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "big = Square(3.0)\n",
                "new": "big = Square(3.0)\nimport json\n",
            },
        )
        # basedpyright tags an unused import as "unnecessary" (a hint): not news.
        assert new_diagnostics(r.text) == [], r.text


async def test_through_the_mcp_face_edit(project) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    root = project("py")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "livetools.faces.cli", "serve", "--root", str(root)],
    )
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(
            ClientSession(read, write, read_timeout_seconds=60)
        )
        with anyio.fail_after(30):
            await session.initialize()
        with anyio.fail_after(60):
            result = await session.call_tool(
                "edit",
                {
                    "path": "app.py",
                    "old": "big = Square(3.0)\n",
                    "new": "big = Square(3.0)\nbad: int = 'text'\n",
                },
            )
        text = "".join(getattr(c, "text", "") for c in result.content)
        news = new_diagnostics(text)
        assert len(news) == 1 and news[0].startswith("app.py:5: error [reportAssignmentType]"), text
        assert "bad: int = 'text'" in read_file(root / "app.py")
