"""`livetools serve` as MCP clients see it: the real `mcp` client over stdio against a server
subprocess, in both protocol eras (the 2025-11-25 `initialize` handshake and the 2026-07-28
per-request envelope, reached with `Client(mode="auto")`)."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from tests.core.mcp_conn import INITIALIZE, WAIT, Conn, text_of
from tests.support import plugin_env

ERAS = ["handshake", "modern"]


def serve_command(root: Path, surface: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "livetools.faces.cli",
        "serve",
        "--root",
        str(root),
        "--surface",
        surface,
    ]


@asynccontextmanager
async def connect(era: str, root: Path, surface: str = "agent") -> AsyncIterator[Conn]:
    params = StdioServerParameters(
        command=serve_command(root, surface)[0],
        args=serve_command(root, surface)[1:],
        env=plugin_env(),
    )
    conn = Conn(era)
    # Entering a client starts task groups, which must not straddle a fail_after scope: the
    # handshakes are bounded by the read timeout instead.
    async with AsyncExitStack() as stack:
        if era == "handshake":
            read, write = await stack.enter_async_context(stdio_client(params))
            session = ClientSession(
                read, write, read_timeout_seconds=WAIT, message_handler=conn.on_message
            )
            conn.session = await stack.enter_async_context(session)
            init = await conn.session.initialize()
            assert init.protocol_version == "2025-11-25"
            assert init.capabilities.tools is not None
            assert init.capabilities.tools.list_changed is True
        else:
            client = Client(params, mode="auto", read_timeout_seconds=WAIT)
            conn.client = await stack.enter_async_context(client)
            assert client.protocol_version == "2026-07-28"
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            conn.subscription = await stack.enter_async_context(
                client.listen(tools_list_changed=True)
            )
        yield conn


def data_of(result: types.CallToolResult) -> Any:
    """A result's `data`: in `_meta`, never structured content (which frameworks would show the
    model instead of the text)."""
    assert result.structured_content is None
    return (result.meta or {}).get("livetools/data")


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_tools_calls_images_and_writes(era: str, tmp_path: Path) -> None:
    async with connect(era, tmp_path) as conn:
        tools = await conn.list_tools()
        assert {"echo", "picture", "touch", "nap", "unlock", "write", "edit"} <= set(tools)
        assert "vault_peek" not in tools
        echo, write, nap = tools["echo"], tools["write"], tools["nap"]
        assert echo.annotations is not None and write.annotations is not None
        assert (echo.annotations.read_only_hint, echo.annotations.destructive_hint) == (True, False)
        assert echo.annotations.open_world_hint is False
        assert (write.annotations.read_only_hint, write.annotations.destructive_hint) == (
            False,
            True,
        )
        assert nap.annotations is not None and nap.annotations.open_world_hint is True
        assert echo.meta == {"livetools/tier": "read"}
        assert write.meta == {"livetools/tier": "write"}
        assert nap.meta == {"livetools/tier": "exec"}
        assert echo.input_schema["properties"]["text"]["type"] == "string"

        out = await conn.call("echo", {"text": "hi"})
        assert not out.is_error
        assert text_of(out) == "hi"
        assert data_of(out) == {"echo": "hi"}

        out = await conn.call("picture")
        images = [c for c in out.content if isinstance(c, types.ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n")
        assert data_of(out) == {"width": 2, "height": 2}

        out = await conn.call("write", {"path": "notes/a.txt", "content": "one\ntwo\n"})
        assert not out.is_error, text_of(out)
        assert (tmp_path / "notes" / "a.txt").read_text() == "one\ntwo\n"
        out = await conn.call("edit", {"path": "notes/a.txt", "old": "two", "new": "three"})
        assert not out.is_error, text_of(out)
        assert (tmp_path / "notes" / "a.txt").read_text() == "one\nthree\n"
        assert data_of(out) == {"path": "notes/a.txt", "notes": []}

        out = await conn.call("edit", {"path": "notes/a.txt", "old": "absent", "new": "x"})
        assert out.is_error and "not found" in text_of(out)
        out = await conn.call("no_such_tool")
        assert out.is_error and 'unknown tool "no_such_tool"' in text_of(out)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_plan_surface_hides_and_refuses_writes(era: str, tmp_path: Path) -> None:
    async with connect(era, tmp_path, surface="plan") as conn:
        tools = await conn.list_tools()
        assert not {"touch", "write", "edit", "nap"} & set(tools)
        assert {"echo", "picture", "unlock"} <= set(tools)
        assert all(t.meta == {"livetools/tier": "read"} for t in tools.values())
        out = await conn.call("touch", {"path": "x.txt", "content": "no"})
        assert out.is_error and 'on surface "plan"' in text_of(out)
        out = await conn.call("write", {"path": "y.txt", "content": "no"})
        assert out.is_error
    assert [p async for p in anyio.Path(tmp_path).iterdir()] == []


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_tool_appearing_mid_run_is_announced(era: str, tmp_path: Path) -> None:
    async with connect(era, tmp_path) as conn:
        assert "vault_peek" not in await conn.list_tools()
        out = await conn.call("unlock")
        assert not out.is_error, text_of(out)
        await conn.tools_changed()
        assert "vault_peek" in await conn.list_tools()
        assert text_of(await conn.call("vault_peek")) == "gold"


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def start_raw(root: Path, *messages: dict[str, Any]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        serve_command(root, "agent"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=plugin_env(),
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    return proc


def read_reply(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())


def test_exits_on_disconnect_and_stdout_is_only_protocol(tmp_path: Path) -> None:
    """Raw stdio, no SDK: every stdout line is JSON-RPC, and closing stdin ends the process with
    status 0 on its own (the SDK client would SIGTERM a server that lingers)."""
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    echo = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "raw"}},
    }
    proc = start_raw(tmp_path, INITIALIZE, INITIALIZED, tools_list, echo)
    try:
        replies = [read_reply(proc) for _ in range(3)]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        rc = proc.wait(timeout=WAIT)
        rest = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0, proc.stderr.read() if proc.stderr else ""
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert replies[0]["result"]["capabilities"]["tools"] == {"listChanged": True}
    names = {t["name"] for t in replies[1]["result"]["tools"]}
    assert {"echo", "write", "edit"} <= names
    assert replies[2]["result"]["content"] == [{"type": "text", "text": "raw"}]
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_with_stdin_still_open_exits_promptly(tmp_path: Path) -> None:
    """The SDK client's last resort is SIGTERM; the stdin reader thread must not keep us alive."""
    proc = start_raw(tmp_path, INITIALIZE, INITIALIZED)
    try:
        assert read_reply(proc)["id"] == 1
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == -signal.SIGTERM


