"""Bounds on reading a request. uvicorn times out only a kept-alive connection that sends
nothing after a response; one that sends part of its headers and stalls (slowloris) was held as
long as the client liked: 200 such connections were all still open after 60 s, each holding a
file descriptor and parser state. Here every connection must finish a request's headers within
`seconds` of its start, and of the end of each previous response, or it is closed. A body that
trickles in gets `body_seconds` more, counted from when the header bound saw its request
begin (so at most `seconds + body_seconds` after its headers started): a slow upload is served,
one byte a minute is not. Long answers (an SSE stream, a slow tool call) are not bounded: the
timers only look at whether a new request began, and whether its body is still arriving.
"""

from __future__ import annotations

import asyncio
from typing import Any

DEFAULT_HEADER_TIMEOUT = 20.0
DEFAULT_BODY_TIMEOUT = 120.0


def protocol_class(
    seconds: float, body_seconds: float = DEFAULT_BODY_TIMEOUT
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (httptools or h11, as uvicorn picks) with the deadlines."""
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
            """No request's headers arrived since the timer was set: close. One did and its
            body is still arriving: it has `body_seconds` more."""
            self._deadline = None
            if self.transport.is_closing():
                return
            if self.cycle is before:
                self.transport.close()
            elif getattr(self.cycle, "more_body", False):
                self._deadline = self.loop.call_later(body_seconds, self._body_expire, self.cycle)

        def _body_expire(self, cycle: object) -> None:
            self._deadline = None
            still = self.cycle is cycle and getattr(cycle, "more_body", False)
            if still and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline
