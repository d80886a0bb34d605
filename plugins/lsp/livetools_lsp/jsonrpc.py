"""A thin JSON-RPC 2.0 endpoint over the shared Content-Length wire.

Our own rather than pygls's client: typed decoding of server answers hangs `initialize` on some
cattrs versions, and a client must answer every server->client request (a MethodNotFound reply
crashes basedpyright). Here messages stay plain dicts, every request is bounded, a timed-out
request is cancelled on the server, and a dead or garbled stream fails every pending request at
once with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from livetools.wire import FramedReader, FramedWriter, WireError

RequestHandler = Callable[[str, Any], Awaitable[Any]]
NotificationHandler = Callable[[str, Any], None]

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
CONTENT_MODIFIED = -32801
REQUEST_CANCELLED = -32800


class RpcError(Exception):
    """The server answered a request with an error object."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class RpcTimeout(Exception):
    """The server did not answer within the bound (the request was cancelled on its side)."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"no answer to {method} within {timeout:g}s")
        self.method = method
        self.timeout = timeout


class ConnectionLost(Exception):
    """The stream ended or carried something that is not JSON-RPC; the endpoint is unusable."""


class Endpoint:
    """One JSON-RPC connection. `on_request` answers server->client requests (its exception
    becomes an error reply), `on_notification` sees notifications, `on_lost` is called once with
    the reason when the stream ends."""

    def __init__(
        self,
        reader: FramedReader,
        writer: FramedWriter,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        on_lost: Callable[[str], None] | None = None,
        trace: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_lost = on_lost
        self._trace = trace
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self.lost: str | None = None

    def start(self) -> None:
        self._loop_task = asyncio.get_running_loop().create_task(self._read_loop())

    async def request(self, method: str, params: Any, bound: float) -> Any:
        """Send a request and wait for its answer, at most `bound` seconds."""
        if self.lost is not None:
            raise ConnectionLost(self.lost)
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, future)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            async with asyncio.timeout(bound):
                return await asyncio.shield(future)
        except TimeoutError:
            if not future.done():
                with contextlib.suppress(ConnectionLost):
                    await self.notify("$/cancelRequest", {"id": msg_id})
                raise RpcTimeout(method, bound) from None
            return future.result()
        except asyncio.CancelledError:
            # The caller gave up (a dropped HTTP stream, a cancelled call): tell the server, so
            # it stops computing an answer nobody reads. Sent from a task: this one is cancelled.
            if not future.done() and self.lost is None:
                task = asyncio.get_running_loop().create_task(self._cancel_quietly(msg_id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            raise
        finally:
            self._pending.pop(msg_id, None)
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                # Nobody awaits it any more (the send failed as the server exited and the read
                # loop failed it meanwhile): retrieved here, else asyncio reports "exception was
                # never retrieved" into whatever runs the loop.
                future.exception()

    async def _cancel_quietly(self, msg_id: int) -> None:
        with contextlib.suppress(ConnectionLost):
            await self.notify("$/cancelRequest", {"id": msg_id})

    async def notify(self, method: str, params: Any) -> None:
        if self.lost is not None:
            raise ConnectionLost(self.lost)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def _send(self, message: dict[str, Any]) -> None:
        if self._trace is not None:
            self._trace("->", message)
        try:
            await self._writer.write(message)
        except (OSError, RuntimeError) as exc:  # broken pipe, closed transport
            self._fail(f"cannot write to the server: {exc}")
            raise ConnectionLost(self.lost or str(exc)) from None

    async def _read_loop(self) -> None:
        reason = "the server closed its output"
        try:
            while True:
                message = await self._reader.read()
                if message is None:
                    break
                for item in message if isinstance(message, list) else [message]:
                    if isinstance(item, dict):
                        self._dispatch(item)
        except WireError as exc:
            reason = f"the server wrote invalid output: {exc}"
        except (OSError, ValueError) as exc:
            reason = f"reading from the server failed: {exc}"
        except asyncio.CancelledError:
            reason = "the connection was closed"
            raise
        finally:
            self._fail(reason)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if self._trace is not None:
            self._trace("<-", message)
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            if "id" in message:
                task = asyncio.get_running_loop().create_task(
                    self._answer(message["id"], method, params)
                )
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            else:
                with contextlib.suppress(Exception):
                    self._on_notification(method, params)
            return
        msg_id = message.get("id")
        entry = self._pending.get(msg_id) if isinstance(msg_id, int) else None
        if entry is None:
            return  # an answer to a request we stopped waiting for
        method_name, future = entry
        if future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcError(
                    method_name,
                    int(error.get("code", INTERNAL_ERROR)),
                    str(error.get("message", "")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    async def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        try:
            reply["result"] = await self._on_request(method, params)
        except RpcError as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        except Exception as exc:
            reply["error"] = {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}
        with contextlib.suppress(ConnectionLost):
            await self._send(reply)

    def _fail(self, reason: str) -> None:
        if self.lost is not None:
            return
        self.lost = reason
        for _method, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(ConnectionLost(reason))
        if self._on_lost is not None:
            with contextlib.suppress(Exception):
                self._on_lost(reason)

    async def aclose(self) -> None:
        self._fail("the connection was closed")
        for task in [*self._tasks, *([self._loop_task] if self._loop_task else [])]:
            task.cancel()
        with contextlib.suppress(Exception):
            await self._writer.aclose()
