"""`livetools session`: one run, JSON lines on stdin and stdout.

Each input line `{"tool": NAME, "args": {...}, "id"?: any}` gets exactly one output line: the
`--json` object of its result (with the same `id`), or an error line for a line that is not such
an object. Nothing a line holds ends the session: not JSON, nested past the parser, lone
surrogates (replaced by U+FFFD on the way in, as `serve` does, and on the way out, so output
always encodes as UTF-8).

While ask_user waits, input lines go to its question instead (see question_ports.JsonLinesPort):
only an answer object answers, and a tool line sent meanwhile is refused with a
`question_error` event, not queued. With `--approve ask` a write/exec call first emits an
`approval` event, answered the same way by `{"approve": true|false}` or `{"always": true}`
(anything else: `approval_error`).

`{"status": true, "id"?: any}` answers with this run's status (what `livetools status` shows,
for the live run: servers started so far, the approval mode and the tools allowed for the rest
of the run) instead of calling a tool."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..results import json_line, scrub, scrub_json
from ..run import Run
from ..tiers import Surface
from .lines import LineReader

REQUEST_SHAPE = '{"tool": "NAME", "args": {...}}'


def emit_line(obj: dict[str, Any]) -> None:
    sys.stdout.write(json_line(obj) + "\n")
    sys.stdout.flush()


def bad_line(text: str) -> dict[str, Any]:
    return {"ok": False, "text": f"bad input line: {text}", "data": None, "images": []}


STATUS = object()  # parse_request's tool for a status line


def parse_request(line: str) -> tuple[Any, Any, dict[str, Any]]:
    """(id, tool, args) of a request line, tool STATUS for a status line; ValueError saying
    what was wrong."""
    try:
        # Lone surrogates (legal JSON, not text) become U+FFFD on the way in, as in `serve`.
        request = json.loads(line)
        if "\\u" in line:  # only an escape can make one
            request = scrub_json(request)
    except RecursionError:
        raise ValueError(f"JSON nested too deeply; expected {REQUEST_SHAPE}") from None
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc}); expected {REQUEST_SHAPE}") from None
    if not isinstance(request, dict):
        raise ValueError(f"expected an object like {REQUEST_SHAPE}")
    request_id = request.get("id")
    if request.get("status") is True and "tool" not in request:
        return request_id, STATUS, {}
    if not isinstance(request.get("tool"), str):
        raise _WithId(request_id, f'"tool" must be a tool name; expected {REQUEST_SHAPE}')
    call_args = request.get("args", {})
    if not isinstance(call_args, dict):
        raise _WithId(request_id, '"args" must be an object')
    return request_id, request["tool"], call_args


class _WithId(ValueError):
    def __init__(self, request_id: Any, text: str) -> None:
        super().__init__(text)
        self.request_id = request_id


async def session_loop(run: Run, surface: Surface, reader: LineReader) -> None:
    while True:
        line = await reader.readline()
        if line is None:
            return
        if not line.strip():
            continue
        try:
            request_id, tool, call_args = parse_request(line)
        except _WithId as exc:
            request_id, out = exc.request_id, bad_line(str(exc))
        except ValueError as exc:
            request_id, out = None, bad_line(str(exc))
        else:
            if tool is STATUS:
                out = await _status(run)
            else:
                out = (await run.call(tool, call_args, surface=surface)).to_json()
        if request_id is not None:
            out["id"] = request_id
        emit_line(out)


async def _status(run: Run) -> dict[str, Any]:
    from .status import render_status, status_report

    report = await status_report(run.host, run)
    return {"ok": True, "text": scrub(render_status(report)), "data": report, "images": []}
