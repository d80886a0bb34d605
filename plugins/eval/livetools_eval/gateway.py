"""A kernel behind a Jupyter Kernel Gateway or Enterprise Gateway: REST to start, interrupt and
delete it, one websocket carrying all its channels (stdin included, so `tool()` works).

The cell loop is `Kernel.execute`'s; this class only moves messages. The websocket speaks the
JSON form of the messages (no subprotocol, so the gateway never sends the binary framing unless
a message has buffers, which are decoded and dropped). Messages the kernel sends while the socket
is away are kept by the gateway for our session id, so a reconnect misses nothing. tornado is a
dependency of ipykernel and of every Jupyter server, so nothing is added to the install."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .gateway_config import ENV_TOKEN, GatewaySpec
from .kernel import ChannelClosed, Kernel, KernelStartError

CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 30.0
PING_INTERVAL = 15.0  # a gateway that vanishes without closing the socket is noticed by pings
PING_TIMEOUT = 15.0  # (tornado wants it no longer than the interval)
# The gateway's websocket handler refuses messages over tornado's default 10 MiB.
MAX_MESSAGE = 9 * 2**20
RECEIVE_LIMIT = 512 * 2**20
REATTACH_WINDOW = 3.0  # seconds of reconnect attempts after a dropped socket, mid-cell
REATTACH_PAUSE = 0.5


class GatewayError(KernelStartError):
    """A gateway request failed; `code` is the HTTP status (0: the gateway was not reached)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class GatewayKernel(Kernel):
    max_reply = MAX_MESSAGE - 4096  # room for the header around the reply's value

    def __init__(self, spec: GatewaySpec, root: Path, sandbox: Any = None) -> None:
        super().__init__(spec, root, None)  # the gateway decides where its kernels run
        self.gspec = spec
        self.kernel_id: str | None = None
        self.session_id = uuid.uuid4().hex
        self._http: Any = None
        self._ws: Any = None
        self._lost: str | None = None  # why the websocket is gone (the kernel may live)
        self._gone: str | None = None  # why the kernel itself is gone
        self._background: set[asyncio.Task[Any]] = set()
        self._attached = asyncio.Event()  # clear while the pump is reconnecting
        self._attached.set()

    # -- life --------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None

    @property
    def alive(self) -> bool:
        return (
            self._ws is not None
            and self._lost is None
            and self._gone is None
            and self._closing is None
        )

    def gone_reason(self) -> str:
        return self._gone or "the gateway no longer has it"

    def stderr_tail(self, lines: int = 15) -> str:
        return ""  # the kernel's stderr stays on the gateway's side

    async def start(self) -> None:
        t0 = time.monotonic()
        spec = self.gspec
        if spec.problem:
            raise KernelStartError(spec.problem)
        from tornado.httpclient import AsyncHTTPClient

        self._http = AsyncHTTPClient(force_instance=True, max_body_size=RECEIVE_LIMIT)
        try:
            started = await self._rest(
                "POST", "/api/kernels", {"name": spec.kernel_name}, limit=spec.start_timeout
            )
            self.kernel_id = str(started["id"])
            await self._connect(spec.start_timeout)
            await self._wait_ready(spec.start_timeout)
        except GatewayError as exc:
            unknown = exc.code >= 500 and "NoSuchKernel" in str(exc)
            message = await self._no_such_kernel() if unknown else ""
            await self.aclose()
            if message:
                raise KernelStartError(message) from None
            raise
        except BaseException:
            await self.aclose()
            raise
        self.started_in = time.monotonic() - t0

    async def _no_such_kernel(self) -> str:
        spec = self.gspec
        names = ""
        with contextlib.suppress(Exception):
            listed = await self._rest("GET", "/api/kernelspecs", limit=5.0)
            names = ", ".join(sorted(listed.get("kernelspecs") or {}))
        return (
            f"the Jupyter gateway at {spec.url} has no kernelspec {spec.kernel_name!r}"
            + (f" (it has: {names})" if names else "")
            + "; map the language to one of them with eval_gateway_kernels (run option), "
            "LIVETOOLS_EVAL_GATEWAY_KERNELS or gateway_kernels in [tool.livetools.eval]"
        )

    async def _connect(self, limit: float = CONNECT_TIMEOUT) -> None:
        from tornado.httpclient import HTTPClientError, HTTPRequest
        from tornado.websocket import websocket_connect

        spec = self.gspec
        ws_base = "ws" + spec.url[4:] if spec.url.startswith("http") else spec.url
        url = (
            f"{ws_base}/api/kernels/{quote(str(self.kernel_id))}/channels"
            f"?session_id={self.session_id}"
        )
        request = HTTPRequest(
            url,
            headers=self._headers(),
            connect_timeout=CONNECT_TIMEOUT,
            request_timeout=limit,  # the gateway may wait for a starting kernel first
        )
        try:
            ws = await websocket_connect(
                request,
                ping_interval=PING_INTERVAL,
                ping_timeout=PING_TIMEOUT,
                max_message_size=RECEIVE_LIMIT,
            )
        except HTTPClientError as exc:
            if exc.code == 599:
                raise self._unreachable(exc) from None
            raise self._http_error(exc.code, "GET", "/channels", exc) from None
        except Exception as exc:  # refused, reset, stream closed, timeout
            raise self._unreachable(exc) from None
        protocol: Any = ws.protocol
        with contextlib.suppress(Exception):
            protocol.stream.set_nodelay(True)  # each request is one small frame: send it now
        self._ws, self._lost = ws, None
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(asyncio.ensure_future(self._pump(ws)))

    async def _pump(self, ws: Any) -> None:
        why = "connection closed"
        quickack = _quickack(ws)
        try:
            while True:
                raw = await ws.read_message()
                quickack()
                if raw is None:
                    why = ws.close_reason or (
                        f"close code {ws.close_code}" if ws.close_code else "connection closed"
                    )
                    break
                self._deliver(raw)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken frame, a socket error: the same as a close
            why = f"{type(exc).__name__}: {exc}"
        if ws is not self._ws or self._closing is not None:
            return
        self._ws = None
        await self._reattach(
            f"the websocket to the Jupyter gateway at {self.gspec.url} closed ({why})"
        )

    def _deliver(self, raw: str | bytes) -> None:
        msg = decode(raw)
        if msg is None:
            return
        channel = str(msg.get("channel") or "iopub")
        if channel == "iopub" and msg["msg_type"] == "status" and not msg["parent_header"]:
            state = msg["content"].get("execution_state")
            if state in ("restarting", "dead") and self._closing is None:
                # The gateway saw the kernel die (and restarts it, fresh): state is gone.
                self._gone = "it died and the gateway restarted it"
                self._queue.put_nowait(("exit", None))
                return
        self._queue.put_nowait((channel, msg))

    async def _reattach(self, why: str) -> None:
        """A dropped socket (a proxy's timeout, a network blip): reconnect with the same session
        id for a few seconds, and the gateway replays what the kernel sent meanwhile, so a
        running cell goes on. Otherwise the cell ends "disconnected" and the next call asks
        again (`revive`)."""
        self._attached.clear()
        try:
            end = time.monotonic() + REATTACH_WINDOW
            while self._closing is None:
                try:
                    await self._rest("GET", f"/api/kernels/{quote(str(self.kernel_id))}", limit=5.0)
                    await self._connect()
                    return
                except GatewayError as exc:
                    if exc.code == 404:
                        self._gone = "the gateway no longer has it (restarted, or culled it)"
                        self._queue.put_nowait(("exit", None))
                        return
                    if exc.code or time.monotonic() > end:
                        break
                await asyncio.sleep(REATTACH_PAUSE)
            self._lost = why
            self._queue.put_nowait(("lost", why))
        finally:
            self._attached.set()

    async def revive(self) -> str | None:
        """Reconnect to the same kernel after the websocket was lost; None when the gateway no
        longer has it (the caller starts a fresh one). Raises when the gateway is unreachable,
        saying what to do."""
        with contextlib.suppress(TimeoutError):  # the pump may be reconnecting already
            await asyncio.wait_for(self._attached.wait(), REATTACH_WINDOW + 2 * CONNECT_TIMEOUT)
        if self._lost is None or self._gone is not None or self._closing is not None:
            return None
        try:
            path = f"/api/kernels/{quote(str(self.kernel_id))}"
            model = await self._rest("GET", path, limit=10.0)
        except GatewayError as exc:
            if exc.code == 404:
                self._gone = "the gateway no longer has it (restarted, or it culled the kernel)"
                self.abandoned = None  # its cell went with it
                return None
            raise
        if self._ws is not None:
            self._ws.close()
        await self._connect()
        kept = []  # drop the old socket's "lost"; replayed messages may already follow it
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event[0] != "lost":
                kept.append(event)
        for event in kept:
            self._queue.put_nowait(event)
        if self.abandoned is not None and model.get("execution_state") == "idle":
            self.abandoned = None
        elif self.abandoned is not None:
            self.interrupt()  # the cell of the lost call may still run; settle_abandoned waits
        return (
            f"note: reconnected to the {self.spec.language} kernel on the Jupyter gateway at "
            f"{self.gspec.url}; its state (variables, imports) is kept."
        )

    # -- sending -----------------------------------------------------------------------------

    def _message(self, kind: str, content: dict[str, Any], channel: str, parent: Any = None) -> Any:
        header = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": kind,
            "username": "livetools",
            "session": self.session_id,
            "date": datetime.now(UTC).isoformat(),
            "version": "5.3",
        }
        return {
            "header": header,
            "msg_id": header["msg_id"],
            "msg_type": kind,
            "parent_header": parent or {},
            "metadata": {},
            "content": content,
            "buffers": [],
            "channel": channel,
        }

    def _send(self, msg: dict[str, Any]) -> str:
        from tornado.websocket import WebSocketClosedError

        if self._ws is None or self._lost is not None:
            raise ChannelClosed(self._lost or "not connected to the Jupyter gateway")
        try:
            future = self._ws.write_message(json.dumps(msg, default=str))
        except WebSocketClosedError:
            raise ChannelClosed(
                f"the websocket to the Jupyter gateway at {self.gspec.url} is closed"
            ) from None
        future.add_done_callback(lambda f: f.exception())  # a late failure shows up as "lost"
        return str(msg["header"]["msg_id"])

    def _send_kernel_info(self) -> str:
        return self._send(self._message("kernel_info_request", {}, "shell"))

    def _send_execute(self, code: str, silent: bool) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": True,
            "stop_on_error": False,
        }
        return self._send(self._message("execute_request", content, "shell"))

    def reply_input(self, request: dict[str, Any], value: str) -> None:
        self._send(self._message("input_reply", {"value": value}, "stdin", request["header"]))

    def _unavailable(self) -> Any:
        from .kernel import Outcome

        if self._gone is None and self._lost is not None:
            return Outcome("disconnected", stderr=self._lost, started=False)
        return Outcome("died", started=False)

    def interrupt(self) -> None:
        """The gateway interrupts as the kernelspec says (signal or message)."""
        if self.kernel_id is None or self._closing is not None or self._gone is not None:
            return
        path = f"/api/kernels/{quote(self.kernel_id)}/interrupt"
        task = asyncio.ensure_future(self._rest("POST", path, {}, limit=10.0))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    # -- REST --------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.gspec.token:
            headers["Authorization"] = f"token {self.gspec.token}"
        return headers

    async def _rest(
        self, method: str, path: str, body: Any = None, *, limit: float = REQUEST_TIMEOUT
    ) -> Any:
        from tornado.httpclient import HTTPClientError

        if self._http is None:
            raise GatewayError("the gateway client is closed")
        try:
            response = await self._http.fetch(
                self.gspec.url + path,
                method=method,
                headers=self._headers(),
                body=None if body is None else json.dumps(body),
                connect_timeout=CONNECT_TIMEOUT,
                request_timeout=limit,
                allow_nonstandard_methods=True,
            )
        except HTTPClientError as exc:
            if exc.code == 599:  # tornado: no HTTP answer (timeout, reset)
                raise self._unreachable(exc) from None
            raise self._http_error(exc.code, method, path, exc) from None
        except Exception as exc:  # refused, reset, timeout
            raise self._unreachable(exc) from None
        return json.loads(response.body) if response.body else None

    def _unreachable(self, exc: BaseException) -> GatewayError:
        spec = self.gspec
        return GatewayError(
            f"cannot reach the Jupyter gateway at {spec.url} ({type(exc).__name__}: {exc}); "
            f"start it or fix the URL ({spec.url_from}), then call again"
        )

    def _http_error(self, code: int, method: str, path: str, exc: Any) -> GatewayError:
        spec = self.gspec
        if code in (401, 403):
            sent = f"the token from {spec.token_from}" if spec.token else "no token"
            return GatewayError(
                f"the Jupyter gateway at {spec.url} refused {sent} (HTTP {code}); set the "
                f"gateway's token in eval_gateway_token (run option), {ENV_TOKEN} or "
                "gateway_token in [tool.livetools.eval]",
                code,
            )
        detail = ""
        response = getattr(exc, "response", None)
        if response is not None and response.body:
            with contextlib.suppress(ValueError, AttributeError):
                answer = json.loads(response.body)
                trace = str(answer.get("traceback") or "").strip().splitlines()
                detail = trace[-1] if trace else str(answer.get("message") or "")
        return GatewayError(
            f"the Jupyter gateway at {spec.url} answered {method} {path} with HTTP {code}"
            + (f": {detail}" if detail else ""),
            code,
        )

    # -- closing -----------------------------------------------------------------------------

    async def _close(self) -> None:
        for task in (*self._tasks, *self._background):
            task.cancel()
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.close()
        if self.kernel_id is not None and self._http is not None:
            with contextlib.suppress(Exception):
                await self._rest("DELETE", f"/api/kernels/{quote(self.kernel_id)}", limit=5.0)
        if self._http is not None:
            self._http.close()
            self._http = None


