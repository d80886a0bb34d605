"""A handshake-era (2025-11-25) POST whose stream would carry only its answer is answered as
JSON with a Content-Length, so clients can reuse the connection; anything else stays SSE. A
lone tools/call that nothing can interrupt with a question skips the SDK's SSE machinery
(`one_body`). And the server's startup heap is frozen, out of the reach of full collections
(a load figure)."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from starlette.types import Message

from livetools.faces.mcp.http.framing import JsonAnswers, answer_payload, one_body
from tests.core.http_serving import WAIT, connect, http_client, serve_http, text_of

SSE_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"mcp-session-id", b"abc"),
        (b"x-accel-buffering", b"no"),
    ],
}
ANSWER = b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'
ASK = b'{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}'
END: Message = {"type": "http.response.body", "body": b"", "more_body": False}


SESSION = {b"mcp-session-id": b"abc", b"accept": b"application/json, text/event-stream"}


def event(payload: bytes) -> bytes:
    return b"event: message\r\ndata: " + payload + b"\r\n\r\n"


def chunk(body: bytes) -> Message:
    return {"type": "http.response.body", "body": body, "more_body": True}


def test_answer_payload_only_for_a_single_answer_event() -> None:
    assert answer_payload(event(ANSWER)) == ANSWER
    error = b'{"jsonrpc":"2.0","id":"a,\\"result\\"","error":{"code":-1,"message":"x"}}'
    assert answer_payload(event(error)) == error
    assert answer_payload(event(NOTE)) is None
    assert answer_payload(event(ASK)) is None
    tricky = b'{"jsonrpc":"2.0","id":"x,\\"result\\"","method":"ping"}'
    assert answer_payload(event(tricky)) is None  # the id's quotes are escaped
    assert answer_payload(b"id: 7\r\n" + event(ANSWER)) is None  # resumable: keep SSE
    assert answer_payload(b": ping - 2026-01-01\r\n\r\n") is None
    assert answer_payload(event(ANSWER) + event(ANSWER)) is None


async def replay(*messages: Message) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    answers = JsonAnswers(send)
    for message in messages:
        await answers.send(message)
    await answers.flush()
    return sent


@pytest.mark.anyio
async def test_a_lone_answer_goes_out_as_json() -> None:
    sent = await replay(SSE_START, chunk(event(ANSWER)), END)
    assert len(sent) == 2
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"content-length"] == str(len(ANSWER)).encode()
    assert headers[b"mcp-session-id"] == b"abc" and b"x-accel-buffering" not in headers
    assert sent[1] == {"type": "http.response.body", "body": ANSWER}


@pytest.mark.anyio
@pytest.mark.parametrize("first", [event(NOTE), event(ASK), b": ping - now\r\n\r\n"])
async def test_anything_before_the_answer_keeps_the_stream(first: bytes) -> None:
    messages = [SSE_START, chunk(first), chunk(event(ANSWER)), END]
    assert await replay(*messages) == messages


@pytest.mark.anyio
async def test_json_responses_and_unfinished_streams_pass_as_they_are() -> None:
    json_start: Message = {
        "type": "http.response.start",
        "status": 202,
        "headers": [(b"content-type", b"application/json")],
    }
    assert await replay(json_start, END) == [json_start, END]
    # The SDK stopped without ending the stream: what was held goes out as it came.
    assert await replay(SSE_START, chunk(event(ANSWER))) == [SSE_START, chunk(event(ANSWER))]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        (SESSION, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r"}}', True),
        (SESSION, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w"}}', False),
        ({}, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r"}}', False),
        (
            {**SESSION, b"accept": b"application/json"},
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r"}}',
            False,
        ),
        (SESSION, b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r"}}]', False),
        (SESSION, b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"r"}}', False),
        (SESSION, b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', False),
        (SESSION, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r"', False),
        (
            SESSION,
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"r", "x":9}}',
            False,
        ),
    ],
    ids=[
        "read",
        "write",
        "initialize",
        "json only",
        "batch",
        "notification",
        "list",
        "broken",
        "oversize",
    ],
)
async def test_one_body_only_for_a_lone_call_that_asks_nothing(
    headers: dict[bytes, bytes], body: bytes, expected: bool
) -> None:
    """Whatever it decides, the SDK is handed the same body, in the same pieces."""
    pieces = [body[:20], body[20:]]
    sent = [
        {"type": "http.request", "body": piece, "more_body": i == 0}
        for i, piece in enumerate(pieces)
    ]
    queue = list(sent)

    async def receive() -> Message:
        return queue.pop(0)

    replay, single = await one_body(headers, receive, 70, lambda name: name == "r")
    assert single is expected
    if len(headers) == 2:
        assert [await replay() for _ in sent] == sent
    else:
        assert replay is receive and len(queue) == 2


@pytest.mark.anyio
async def test_handshake_era_calls_answered_as_json_on_one_connection(tmp_path: Path) -> None:
    testkit = {"LIVETOOLS_PLUGINS": "testkit"}
    with serve_http(
        "--no-token", "--root", str(tmp_path), "--approve", "ask", env=testkit
    ) as server:
        url = f"{server.url}/mcp"
        accept = {"Accept": "application/json, text/event-stream"}
        async with http_client(**accept) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            opened = await http.post(url, json=init)
            assert opened.status_code == 200
            assert opened.headers["content-type"] == "application/json"
            assert opened.json()["result"]["protocolVersion"] == "2025-11-25"
            session = {
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(url, json=note, headers=session)).status_code == 202
            calls = [("echo", {"text": "hi 0"}), ("echo", {"text": "hi 1"})]
            calls.append(("touch", {"path": "a.txt", "content": "x"}))  # needs an approval
            for n, (name, arguments) in enumerate(calls):
                call = {
                    "jsonrpc": "2.0",
                    "id": 10 + n,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
                answer = await http.post(url, json=call, headers=session)
                assert answer.headers["content-type"] == "application/json"
                assert answer.headers["mcp-session-id"] == session["mcp-session-id"]
                content = answer.json()["result"]["content"][0]["text"]
                assert content == arguments.get("text") or "no human" in content, content
            # The read tool's calls were served in the SDK's JSON mode, the write tool's
            # (whose approval could have asked the client) on the SSE path, then framed.
            metrics = (await http.get(f"{server.url}/metrics")).text
            assert "livetools_http_one_body_calls_total 2\n" in metrics

        # The mcp SDK's client closes an SSE response once the answer event is parsed, before
        # the stream's end: with SSE answers each call took a new connection.
        peers: list[object] = []

        async def record(response: httpx2.Response) -> None:
            if response.request.method == "POST":
                stream = response.extensions["network_stream"]
                peers.append(stream.get_extra_info("client_addr"))

        hooks = {"response": [record]}
        async with (
            httpx2.AsyncClient(timeout=WAIT, event_hooks=hooks) as http,
            connect("handshake", url, http=http) as conn,
        ):
            for n in range(5):
                assert text_of(await conn.call("echo", {"text": f"hi {n}"})) == f"hi {n}"
        # (The handshake's connection goes on to carry the client's GET stream.)
        assert len(peers) >= 7 and len(set(peers[-5:])) == 1, peers


def test_settled_heap_is_out_of_the_collectors_sight() -> None:
    import gc

    from livetools.faces.mcp.http.command import settle_heap

    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
