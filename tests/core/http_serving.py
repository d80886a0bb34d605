"""`livetools serve --http` as a subprocess for the HTTP tests: started on an ephemeral
loopback port, its URL read from the line it prints once it listens, stopped with SIGTERM."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.core.mcp_conn import WAIT, Conn
from tests.core.mcp_conn import text_of as text_of  # re-exported for the HTTP tests
from tests.support import plugin_env

LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = LISTENING.search(line)
            if found and not self.url:
                self.url = found.group(1)
                self._ready.set()
        self._ready.set()

    @property
    def log(self) -> str:
        return "".join(self.lines)


@contextlib.contextmanager
def serve_http(
    *args: str, env: dict[str, str] | None = None, bind: str = "127.0.0.1:0"
) -> Iterator[Served]:
    command = [sys.executable, "-m", "livetools.faces.cli", "serve", "--http", bind]
    proc = subprocess.Popen(
        [*command, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=plugin_env(**(env or {})),
        text=True,
    )
    served = Served(proc)
    threading.Thread(target=served._drain, daemon=True).start()
    try:
        served._ready.wait(WAIT)
        assert served.url, f"serve --http did not start:\n{served.log}"
        yield served
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def http_client(token: str | None = None, **headers: str) -> httpx2.AsyncClient:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(WAIT, read=300))


@asynccontextmanager
async def connect(
    era: str,
    url: str,
    token: str | None = None,
    elicitation: Any = None,
    http: httpx2.AsyncClient | None = None,
) -> AsyncIterator[Conn]:
    """A connected client in `era`; `http` (the caller's, e.g. with OAuth) instead of a bearer
    token."""
    conn = Conn(era)
    async with AsyncExitStack() as stack:
        if http is None:
            http = await stack.enter_async_context(http_client(token))
        transport = streamable_http_client(url, http_client=http)
        if era == "handshake":
            read, write = await stack.enter_async_context(transport)
            session = ClientSession(
                read,
                write,
                read_timeout_seconds=WAIT,
                message_handler=conn.on_message,
                elicitation_callback=elicitation,
            )
            conn.session = await stack.enter_async_context(session)
            init = await conn.session.initialize()
            assert init.protocol_version == "2025-11-25"
            assert init.capabilities.tools is not None
            assert init.capabilities.tools.list_changed is True
        else:
            client = Client(
                transport, mode="auto", read_timeout_seconds=WAIT, elicitation_callback=elicitation
            )
            conn.client = await stack.enter_async_context(client)
            assert client.protocol_version == "2026-07-28"
            conn.subscription = await stack.enter_async_context(
                client.listen(tools_list_changed=True)
            )
        yield conn