def _quickack(ws: Any) -> Any:
    """Acknowledge every frame at once (Linux TCP_QUICKACK, which the kernel clears after each
    ACK). The gateway's socket has Nagle on: its second message of a cell waits for our ACK of
    the first, which Linux delays ~40 ms; measured 1+1 ~52 ms → ~11 ms through a gateway."""
    option = getattr(socket, "TCP_QUICKACK", None)
    sock = getattr(getattr(getattr(ws, "protocol", None), "stream", None), "socket", None)
    if option is None or sock is None:
        return lambda: None

    def ack() -> None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)

    return ack


def decode(raw: str | bytes) -> dict[str, Any] | None:
    """A websocket frame as a message dict: JSON text, or jupyter_server's binary framing (a
    count, offsets, then the JSON message first and its buffers, dropped here)."""
    try:
        if isinstance(raw, bytes):
            count = int.from_bytes(raw[:4], "big")
            offsets = [int.from_bytes(raw[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(count)]
            end = offsets[1] if count > 1 else len(raw)
            msg = json.loads(raw[offsets[0] : end])
        else:
            msg = json.loads(raw)
    except (ValueError, IndexError):
        return None
    if not isinstance(msg, dict):
        return None
    header = msg.get("header") or {}
    msg.setdefault("msg_type", header.get("msg_type", ""))
    msg["parent_header"] = msg.get("parent_header") or {}
    msg["content"] = msg.get("content") or {}
    return msg
