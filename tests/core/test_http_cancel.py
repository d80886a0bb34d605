"""A dropped stream cancels its call over `serve --http`, in both eras: a raw HTTP client starts
an eval cell that would run for minutes and drops the connection; the kernel is interrupted
(eval is serialized per run, so the next cell answering at once shows it), and the run stays
usable. The same for an ast_grep search (the server's CPU goes quiet) and an lsp request (the
language server gets $/cancelRequest)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.core.http_serving import WAIT, connect, serve_http, text_of
from tests.core.mcp_conn import INITIALIZE, MCP_HEADERS
from tests.corpus import corpus_copy, realworld
from tests.support import require_binary

LONG_CELL = "open('started', 'w').close()\nimport time\ntime.sleep(600)"
MODERN = "2026-07-28"


def call_body(era: str, name: str, arguments: dict[str, Any], request_id: int) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era == "modern":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def handshake(http: httpx2.Client, url: str) -> dict[str, str]:
    r = http.post(url, content=json.dumps(INITIALIZE), headers=MCP_HEADERS)
    assert r.status_code == 200, r.text
    headers = {
        **MCP_HEADERS,
        "Mcp-Session-Id": r.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert http.post(url, content=json.dumps(note), headers=headers).status_code == 202
    return headers


def call_headers(era: str, url: str, tool: str) -> dict[str, str]:
    """Headers of a tools/call: a handshake session's, or the 2026 era's per-request ones."""
    if era == "handshake":
        with httpx2.Client(timeout=WAIT) as http:
            return handshake(http, url)
    return {
        **MCP_HEADERS,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }


async def check_path(era: str, base: str) -> None:
    """The dropped call took the path the era's plain calls take: the 2026 era's direct one,
    or the SDK's JSON-response mode in 2025-11-25 (its client asks nothing: no elicitation)."""
    counter = "one_body" if era == "handshake" else "direct"
    line = f"livetools_http_{counter}_calls_total 1\n"  # (direct counts once it has answered)
    deadline = time.monotonic() + WAIT
    async with httpx2.AsyncClient(timeout=WAIT) as http:
        while line not in (metrics := (await http.get(f"{base}/metrics")).text):
            assert time.monotonic() < deadline, metrics
            await anyio.sleep(0.05)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_dropped_stream_interrupts_eval(era: str, tmp_path: Path) -> None:
    pytest.importorskip("ipykernel", reason="eval needs ipykernel: uv sync --all-extras")
    with serve_http("--no-token", "--root", str(tmp_path)) as server:
        url = f"{server.url}/mcp"
        headers = call_headers(era, url, "eval")
        body = call_body(
            era,
            "eval",
            {"code": LONG_CELL, "description": "mark the start then sleep ten minutes"},
            7,
        )
        # Posted from a task that is cancelled, which closes the connection (the 2026 era sends
        # headers only with the first event or after 15 s, so waiting for them is no drop).
        dropped = 0.0
        async with httpx2.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:
            tg.start_soon(lambda: http.post(url, content=json.dumps(body), headers=headers))
            deadline = time.monotonic() + WAIT
            while not (tmp_path / "started").exists():
                assert time.monotonic() < deadline, f"the cell never started\n{server.log}"
                await anyio.sleep(0.1)
            dropped = time.monotonic()
            tg.cancel_scope.cancel()
        await check_path(era, server.url)
        async with connect(era, url) as conn:
            out = await conn.call(
                "eval", {"code": "6 * 7", "description": "multiply two numbers after the drop"}
            )
        waited = time.monotonic() - dropped
        assert not out.is_error, text_of(out)
        assert "42" in text_of(out)
        print(f"{era}: next cell answered {waited:.2f} s after the drop")
        assert waited < WAIT  # the 600 s cell did not hold the kernel


def cpu_seconds(pid: int) -> float:
    """CPU time of `pid` and every process under it (threads and reaped children included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime + stime, and cutime + cstime: the CPU of children that ended and were reaped
        # (search workers that were stopped) stays counted.
        total += sum(int(f) for f in fields[11:15]) / ticks
    return total


async def cpu_reaches(pid: int, seconds: float, what: str) -> float:
    """Wait (bounded) until `pid`'s tree has used `seconds` more CPU; its CPU total then."""
    start = cpu_seconds(pid)
    deadline = time.monotonic() + WAIT
    while (now := cpu_seconds(pid)) - start < seconds:
        assert time.monotonic() < deadline, what
        await anyio.sleep(0.1)
    return now


async def cpu_quiet(pid: int) -> float:
    """Wait (bounded) until `pid`'s tree uses under a third of a core; its CPU total then."""
    deadline = time.monotonic() + WAIT
    while True:
        before = cpu_seconds(pid)
        await anyio.sleep(1.0)
        used = cpu_seconds(pid) - before
        if used < 0.3:
            return before + used
        assert time.monotonic() < deadline, f"still busy: {used:.2f} s CPU per second"


