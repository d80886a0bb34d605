"""Half-sent requests do not hold `serve --http`'s connections: 200 connections that send part
of their headers and stall (slowloris) are closed within `--header-timeout`, also after a
kept-alive connection's first response, while normal requests are answered during and after.
Only 127.0.0.1 is ever targeted."""

from __future__ import annotations

import select
import socket
import time
from pathlib import Path

import httpx2

from tests.core.http_serving import WAIT, serve_http

BOUND = 3.0  # the server's --header-timeout here
SLACK = 20.0  # a loaded CI machine's scheduling; the bound's own default is 20 s
PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Slow: "


def closed_within(socks: list[socket.socket], limit: float) -> dict[socket.socket, float]:
    """When (monotonic) the server closed each socket (EOF or reset), waiting up to `limit`."""
    start = time.monotonic()
    closed: dict[socket.socket, float] = {}
    while len(closed) < len(socks) and time.monotonic() - start < limit:
        readable, _, _ = select.select([s for s in socks if s not in closed], [], [], 0.5)
        for s in readable:
            try:
                data = s.recv(4096)
            except ConnectionError:
                data = b""
            if not data:
                closed[s] = time.monotonic()
    return closed


def test_half_sent_requests_are_closed_and_others_served(tmp_path: Path) -> None:
    args = ("--no-token", "--root", str(tmp_path), "--header-timeout", str(BOUND))
    with serve_http(*args) as server:
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        assert host == "127.0.0.1"
        socks: list[socket.socket] = []
        sent: dict[socket.socket, float] = {}
        try:
            for _ in range(200):
                s = socket.create_connection((host, int(port)), timeout=WAIT)
                s.sendall(PARTIAL)
                sent[s] = time.monotonic()
                socks.append(s)
            with httpx2.Client(base_url=server.url, timeout=WAIT) as http:
                assert http.get("/healthz").status_code == 200  # served during
            closed = closed_within(socks, BOUND + SLACK)
            assert len(closed) == len(socks), f"{len(socks) - len(closed)} still open"
            held = [closed[s] - sent[s] for s in socks]
            assert max(held) < BOUND + SLACK
            assert min(held) > BOUND - 0.5  # not before the bound
            with httpx2.Client(base_url=server.url, timeout=WAIT) as http:
                assert http.get("/healthz").status_code == 200  # and after
        finally:
            for s in socks:
                s.close()


def test_kept_alive_connection_stalling_in_its_next_headers_is_closed(tmp_path: Path) -> None:
    args = ("--no-token", "--root", str(tmp_path), "--header-timeout", str(BOUND))
    with serve_http(*args) as server:
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=WAIT) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = b""
            while not (answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"}")):
                chunk = s.recv(4096)
                assert chunk, answer
                answer += chunk
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.")  # ... and nothing more
            closed = closed_within([s], BOUND + SLACK)
            assert closed, "the stalled second request's connection is still open"


def test_slow_answer_is_not_cut_by_the_header_bound(tmp_path: Path) -> None:
    """The bound is on headers only: a request whose headers arrived stays open while its
    body trickles in past the bound."""
    args = ("--no-token", "--root", str(tmp_path), "--header-timeout", "1")
    with serve_http(*args) as server:
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=WAIT) as s:
            body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
            head = (
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            s.sendall(head + body[:10])
            time.sleep(2.5)  # past the header bound
            s.sendall(body[10:])
            answer = s.recv(4096)
            assert answer.startswith(b"HTTP/1.1 "), answer


def test_a_body_that_trickles_past_its_bound_is_closed(tmp_path: Path) -> None:
    """Headers complete, then one byte of the body every half second: closed within
    `--header-timeout` + `--body-timeout` of the headers; the server answers others meanwhile."""
    args = ("--no-token", "--root", str(tmp_path), "--header-timeout", "1", "--body-timeout", "2")
    with serve_http(*args) as server:
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=WAIT) as s:
            s.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n{"
            )
            began = time.monotonic()
            closed = False
            while time.monotonic() - began < 3.0 + SLACK:
                try:
                    s.sendall(b" ")
                except OSError:
                    closed = True
                    break
                readable, _, _ = select.select([s], [], [], 0.5)
                if readable:
                    try:
                        closed = not s.recv(4096)
                    except ConnectionError:
                        closed = True
                    if closed:
                        break
            held = time.monotonic() - began
            assert closed, "the trickling body's connection is still open"
            assert held > 2.0 - 0.5  # not before the body bound
        with httpx2.Client(base_url=server.url, timeout=WAIT) as http:
            assert http.get("/healthz").status_code == 200
