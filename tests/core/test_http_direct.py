"""The direct path of 2026-era tools/call (faces/mcp/http/direct.py) against its oracle, the
SDK's own path: the same raw requests to two servers on copies of one root, one of them with
LIVETOOLS_HTTP_DIRECT=0, get the same status, content type and JSON answer, request by request;
`/metrics` shows the direct server really answered the plain calls itself and handed the rest
to the SDK."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.core.http_serving import Served, http_client, serve_http

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "direct-test", "version": "1"},
}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def tools_call(
    name: Any, arguments: Any = None, *, request_id: Any = 1, meta: Any = META, **params: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "_meta": meta, **params}
    if arguments is not None:
        body["arguments"] = arguments
    if meta is None:
        del body["_meta"]
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


def headers_for(body: Any, **extra: str) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
    }
    params = body.get("params") if isinstance(body, dict) else None
    if isinstance(params, dict) and isinstance(params.get("name"), str):
        headers["mcp-name"] = params["name"]
    headers.update(extra)
    return headers


# (label, body, header overrides): plain calls the direct path answers, then requests it must
# leave to the SDK, each of which the SDK answers or refuses in its own way.
PLAIN = [
    ("echo", tools_call("echo", {"text": "hi"}), {}),
    ("string id", tools_call("echo", {"text": "ü ✓"}, request_id="a-1"), {}),
    ("image", tools_call("picture", {}), {}),
    ("no arguments", tools_call("picture"), {}),
    ("tool error", tools_call("echo", {"text": 5}), {}),
    ("unknown argument", tools_call("echo", {"text": "x", "extra": 1}), {}),
    ("unknown tool", tools_call("nope", {}), {}),
    ("status", tools_call("lsp", {"action": "status"}), {}),
    ("write", tools_call("touch", {"path": "made.txt"}), {}),
    ("search", tools_call("ast_grep", {"pattern": "def $F($$$A): $$$B"}), {}),
    (
        "elicitation declared",
        tools_call(
            "echo",
            {"text": "hi"},
            meta={**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
        ),
        {},
    ),
]
NO_CAPABILITIES = {k: v for k, v in META.items() if "Capabilities" not in k}
FUTURE = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
FUTURE_HEADER = {"mcp-protocol-version": "2099-01-01"}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
LIST = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": META}}
HANDED_ON = [
    ("name header differs", tools_call("echo", {"text": "hi"}), {"mcp-name": "picture"}),
    ("method header differs", tools_call("echo", {"text": "hi"}), {"mcp-method": "tools/list"}),
    ("no envelope", tools_call("echo", {"text": "hi"}, meta=None), {}),
    ("no capabilities", tools_call("echo", {"text": "hi"}, meta=NO_CAPABILITIES), {}),
    ("unsupported version", tools_call("echo", {"text": "hi"}, meta=FUTURE), FUTURE_HEADER),
    ("arguments not an object", tools_call("echo", ["hi"]), {}),
    ("name not a string", tools_call(5, {}), {}),
    ("bool id", tools_call("echo", {"text": "hi"}, request_id=True), {}),
    ("extra param", tools_call("echo", {"text": "hi"}, task={"ttl": 5}), {}),
    ("progress token", tools_call("echo", {"text": "hi"}, meta={**META, "progressToken": 7}), {}),
    ("notification", CANCEL, {}),
    ("tools/list", LIST, {"mcp-method": "tools/list"}),
    ("batch", [tools_call("echo", {"text": "hi"})], {}),
    ("JSON only accepted", tools_call("echo", {"text": "hi"}), {"accept": "application/json"}),
    ("wrong content type", tools_call("echo", {"text": "hi"}), {"content-type": "text/plain"}),
    ("param header", tools_call("echo", {"text": "hi"}), {"mcp-param-text": "hi"}),
]  # fmt: skip
BROKEN = [
    ("not JSON", b"{", {}),
    ("deep nesting", b"[" * 100_000, {}),
    ("not UTF-8", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call\xff"}', {}),
]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served]]:
    """(direct, through the SDK), each on its own copy of one root."""
    base = tmp_path_factory.mktemp("direct")
    roots = [base / "direct", base / "sdk"]
    for root in roots:
        root.mkdir()
        (root / "shapes.py").write_text("def area(w, h):\n    return w * h\n")
    with (
        serve_http("--no-token", "--root", str(roots[0])) as direct,
        serve_http(
            "--no-token", "--root", str(roots[1]), env={"LIVETOOLS_HTTP_DIRECT": "0"}
        ) as sdk,
    ):
        yield direct, sdk
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)


def _answer(response: httpx2.Response) -> tuple[int, str, Any]:
    kind = response.headers.get("content-type", "")
    text = response.text
    if kind.startswith("text/event-stream"):
        events = re.findall(r"^data: (.*)$", text, flags=re.MULTILINE)
        pings = text.count(": ping")
        return (
            response.status_code,
            f"sse, {len(events)} events, pings: {pings > 0}",
            [json.loads(e) for e in events],
        )
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    return response.status_code, kind, body


async def _post(served: Served, body: bytes, headers: dict[str, str]) -> httpx2.Response:
    async with http_client() as http:
        return await http.post(f"{served.url}/mcp", content=body, headers=headers)


async def _metric(served: Served, name: str) -> int:
    async with http_client() as http:
        text = (await http.get(f"{served.url}/metrics")).text
    found = re.search(rf"^livetools_http_{name} (\d+)$", text, flags=re.MULTILINE)
    assert found, text
    return int(found.group(1))


async def _both(
    servers: tuple[Served, Served], body: bytes, headers: dict[str, str]
) -> tuple[tuple[int, str, Any], tuple[int, str, Any]]:
    direct, sdk = servers
    answers: list[httpx2.Response] = []
    for served in (direct, sdk):
        answers.append(await _post(served, body, headers))
    return _answer(answers[0]), _answer(answers[1])


CASES = [(*case, True) for case in PLAIN] + [(*case, False) for case in HANDED_ON]


@pytest.mark.anyio
@pytest.mark.parametrize(("label", "body", "extra", "direct"), CASES, ids=[c[0] for c in CASES])
async def test_same_answer_as_the_sdk(
    servers: tuple[Served, Served], label: str, body: Any, extra: dict[str, str], direct: bool
) -> None:
    """Plain calls are answered on the direct path, the rest handed to the SDK; either way the
    answer is the SDK path's."""
    before = await _metric(servers[0], "direct_calls_total")
    ours, theirs = await _both(servers, json.dumps(body).encode(), headers_for(body, **extra))
    assert ours == theirs
    assert await _metric(servers[0], "direct_calls_total") == before + direct
    assert await _metric(servers[1], "direct_calls_total") == 0
    if direct:
        assert ours[0] == 200 and ours[1] == "application/json"
        result = ours[2]["result"]
        assert result["resultType"] == "complete" and SERVER_INFO in result["_meta"]


