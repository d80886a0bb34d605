"""The stdio transport of `livetools serve`: every input line gets exactly one answer.

The SDK's own stdio transport hands a line it cannot parse to the server as an exception, which
answers nothing, and its writer dies on a lone surrogate (legal JSON, not UTF-8): the client then
waits forever. Here the face parses each line itself: a line that is not JSON (or nests past the
parser) is answered with -32700, a JSON value that is no JSON-RPC message with -32600 (with its
id when it has one), and lone surrogates are replaced before the SDK sees the message. Output is
written so that encoding cannot fail.

While serving, fd 0 points at the null device and fd 1 at stderr, as the SDK's transport does, so
a child that reads stdin or a plugin that prints cannot touch the protocol pipe.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, BinaryIO

from ...results import json_line, scrub_json
from ..lines import LineReader

if TYPE_CHECKING:
    from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream
    from mcp.shared.message import SessionMessage

log = logging.getLogger("livetools.serve")

ECHO_LIMIT = 200  # characters of a bad line quoted back


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of `fd` for the wire; `fd` itself then points at `diversion`."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(diversion, fd)
    return private


def error_response(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _request_id(obj: Any) -> Any:
    """The id of something that looks like a request, if it is a valid JSON-RPC id."""
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


def _call_params_problem(obj: Any) -> str | None:
    """What is wrong with a `tools/call`'s params, in words (the SDK's -32602 names nothing)."""
    if not isinstance(obj, dict) or obj.get("method") != "tools/call" or "id" not in obj:
        return None
    params = obj.get("params")
    shape = 'expected {"name": TOOL, "arguments": {...}}'
    if not isinstance(params, dict):
        return f"Invalid params: params must be an object; {shape}"
    if not isinstance(params.get("name"), str):
        return f"Invalid params: params.name must be a tool name; {shape}"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return f"Invalid params: params.arguments must be an object, not {type(arguments).__name__}"
    return None


def triage(line: str) -> tuple[Any, dict[str, Any] | None]:
    """(the JSON-RPC message to hand the SDK, or None; the error answer to write, or None)."""
    import mcp_types as types
    from pydantic import ValidationError

    text = line.strip()
    if not text:
        return None, None
    try:
        obj = json.loads(text)
        # One walk that also replaces lone surrogates everywhere (keys included).
        obj = scrub_json(obj)
    except RecursionError:
        return None, error_response(types.PARSE_ERROR, "Parse error: JSON nested too deeply")
    except ValueError as exc:
        return None, error_response(
            types.PARSE_ERROR, f"Parse error: {exc}; the line began {text[:ECHO_LIMIT]!r}"
        )
    problem = _call_params_problem(obj)
    if problem is not None:
        return None, error_response(types.INVALID_PARAMS, problem, _request_id(obj))
    try:
        return types.jsonrpc_message_adapter.validate_python(obj, by_name=False), None
    except (ValidationError, RecursionError) as exc:
        is_request = isinstance(obj, dict) and "method" in obj and "id" in obj
        if isinstance(obj, dict) and "id" not in obj and "method" in obj:
            log.warning("dropped an invalid notification: %s", text[:ECHO_LIMIT])
            return None, None  # a notification gets no answer, even a bad one
        if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
            log.warning("dropped an invalid response: %s", text[:ECHO_LIMIT])
            return None, None  # nor does a response
        detail = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}"
            for e in (exc.errors(include_url=False)[:3] if isinstance(exc, ValidationError) else [])
        )
        what = "not a valid JSON-RPC request" if is_request else "not a JSON-RPC 2.0 message"
        message = f"Invalid Request: {what}" + (f" ({detail[:ECHO_LIMIT]})" if detail else "")
        return None, error_response(types.INVALID_REQUEST, message, _request_id(obj))


def _dump(message: SessionMessage) -> str:
    try:
        return message.message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception:  # a str the tool produced that UTF-8 cannot hold, or the like
        return json_line(message.message.model_dump(by_alias=True, exclude_unset=True))


@contextlib.asynccontextmanager
async def stdio_transport() -> AsyncIterator[
    tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]
]:
    """(read stream, write stream) for `Server.run`, over the process's stdin and stdout."""
    import anyio
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    devnull = os.open(os.devnull, os.O_RDONLY)
    wire_in = _claim(0, devnull)
    os.close(devnull)
    wire_out = _claim(1, 2)
    stdin = io.TextIOWrapper(
        os.fdopen(wire_in, "rb", closefd=False), encoding="utf-8", errors="replace"
    )
    stdout: BinaryIO = os.fdopen(wire_out, "wb", closefd=False)
    lock = anyio.Lock()

    def write_sync(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    gone = anyio.Event()

    async def write(text: str) -> None:
        if gone.is_set():
            return
        data = (text + "\n").encode("utf-8", "replace")
        async with lock:
            try:
                await anyio.to_thread.run_sync(write_sync, data)
            except (OSError, ValueError):  # the client closed its end: stop serving, quietly
                log.info("the client closed stdout; stopping")
                gone.set()
                tasks.cancel_scope.cancel()

    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def reader() -> None:
        lines = LineReader(stdin)
        async with read_writer:
            while (line := await lines.readline()) is not None:
                message, answer = triage(line)
                if answer is not None:
                    await write(json_line(answer))
                if message is not None:
                    await read_writer.send(SessionMessage(message))

    async def writer() -> None:
        async with write_reader:
            async for message in write_reader:
                await write(_dump(message))

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                tasks.cancel_scope.cancel()
    finally:
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        with contextlib.suppress(OSError, ValueError):
            stdout.flush()