def replies_until(proc: subprocess.Popen[str], count: int) -> list[dict[str, Any]]:
    """The next `count` stdout lines as JSON, each awaited at most WAIT seconds."""
    import queue
    import threading

    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    out = []
    for _ in range(count):
        try:
            out.append(json.loads(lines.get(timeout=WAIT)))
        except queue.Empty:
            raise AssertionError(f"only {len(out)} of {count} answers: {out}") from None
    return out


def test_every_line_gets_one_answer_and_none_kills_the_server(tmp_path: Path) -> None:
    """Bad lines as a buggy client sends them: not JSON, nested 100k deep, a lone surrogate
    (legal JSON, not UTF-8), valid JSON that is no JSON-RPC message, arguments of the wrong
    shape. Each request gets exactly one answer (a result or a JSON-RPC error) and the server
    still serves afterwards."""

    def call(rid: int, arguments: Any) -> str:
        params = {"name": "echo", "arguments": arguments}
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    proc = start_raw(tmp_path, INITIALIZE, INITIALIZED)
    assert proc.stdin is not None
    bad = [
        "not json at all",
        "[" * 100_000,
        call(10, {"text": "\ud800 lone"}),
        '{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "echo", '
        '"arguments": {"text": "\\udfff"}}}',
        json.dumps({"id": 12}),
        "42",
        "[]",
        call(13, [1, 2]),
        call(14, {"text": "[" * 500 + "]" * 500}),
        call(15, {"text": "nul\u0000byte"}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/whatever", "params": 1}),
        call(16, {"text": "still here"}),
    ]
    proc.stdin.write("\n".join(bad) + "\n")
    proc.stdin.flush()
    try:
        replies = replies_until(proc, 1 + 11)  # initialize + 11 answers (the notification: none)
        proc.stdin.close()
        assert proc.wait(timeout=WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    by_id = {r["id"]: r for r in replies if r["id"] is not None}
    anonymous = [r["error"]["code"] for r in replies if r["id"] is None]
    # not JSON, too deep: parse errors; 42 and []: invalid requests without an id.
    assert sorted(anonymous) == [-32700, -32700, -32600, -32600], replies
    assert by_id[10]["result"]["content"][0]["text"] == "\ufffd lone"
    assert by_id[11]["result"]["content"][0]["text"] == "\ufffd"
    assert by_id[12]["error"]["code"] == -32600
    assert by_id[13]["error"]["code"] == -32602
    assert "params.arguments must be an object, not list" in by_id[13]["error"]["message"]
    assert by_id[14]["result"]["content"][0]["text"].startswith("[[[")
    assert by_id[15]["result"]["content"][0]["text"] == "nul\u0000byte"
    assert by_id[16]["result"]["content"][0]["text"] == "still here"
    assert set(by_id) == {1, 10, 11, 12, 13, 14, 15, 16}


def test_client_closing_stdout_ends_the_server_quietly(tmp_path: Path) -> None:
    proc = start_raw(tmp_path)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the client stops reading before the first answer
    try:
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        rc = proc.wait(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0
    assert "Traceback" not in proc.stderr.read()
