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


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_dropped_stream_interrupts_eval(era: str, tmp_path: Path) -> None:
    pytest.importorskip("ipykernel", reason="eval needs ipykernel: uv sync --all-extras")
    with serve_http("--root", str(tmp_path)) as server:
        url = f"{server.url}/mcp"
        with httpx2.Client(timeout=WAIT) as http:
            if era == "handshake":
                headers = handshake(http, url)
            else:
                headers = {
                    **MCP_HEADERS,
                    "MCP-Protocol-Version": MODERN,
                    "Mcp-Method": "tools/call",
                    "Mcp-Name": "eval",
                }
            body = call_body(
                era,
                "eval",
                {"code": LONG_CELL, "description": "mark the start then sleep ten minutes"},
                7,
            )
            with http.stream("POST", url, content=json.dumps(body), headers=headers) as r:
                assert r.status_code == 200
                deadline = time.monotonic() + WAIT
                while not (tmp_path / "started").exists():
                    assert time.monotonic() < deadline, f"the cell never started\n{server.log}"
                    await anyio.sleep(0.1)
                dropped = time.monotonic()
            # Leaving the block closes the unfinished response: the connection drops.
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


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_dropped_stream_stops_an_ast_grep_search(era: str, tmp_path: Path) -> None:
    """A search that would take many seconds of CPU: after the drop the server goes quiet."""
    body = "".join(f"def f{i}(a, b):\n    return a + b * {i} - (a + {i})\n" for i in range(1500))
    for k in range(300):
        (tmp_path / f"m{k}.py").write_text(body)
    with serve_http("--root", str(tmp_path)) as server:
        url = f"{server.url}/mcp"
        with httpx2.Client(timeout=WAIT) as http:
            if era == "handshake":
                headers = handshake(http, url)
            else:
                headers = {
                    **MCP_HEADERS,
                    "MCP-Protocol-Version": MODERN,
                    "Mcp-Method": "tools/call",
                    "Mcp-Name": "ast_grep",
                }
            search = {"pattern": "$A + $B", "max_results": 0}
            body_json = json.dumps(call_body(era, "ast_grep", search, 9))
            with http.stream("POST", url, content=body_json, headers=headers) as r:
                assert r.status_code == 200
                busy_from = cpu_seconds(server.proc.pid)
                deadline = time.monotonic() + WAIT
                while cpu_seconds(server.proc.pid) - busy_from < 1.0:  # it is searching
                    assert time.monotonic() < deadline, "the search never ran"
                    await anyio.sleep(0.1)
        # Dropped. The CPU use falls to (nearly) nothing long before the whole search (about
        # 14 s of CPU here) could have finished.
        dropped_at = cpu_seconds(server.proc.pid)
        deadline = time.monotonic() + WAIT
        while True:
            before = cpu_seconds(server.proc.pid)
            await anyio.sleep(1.0)
            used = cpu_seconds(server.proc.pid) - before
            if used < 0.3:
                break
            assert time.monotonic() < deadline, f"still searching: {used:.2f} s CPU per second"
        after_drop = cpu_seconds(server.proc.pid) - dropped_at
        print(f"{era}: {after_drop:.2f} s of CPU after the drop")
        assert after_drop < 5.0, f"the search went on after the drop: {after_drop:.1f} s of CPU"
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
    with serve_http(*args, env={"LIVETOOLS_LSP_TRACE": str(trace)}) as server:
        url = f"{server.url}/mcp"
        if era == "handshake":
            with httpx2.Client(timeout=WAIT) as http:
                headers = handshake(http, url)
        else:
            headers = {
                **MCP_HEADERS,
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "lsp",
            }
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
        async with connect(era, url) as conn:
            out = await conn.call("lsp", REFERENCES)
        assert not out.is_error, text_of(out)
        sent = trace.read_text().count("-> textDocument/references")
        cancelled = traced(trace, "-> $/cancelRequest")
        print(f"{era}: references requests sent {sent}, $/cancelRequest {cancelled}")
        assert sent == 1 or cancelled, f"the dropped call went on:\n{trace.read_text()}"
        assert 'references to "Observable"' in text_of(out)
