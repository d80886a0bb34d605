"""The resident process: one run for one root and its options, served on a Unix socket until it
has been idle for its TTL, is told to stop, or gets SIGTERM/SIGINT; then it closes the run
(language servers, workers) within STOP_BOUND seconds and exits.

Started by `livetools resident start` (control.py) as `python -m livetools.faces.resident.server
SPEC_JSON`, in its own session (a closing terminal does not end it), stdio to its log file. The
lock file is held for its whole life: whoever can take it knows the resident is gone.

Protocol: one JSON line in, one JSON line out, then the connection closes. Requests:
`{"op": "call", "key", "tool", "args": ARGS_JSON or null, "json": bool}` answers the line
`CODE OUT_BYTES ERR_BYTES` and then that many bytes of UTF-8 stdout and stderr: what the
in-process `call` would print and exit with, raw (no second JSON escaping of a large answer, and
the client needs no json module);
`{"op": "ping"}`, `{"op": "info"}`, `{"op": "stop"}`. Anything else, a line over MAX_REQUEST,
or a peer of another uid gets `{"error": ...}`; `{"fallback": true, ...}` tells a client to run
the call itself (wrong key, or stopping)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

from ...host import Host
from ...ports import Ports
from ...results import Result, json_line
from ...run import Run
from ...tiers import Surface
from ..commands import call_arguments, render_call
from ..surface import UsageError, resolve_surface
from . import keys

MAX_REQUEST = 4 << 20  # a request line longer than this is refused
READ_TIMEOUT = 10.0  # a client that connects and says nothing is dropped after this
WRITE_TIMEOUT = 10.0  # a client that stops reading its answer is dropped after this
CALL_GRACE = 5.0  # calls running when a stop arrives get this long to finish
STOP_BOUND = 10.0  # stop to exit, at most (the run's own close is bounded inside this)
STOPPED = "the resident run stopped before this call finished; call again"


class Resident:
    def __init__(self, spec: dict[str, Any], run: Run, surface: Surface) -> None:
        self.spec = spec
        self.run = run
        self.surface = surface
        self.ttl = float(spec["ttl"])
        self.calls = 0
        self.active: set[asyncio.Task[Result]] = set()
        self.handlers: set[asyncio.Task[None]] = set()
        self.last = time.monotonic()
        self.stopping = asyncio.Event()
        self.stop_reason = ""

    def stop(self, reason: str) -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
            self.stopping.set()

    def idle(self) -> float:
        return 0.0 if self.active else time.monotonic() - self.last

    def info(self) -> dict[str, Any]:
        return {
            "root": str(self.run.root),
            "surface": keys.effective_surface(self.spec["surface"]),
            "options": self.spec["options"],
            "pid": os.getpid(),
            "idle": round(self.idle(), 1),
            "ttl": self.ttl,
            "calls": self.calls,
            "running": len(self.active),
            "key": self.spec["key"],
        }

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.handlers.add(task)
        try:
            try:
                answer = await self.answer(reader, writer)
            except (OSError, TimeoutError):
                raise
            except Exception as exc:  # a bug: the client hears of it, the resident goes on
                log(f"internal error: {exc!r}")
                answer = {"error": f"internal error of the resident: {exc!r}"}
            if "code" in answer:  # the output raw after a plain line: the client needs no json
                out = answer["stdout"].encode("utf-8", "surrogatepass")
                err = answer["stderr"].encode("utf-8", "surrogatepass")
                writer.write(b"%d %d %d\n" % (answer["code"], len(out), len(err)) + out + err)
            else:
                writer.write(json_line(answer).encode() + b"\n")
            async with asyncio.timeout(WRITE_TIMEOUT):
                await writer.drain()
        except (OSError, TimeoutError):
            pass  # the client went away (killed mid-call, or not reading): nothing to tell it
        finally:
            writer.close()
            if task is not None:
                self.handlers.discard(task)

    async def answer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> dict[str, Any]:
        refusal = peer_refusal(writer)
        if refusal is not None:
            return {"error": refusal}
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            await discard_line(reader)  # so the client reads the answer, not a reset
            return {"error": f"request longer than {MAX_REQUEST} bytes"}
        try:
            request = json.loads(line)
        except (ValueError, RecursionError):
            return {"error": "not a JSON request line"}
        if not isinstance(request, dict):
            return {"error": "not a JSON object"}
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "key": self.spec["key"], "pid": os.getpid()}
        if op == "info":
            return {"ok": True, **self.info()}
        if op == "stop":
            self.stop("stop requested")
            return {"ok": True, "pid": os.getpid()}
        if op != "call":
            return {"error": f"unknown op {op!r}"}
        if request.get("key") != self.spec["key"]:
            return {"fallback": True, "error": "not this resident's key"}
        if self.stopping.is_set():
            return {"fallback": True, "error": "stopping"}
        return await self.call(request, reader)

    async def call(
        self, request: dict[str, Any], reader: asyncio.StreamReader | None = None
    ) -> dict[str, Any]:
        tool, raw, as_json = request.get("tool"), request.get("args"), request.get("json")
        if not isinstance(tool, str) or not isinstance(raw, str | None):
            return {"error": "a call needs a tool name and ARGS_JSON as a string or null"}
        self.calls += 1
        try:
            call_args = call_arguments(raw)
        except UsageError as exc:
            return {"stdout": "", "stderr": f"livetools: {exc}\n", "code": 2}
        task = asyncio.ensure_future(self.run.call(tool, call_args, surface=self.surface))
        self.active.add(task)
        try:
            if reader is not None and await client_left(reader, task):
                task.cancel()  # as Ctrl-C would end an in-process call: nobody reads it now
            await asyncio.wait({task})
        finally:
            self.active.discard(task)
            self.last = time.monotonic()
        # run.call turns a tool's failure into a result; a cancelled call is the stop's doing
        result = Result.error(STOPPED) if task.cancelled() else task.result()
        out, code = render_call(result, bool(as_json))
        return {"stdout": out, "stderr": "", "code": code}

    async def watch_idle(self) -> None:
        tick = max(0.05, min(1.0, self.ttl / 4))
        while not self.stopping.is_set():
            if self.idle() >= self.ttl:
                self.stop(f"idle for {self.ttl:g} s")
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(tick):
                    await self.stopping.wait()


async def client_left(reader: asyncio.StreamReader, task: asyncio.Task[Result]) -> bool:
    """Wait for the call; True if the client closed its end first (killed, interrupted)."""
    while not task.done():
        eof = asyncio.ensure_future(reader.read(1 << 16))
        try:
            await asyncio.wait({task, eof}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not eof.done():
                eof.cancel()
        finished = eof.done() and not eof.cancelled()
        if finished and (eof.exception() is not None or eof.result() == b""):
            return not task.done()  # (stray bytes after the request are ignored)
    return False


async def discard_line(reader: asyncio.StreamReader) -> None:
    """Read what is left of an oversized line, at most READ_TIMEOUT seconds and 16 requests'
    worth: a client that never stops sending is dropped instead."""
    left = 16 * MAX_REQUEST
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(READ_TIMEOUT):
            while left > 0:
                chunk = await reader.read(1 << 16)
                if not chunk or b"\n" in chunk:
                    return
                left -= len(chunk)


NAMESPACES = ("mnt", "pid")


def peer_refusal(writer: asyncio.StreamWriter) -> str | None:
    """None when the peer (SO_PEERCRED) is our uid AND in our mount and pid namespaces; else
    why not. The uid alone is not enough: a sandboxed process of the same user that can see the
    socket (a careless bind) would run its calls on the host. A peer whose namespaces cannot be
    read is refused."""
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return "refused: the peer's credentials cannot be read"
    pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.getuid():
        return "refused: not this resident's user"
    for ns in NAMESPACES:
        try:
            same = os.readlink(f"/proc/{pid}/ns/{ns}") == os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            same = False  # a pid 0 (another pid namespace) or a peer gone: cannot vouch for it
        if not same:
            return f"refused: the peer is not in this resident's {ns} namespace (a sandbox?)"
    return None


def log(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {text}", flush=True)


async def serve(spec: dict[str, Any], files: dict[str, str]) -> int:
    host = Host()
    try:
        surface = resolve_surface(host, spec["surface"])
    except UsageError as exc:
        print(f"livetools: {exc}", flush=True)
        return 2
    run = await host.open_run(spec["root"], ports=Ports(), options=spec["options"])
    resident = Resident(spec, run, surface)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, resident.stop, signal.Signals(signum).name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(files["sock"])  # a dead resident's: we hold the lock now
    mask = os.umask(0o177)  # the socket is created 0600, never briefly wider
    try:
        server = await asyncio.start_unix_server(resident.handle, files["sock"], limit=MAX_REQUEST)
    finally:
        os.umask(mask)
    os.chmod(files["sock"], 0o600)
    log(f"serving {spec['root']} (surface {spec['surface']}, ttl {resident.ttl:g} s)")
    watcher = asyncio.ensure_future(resident.watch_idle())
    await resident.stopping.wait()
    started = time.monotonic()
    log(f"stopping: {resident.stop_reason}")
    # The last resort: whatever hangs below (a resource whose close ignores its bound), the
    # process is gone soon after the bound; the run's children die with it.
    last_resort = threading.Timer(STOP_BOUND + 5, os._exit, (3,))
    last_resort.daemon = True
    last_resort.start()
    server.close()  # no new connections; clients that find no socket run in-process
    with contextlib.suppress(FileNotFoundError):
        os.unlink(files["sock"])
    watcher.cancel()
    if resident.active:
        await asyncio.wait(set(resident.active), timeout=CALL_GRACE)
    try:  # cancels what still runs (its client gets STOPPED), then closes every resource
        async with asyncio.timeout(max(1.0, STOP_BOUND - 1 - (time.monotonic() - started))):
            await run.aclose()
    except TimeoutError:
        log("the run did not close in time")
    if resident.handlers:
        await asyncio.wait(set(resident.handlers), timeout=1.0)
    log(f"stopped after {resident.calls} calls")
    return 0


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    files = keys.paths(keys.state_dir(create=True), spec["key"])
    lock = os.open(files["lock"], os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log("another resident holds this key's lock: it serves, this one leaves")
        return 0
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a terminal closing is not a reason to stop
    try:
        return asyncio.run(serve(spec, files))
    finally:
        os.close(lock)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