@pytest.mark.anyio
@pytest.mark.parametrize(("label", "body", "extra"), BROKEN, ids=[c[0] for c in BROKEN])
async def test_broken_bodies_get_the_sdks_answer(
    servers: tuple[Served, Served], label: str, body: bytes, extra: dict[str, str]
) -> None:
    ours, theirs = await _both(servers, body, headers_for({}, **extra))
    assert ours == theirs
    assert ours[0] >= 400 or "error" in ours[2]


@pytest.mark.anyio
async def test_oversize_body_refused_as_the_sdk_refuses(servers: tuple[Served, Served]) -> None:
    body = tools_call("echo", {"text": "x" * (5 << 20)})
    ours, theirs = await _both(servers, json.dumps(body).encode(), headers_for(body))
    assert ours == theirs and ours[0] == 413


@pytest.mark.anyio
async def test_a_call_past_the_deferral_window_streams_pings_then_its_answer(
    servers: tuple[Served, Served],
) -> None:
    """Past 15 s without an answer both paths commit to SSE, ping, then send the result."""
    code = "import time\ntime.sleep(16)\n6 * 7"
    body = tools_call(
        "eval", {"code": code, "description": "sleep past the deferral window then answer"}
    )
    payload, headers = json.dumps(body).encode(), headers_for(body)
    answers: dict[int, tuple[int, str, Any]] = {}

    async def one(index: int) -> None:
        answers[index] = _answer(await _post(servers[index], payload, headers))

    async with anyio.create_task_group() as tasks:
        for index in (0, 1):
            tasks.start_soon(one, index)
    for _, _, events in answers.values():
        del events[0]["result"]["_meta"]["livetools/data"]["seconds"]  # the cell's own time
    assert answers[0] == answers[1]
    assert answers[0][1] == "sse, 1 events, pings: True"
    assert answers[0][2][0]["result"]["content"][0]["text"].endswith("42")
