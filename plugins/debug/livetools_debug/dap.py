"""A thin Debug Adapter Protocol client on the shared Content-Length framing.

DAP differs from JSON-RPC above the framing: every message has a `seq`, responses name the
request they answer in `request_seq`. lldb-vscode and dlv send `seq: 0` on every message, so
responses are matched on `request_seq` alone. Reverse requests the client cannot honour
(`runInTerminal`, `startDebugging`) are refused at once: leaving them unanswered hangs the adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from typing import Any

from livetools.wire import FramedReader, FramedWriter, WireError

EventHandler = Callable[[str, dict[str, Any]], None]

_FORMAT_VAR = re.compile(r"\{(\w+)\}")


class DapError(Exception):
    """The adapter answered a request with `success: false`; the text is its message."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(message)
        self.command = command


class DapClosed(Exception):
    """The connection to the adapter ended (it exited, crashed or sent garbage)."""


def error_text(message: dict[str, Any]) -> str:
    """The most specific text of a failed response: `body.error.format` with its variables filled
    in (delve puts the detail there), else `message`."""
    body = message.get("body") or {}
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("format"), str):
        variables = err.get("variables") or {}
        return _FORMAT_VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), err["format"])
    return str(message.get("message") or "request failed (no message)")


class DapClient:
    """One DAP connection. `request` sends and awaits; `send` sends and returns the future, for
    `launch`, whose response some adapters hold until `configurationDone`."""

    def __init__(
        self,
        reader: FramedReader,
        writer: FramedWriter,
        on_event: EventHandler,
        *,
        name: str = "adapter",
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_event = on_event
        self.name = name
        self._seq = 0
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self.closed_reason: str | None = None
        self.closed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read_loop(), name=f"dap {name}")

    async def send(
        self, command: str, arguments: dict[str, Any] | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the future resolves to its response body or raises DapError/DapClosed."""
        if self.closed.is_set():
            raise DapClosed(self.closed_reason or f"{self.name} connection is closed")
        self._seq += 1
        seq = self._seq
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        self._pending[seq] = (command, future)
        message: dict[str, Any] = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        try:
            await self._writer.write(message)
        except (OSError, RuntimeError) as exc:
            self._pending.pop(seq, None)
            self._close(f"{self.name} connection lost while sending {command}: {exc}")
            raise DapClosed(self.closed_reason or str(exc)) from None
        return future

    async def request(
        self, command: str, arguments: dict[str, Any] | None = None, *, within: float = 10.0
    ) -> dict[str, Any]:
        """Send and await the response body. Raises DapError, DapClosed or TimeoutError."""
        future = await self.send(command, arguments)
        return await wait_response(future, command, within)

    async def _read_loop(self) -> None:
        reason = f"{self.name} closed the connection"
        try:
            while True:
                message = await self._reader.read()
                if message is None:
                    break
                if isinstance(message, dict) and self._dispatch(message):
                    await self._refuse_reverse(message)
        except WireError as exc:
            reason = f"{self.name} sent an invalid message: {exc}"
        except (OSError, asyncio.IncompleteReadError) as exc:
            reason = f"{self.name} connection lost: {exc}"
        finally:
            self._close(reason)

    def _dispatch(self, message: dict[str, Any]) -> bool:
        """Settle a response or deliver an event, synchronously (no coroutine per message: it is
        on every step's path). True for a reverse request, which the read loop refuses."""
        kind = message.get("type")
        if kind == "response":
            entry = self._pending.pop(message.get("request_seq", -1), None)
            if entry is None:
                return False
            command, future = entry
            if future.done():  # its waiter gave up (timeout, cancellation)
                return False
            if message.get("success", False):
                body = message.get("body")
                future.set_result(body if isinstance(body, dict) else {})
            else:
                future.set_exception(DapError(command, error_text(message)))
        elif kind == "event":
            body = message.get("body")
            event = str(message.get("event", ""))
            # a handler bug must not kill the reader and hang every request
            with contextlib.suppress(Exception):
                self._on_event(event, body if isinstance(body, dict) else {})
        return kind == "request"

    async def _refuse_reverse(self, message: dict[str, Any]) -> None:
        self._seq += 1
        command = str(message.get("command", ""))
        reply = {
            "seq": self._seq,
            "type": "response",
            "request_seq": message.get("seq", 0),
            "command": command,
            "success": False,
            "message": f"{command} is not supported by this client",
        }
        with contextlib.suppress(OSError, RuntimeError):
            await self._writer.write(reply)

    def _close(self, reason: str) -> None:
        if self.closed.is_set():
            return
        self.closed_reason = reason
        self.closed.set()
        for command, future in self._pending.values():
            if not future.done():
                future.set_exception(DapClosed(f"{reason} (while waiting for {command})"))
        self._pending.clear()

    async def aclose(self) -> None:
        """Close the connection; bounded and idempotent."""
        self._close(f"{self.name} connection closed by us")
        self._task.cancel()
        await self._writer.aclose()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self._task, 1.0)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a failure as seen: a response may arrive after its waiter gave up."""
    if not future.cancelled():
        future.exception()


async def wait_response(
    future: asyncio.Future[dict[str, Any]], command: str, within: float
) -> dict[str, Any]:
    """Await a response future for at most `within` seconds (TimeoutError names the request).

    The future is awaited directly and a timer fails it on expiry: `wait_for(shield(...))` cost
    two extra event-loop passes per request, on every step. A response arriving after the
    timeout finds the future done and is dropped, as before."""
    if future.done():
        return future.result()
    timer = asyncio.get_running_loop().call_later(within, _expire, future, command, within)
    try:
        return await future
    finally:
        timer.cancel()


def _expire(future: asyncio.Future[Any], command: str, within: float) -> None:
    if not future.done():
        future.set_exception(TimeoutError(f"no answer to {command} within {within:g}s"))