SEARCH_FILES = 300
SEARCH_CPU = 14.0  # seconds of CPU the whole search takes here (measured: 13-15)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_dropped_stream_stops_an_ast_grep_search(era: str, tmp_path: Path) -> None:
    """A search that would take many seconds of CPU, dropped once it has used one: the server's
    CPU goes quiet having used a fraction of what the rest of the search needs.

    The request runs in a task that is cancelled, which closes its connection, in both eras
    (the 2026 era answers headers only with the first event or after 15 s, so a client that
    waited for them would drop only a search already 15 s in, or finished on a fast machine)."""
    body = "".join(f"def f{i}(a, b):\n    return a + b * {i} - (a + {i})\n" for i in range(1500))
    for k in range(SEARCH_FILES):
        (tmp_path / f"m{k}.py").write_text(body)
    with serve_http("--no-token", "--root", str(tmp_path)) as server:
        url = f"{server.url}/mcp"
        pid = server.proc.pid
        headers = call_headers(era, url, "ast_grep")
        search = {"pattern": "$A + $B", "max_results": 0}
        body_json = json.dumps(call_body(era, "ast_grep", search, 9))
        answered: list[int] = []

        async def post() -> None:
            answered.append((await http.post(url, content=body_json, headers=headers)).status_code)

        await cpu_quiet(pid)  # start-up is over: what follows is the search's
        dropped_at = 0.0
        async with httpx2.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:
            tg.start_soon(post)
            dropped_at = await cpu_reaches(pid, 1.0, f"the search never ran\n{server.log}")
            tg.cancel_scope.cancel()  # the connection closes
        assert not answered, f"the search ended before the drop: {answered}"
        after_drop = await cpu_quiet(pid) - dropped_at
        print(f"{era}: {after_drop:.2f} s of CPU after the drop")
        # A dropped search stops at its next batch; the rest of it is over 10 s of CPU.
        assert after_drop < SEARCH_CPU / 3, f"the search went on: {after_drop:.1f} s of CPU"
        await check_path(era, server.url)
        async with connect(era, url) as conn:
            out = await conn.call("ast_grep", {"pattern": "def f1($$$A): $$$B", "path": "m0.py"})
        assert not out.is_error, text_of(out)
        assert "m0.py" in text_of(out)


RXJS_TSCONFIG = {
    "compilerOptions": {"target": "es2017", "lib": ["es2018", "dom"], "noEmit": True},
    "include": ["./**/*.ts"],
}
REFERENCES = {
    "action": "references",
    "file": "src/internal/Observable.ts",
    "line": 15,
    "symbol": "Observable",
}


def traced(trace: Path, what: str) -> bool:
    try:
        return any(what in line for line in trace.read_text().splitlines())
    except FileNotFoundError:
        return False


@realworld
@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_dropped_stream_cancels_an_lsp_request(era: str, tmp_path: Path) -> None:
    """references to rxjs's Observable, the stream dropped while tsserver loads the project
    (seconds): the dropped call stops, so the only references request the server sees is the next
    call's, which answers; had the request gone out before the drop, the server gets
    $/cancelRequest for it."""
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    root = corpus_copy("rxjs", tmp_path / "copy")
    (root / "src" / "tsconfig.json").write_text(json.dumps(RXJS_TSCONFIG))
    trace = tmp_path / "lsp-trace"
    prefer = json.dumps({"prefer": ["typescript-language-server"]})
    args = ("--root", str(root), "--option", f"lsp={prefer}")
    with serve_http(*args, "--no-token", env={"LIVETOOLS_LSP_TRACE": str(trace)}) as server:
        url = f"{server.url}/mcp"
        headers = call_headers(era, url, "lsp")
        body = json.dumps(call_body(era, "lsp", REFERENCES, 11))
        # The 2026 era answers headers only with the first event or after 15 s, so the client
        # gives up on the whole request (the connection closes) rather than on a stream.
        async with httpx2.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:
            tg.start_soon(lambda: http.post(url, content=body, headers=headers))
            deadline = time.monotonic() + 2 * WAIT
            while not traced(trace, "-> initialized"):  # the server is up, loading the project
                assert time.monotonic() < deadline, f"no language server\n{server.log}"
                await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
        await check_path(era, server.url)
        async with connect(era, url) as conn:
            out = await conn.call("lsp", REFERENCES)
        assert not out.is_error, text_of(out)
        sent = trace.read_text().count("-> textDocument/references")
        cancelled = traced(trace, "-> $/cancelRequest")
        print(f"{era}: references requests sent {sent}, $/cancelRequest {cancelled}")
        assert sent == 1 or cancelled, f"the dropped call went on:\n{trace.read_text()}"
        assert 'references to "Observable"' in text_of(out)
