"""A bound on reading a request's headers. uvicorn times out only a kept-alive connection that
sends nothing after a response; one that sends part of its headers and stalls (slowloris) was
held as long as the client liked: 200 such connections were all still open after 60 s, each
holding a file descriptor and parser state. Here every connection must finish a request's
headers within `seconds` of its start, and of the end of each previous response, or it is
closed. Streamed bodies and long answers (an SSE stream, a slow tool call) are not bounded:
the timer only looks at whether a new request began since it was set."""

from __future__ import annotations

import asyncio
from typing import Any

DEFAULT_HEADER_TIMEOUT = 20.0


def protocol_class(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (httptools or h11, as uvicorn picks) with the deadline."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol

    class HeaderDeadline(base):  # type: ignore[misc]  # a class uvicorn picks at import
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm(None)

        def on_response_complete(self) -> None:
            done = self.cycle  # the next request may be parsed inside super(): not this one
            super().on_response_complete()
            self._arm(done)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, before: object) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._deadline = self.loop.call_later(seconds, self._expire, before)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self, before: object) -> None:
            """No request's headers arrived since the timer was set: close."""
            self._deadline = None
            if self.cycle is before and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline
