"""The `debug` tool: one operation per call, against the conversation's one session."""

from __future__ import annotations

import os
import re
import stat
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from livetools import (
    CallContext,
    Result,
    Tier,
    Tool,
    ToolError,
    cap_items,
    cap_text,
    cap_value,
    relpath,
    resolve_path,
)
from livetools.approvals import asks_only_if
from livetools.files import check_regular

from . import rust
from .breakpoints import BreakSpec, Want, declared_filters, wants_of
from .paths import shown
from .session import MAX_FETCH_CHILDREN, Breakpoint, Frame, Outcome, RefInfo, Session, Stop
from .supervisor import DebugSupervisor, LaunchAsk

STACK_CAP = 30
CHILDREN_CAP = 50
VALUE_CAP = 400
THREADS_CAP = 50
OUTPUT_CAP = 4000
RESUME_OUTPUT_CAP = 1500

Op = Literal[
    "adapters",
    "status",
    "breakpoints",
    "exceptions",
    "launch",
    "restart",
    "attach",
    "continue",
    "run_to",
    "pause",
    "step_over",
    "step_in",
    "step_out",
    "threads",
    "stack",
    "scopes",
    "variables",
    "evaluate",
    "set",
    "output",
    "terminate",
]

DESCRIPTION = (
    "DAP debugger (Python, C/C++/Rust, Go); one session per conversation, 30 min TTL. "
    "breakpoints(file,lines; [] clears), exceptions(filters) work before launch. "
    "Resuming ops return at the next stop, the exit or 'still running'. run_to: file,lines=[N]. "
    "set: expression 'x = 1'. adapters: what works here."
)


class LaunchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    module: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    stop_on_entry: bool | None = None
    just_my_code: bool | None = None


class DebugArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: Op
    file: str | None = Field(None, description="source file")
    lines: list[int | BreakSpec | str] | None = Field(
        None, description="lines, {line,condition,hit_count,log_message} or function names"
    )
    filters: list[str] | None = Field(None, description="exceptions: filter names")
    just_my_code: bool | None = None  # options.just_my_code, still taken here (not shown)
    program: str | None = Field(None, description="launch: script, binary or Go package")
    args: list[str] | None = Field(None, description="launch: arguments")
    adapter: str | None = Field(None, description="launch/attach: adapter id")
    port: int | None = Field(None, description="attach: localhost port")
    pid: int | None = None
    options: LaunchOptions | None = Field(
        None, description="launch: {module,env,cwd,stop_on_entry,just_my_code}"
    )
    thread_id: int | None = None
    frame_id: int | None = None
    reference: int | None = Field(None, description="from scopes/variables")
    expression: str | None = None
    start: int | None = Field(None, description="page start (output: <0 = tail)")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Every field but `op` is optional: `anyOf [T, null]` and `default: null` cost bytes on
        every request and tell the model nothing, so they are folded into plain types."""
        schema = super().model_json_schema(*args, **kwargs)
        for prop in schema.get("properties", {}).values():
            options = prop.pop("anyOf", None)
            if options:
                prop.update(next(o for o in options if o.get("type") != "null"))
            if prop.get("default", 0) is None:
                del prop["default"]
        # A breakpoint object's keys are in the description: its own schema cost 230 bytes.
        schema["properties"]["lines"]["items"] = {"type": ["integer", "object", "string"]}
        schema["properties"]["options"] = {
            "description": schema["properties"]["options"]["description"],
            "type": "object",
        }
        schema["properties"].pop("just_my_code")  # moved into options (cost 68 bytes here)
        schema.pop("$defs", None)
        return schema


# -- formatting ----------------------------------------------------------------------------------


def _where(root: Path, frame: Frame | None) -> str:
    if frame is None:
        return "(no frame)"
    line = f":{frame.line}" if frame.line else ""
    place = f"{shown(root, frame.path)}{line}" if frame.path else "(no source)"
    return f"{place} in {frame.name}"


_SOURCES: OrderedDict[str, tuple[tuple[int, int, int], list[str]]] = OrderedDict()
SOURCE_BUDGET = 8 << 20  # bytes of source kept across files; least recently shown go first
SOURCE_FILE_MAX = 1 << 20  # a larger file is read up to the line on every stop, as before


def _file_line(path: str, number: int) -> str | None:
    """Line `number` of a file, or None. Every stop shows its source line, and reading it was an
    open and a read of the file per step (~40 us of a 1.5 ms dlv step), so a file's lines are
    kept and re-read when its stat (mtime, size, inode) changes: one stat per stop."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None  # a FIFO would block the loop
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        kept = _SOURCES.get(path)
        if kept is not None and kept[0] == key:
            _SOURCES.move_to_end(path)
            lines = kept[1]
        elif st.st_size <= SOURCE_FILE_MAX:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")  # newlines are already universal
            if lines and not lines[-1]:
                lines.pop()  # the final newline ends the last line, it starts none
            _SOURCES[path] = (key, lines)
            _SOURCES.move_to_end(path)
            while sum(k[1] for k, _ in _SOURCES.values()) > SOURCE_BUDGET:
                _SOURCES.popitem(last=False)
        else:
            with open(path, encoding="utf-8", errors="replace") as f:
                return next((text for at, text in enumerate(f, 1) if at == number), None)
    except OSError:
        return None
    return lines[number - 1] if 0 < number <= len(lines) else None


def _source_line(frame: Frame | None) -> str | None:
    if frame is None or not frame.path or not frame.line:
        return None
    text = _file_line(frame.path, frame.line)
    if text is None:
        return None
    return f"  {frame.line} | {cap_value(text.rstrip(), 200)}"


def format_others(others: list[Stop]) -> list[str]:
    """'also stopped: thread 2, 3 (breakpoint)': stops of other threads are never dropped."""
    if not others:
        return []
    groups: dict[str, list[str]] = {}
    for s in others:
        groups.setdefault(s.reason, []).append(str(s.thread_id))
    parts = [f"thread {', '.join(ids)} ({why})" for why, ids in groups.items()]
    return ["also stopped: " + "; ".join(parts) + " (thread_id=N to inspect one)"]


def format_stop(root: Path, stop: Stop) -> list[str]:
    reason = stop.reason
    detail = stop.exception or stop.text or stop.description
    if detail and detail != reason:
        reason = f"{reason} ({cap_value(detail, VALUE_CAP)})"
    lines = [f"stopped: {reason}, thread {stop.thread_id}, at {_where(root, stop.frame)}"]
    if stop.frame is not None:
        lines[0] += f" [frame {stop.frame.id}]"
    source = _source_line(stop.frame)
    if source:
        lines.append(source)
    if stop.project_frame is not None:
        lines.append(
            f"first frame in the project: {_where(root, stop.project_frame)} "
            f"[frame {stop.project_frame.id}]"
        )
        source = _source_line(stop.project_frame)
        if source:
            lines.append(source)
    return lines


def frame_data(root: Path, frame: Frame | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    path = shown(root, frame.path) if frame.path else None
    return {"id": frame.id, "name": frame.name, "path": path, "line": frame.line}


def stop_data(root: Path, stop: Stop | None) -> dict[str, Any] | None:
    if stop is None:
        return None
    return {
        "reason": stop.reason,
        "text": stop.exception or stop.text or stop.description,
        "thread_id": stop.thread_id,
        "frame": frame_data(root, stop.frame),
        "project_frame": frame_data(root, stop.project_frame),
    }


def format_breakpoints(root: Path, path: Path, states: list[Breakpoint]) -> list[str]:
    rel = relpath(root, path)
    out = []
    for bp in states:
        if bp.pending:
            text = f"{rel}:{bp.line}{bp.label} pending (sent at launch)"
        elif bp.verified and bp.resolved not in (None, bp.line):
            text = f"{rel}:{bp.line}{bp.label} -> resolved to line {bp.resolved} (moved)"
        elif bp.verified:
            text = f"{rel}:{bp.line}{bp.label} verified"
        else:
            text = f"{rel}:{bp.line}{bp.label} unverified"
            if bp.resolved not in (None, bp.line):
                text += f" (adapter line {bp.resolved})"
        if bp.message:
            text += f": {cap_value(bp.message, VALUE_CAP)}"
        out.append(text)
    return out


def breakpoint_data(root: Path, path: Path, states: list[Breakpoint]) -> list[dict[str, Any]]:
    return [
        {
            "file": relpath(root, path),
            "line": bp.line,
            "verified": None if bp.pending else bp.verified,
            "resolved_line": bp.resolved,
            "message": bp.message,
        }
        for bp in states
    ]


def outcome_result(
    sup: DebugSupervisor,
    session: Session,
    outcome: Outcome,
    head: list[str],
    waited: float,
    *,
    pausing: bool = False,
) -> Result:
    root = sup.root
    lines = list(head)
    if outcome.kind == "stopped" and session.stop is not None:
        lines += format_stop(root, session.stop)
        lines += format_others(session.others())
    elif outcome.kind == "running" and pausing:
        lines.append(
            f"pause sent, but no stop reported within {waited:g}s (a loaded machine, or a thread "
            "in native code); `status` shows the stop when it comes, `pause` asks again"
        )
    elif outcome.kind == "running":
        lines.append(
            f"still running after {waited:g}s (no breakpoint hit yet); the session stays usable: "
            "`pause` to stop it, `status` to check, `output` to read what it printed"
        )
    elif outcome.kind == "exited":
        lines.append(f"exited with {session.exit_text()}; the session is over")
    else:
        lines.append(session.describe_end())
    if outcome.note:
        lines.append(outcome.note)
    if outcome.output:
        lines.append("output:")
        shown = session.shown(outcome.output).rstrip("\n")
        lines.append(cap_text(shown, RESUME_OUTPUT_CAP, tail=RESUME_OUTPUT_CAP - 300))
    data = {
        "state": session.state,
        "outcome": outcome.kind,
        "stop": stop_data(root, session.stop) if outcome.kind == "stopped" else None,
        "exit_code": session.exit_code if outcome.kind == "exited" else None,
        "also_stopped": [{"thread_id": o.thread_id, "reason": o.reason} for o in session.others()]
        if outcome.kind == "stopped"
        else [],
        "resumed_uninspected": outcome.resumed,
    }
    return Result("\n".join(lines), data=data)


# -- operations ----------------------------------------------------------------------------------

Handler = Callable[[DebugSupervisor, DebugArgs], Awaitable[Result]]


def _need(value: Any, op: str, name: str, hint: str) -> Any:
    if value is None:
        raise ToolError(f"{op} needs {name}: {hint}")
    return value


async def op_adapters(sup: DebugSupervisor, args: DebugArgs) -> Result:
    start = resolve_path(sup.root, args.program, must_exist=True) if args.program else sup.root
    found = await sup.detect_all(start)
    lines = []
    for u in found:
        if u.usable:
            where = relpath(sup.root, u.detection.root) if u.detection.root else "."
            lines.append(f"{u.adapter.id}: usable ({u.adapter.description}; project {where})")
        else:
            lines.append(f"{u.adapter.id}: not usable: {u.reason}")
    data = [{"id": u.adapter.id, "usable": u.usable, "reason": u.reason} for u in found]
    if sup.sandbox is not None:
        lines.append(f"(looked up and probed inside sandbox {sup.describe_sandbox()})")
    return Result("\n".join(lines), data=data)


async def op_status(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = sup.session
    bps = [
        line
        for path, states in _breakpoint_view(sup).items()
        for line in (format_breakpoints(sup.root, path, states) if states else [])
    ]
    bps += format_functions(sup.root, _function_view(sup))
    if session is None:
        lines = ["no debug session; `launch` a program or `attach` to a port"]
        data: dict[str, Any] = {"state": None}
    else:
        if not session.live:
            await session.settled()
        head = f"{session.adapter.id} session ({session.request} {session.target}): {session.state}"
        lines = [head]
        if session.state == "stopped":
            session.unseen = False
            try:
                stop = await session.describe_stop()
            except ToolError as exc:  # a wedged adapter: say so, the state is still known
                stop = session.stop
                lines.append(f"could not read where it stopped: {exc}")
            if stop is not None:
                lines += format_stop(sup.root, stop)
                lines += format_others(session.others())
        elif session.state == "running":
            lines.append("running; `pause` to stop it")
        elif not session.live:
            lines.append(session.describe_end())
        left = sup.ttl_left()
        if left is not None:
            lines.append(f"TTL: {_mmss(left)} left (of {_mmss(sup.ttl)})")
        data = {
            "state": session.state,
            "adapter": session.adapter.id,
            "stop": stop_data(sup.root, session.stop) if session.state == "stopped" else None,
            "exit_code": session.exit_code,
            "ttl_left": left,
        }
    lines.append("breakpoints: " + ("; ".join(bps) if bps else "none"))
    if session is not None and session.live:
        active = ", ".join(session.filters or []) or "none"
        has = declared_filters(session.capabilities)
        offered = ", ".join(f"{k} ({v})" for k, v in has.items()) or "none declared"
        lines.append(f"exception filters: {active}; {session.adapter.id} has: {offered}")
    elif sup.filters is not None:
        lines.append(f"exception filters: {', '.join(sup.filters) or 'none'} (at launch)")
    sandbox = sup.describe_sandbox()
    if sandbox is not None:
        lines.append(f"sandbox: {sandbox} (the adapter and the debuggee run there)")
    data["sandbox"] = sandbox
    return Result("\n".join(lines), data=data)


def _in_sandbox(sup: DebugSupervisor) -> str:
    sandbox = sup.sandbox
    return "" if sandbox is None else f" inside sandbox {sandbox.name}"


def _mmss(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def _breakpoint_view(sup: DebugSupervisor) -> dict[Path, list[Breakpoint]]:
    """Adapter answers while a session lives, else the lines asked for."""
    session = sup.session
    view: dict[Path, list[Breakpoint]] = {}
    for path, wants in sup.breakpoints.items():
        if session is not None and session.live and path in session.breakpoints:
            view[path] = session.breakpoints[path]
        else:
            view[path] = [Breakpoint(w.line, w.label(), pending=True) for w in wants]
    return view


def _function_view(sup: DebugSupervisor) -> list[Breakpoint]:
    session = sup.session
    if session is not None and session.live and session.client is not None:
        return session.functions
    return [Breakpoint(0, function=n, pending=True) for n in sup.functions]


async def op_breakpoints(sup: DebugSupervisor, args: DebugArgs) -> Result:
    entries = args.lines
    names = [x for x in entries or [] if isinstance(x, str)]
    for i, x in enumerate(entries or []):
        if isinstance(x, str) and not x.strip():
            raise ToolError(f"lines[{i}] is an empty function name")
    if args.file is None:
        if entries is None:
            return await op_status(sup, args)
        if len(names) < len(entries):
            raise ToolError("breakpoints needs file together with line numbers")
        return await _function_breakpoints(sup, names)  # [] clears them
    lines = _need(entries, "breakpoints", "lines", "a list of 1-based lines; [] clears the file")
    path = resolve_path(sup.root, args.file, must_exist=True)
    if not path.is_file():
        raise ToolError(f"{relpath(sup.root, path)} is not a file")
    numbers = [x for x in lines if not isinstance(x, str)]
    if names and not numbers:  # function names only: the file's lines stay as they are
        return await _function_breakpoints(sup, names)
    result = await _line_breakpoints(sup, path, wants_of(numbers))
    if names:
        functions = await _function_breakpoints(sup, names)
        result = Result(f"{result.text}\n{functions.text}", data=[*result.data, *functions.data])
    return result


async def _line_breakpoints(sup: DebugSupervisor, path: Path, wanted: list[Want]) -> Result:
    states = await sup.set_breakpoints(path, wanted)
    rel = relpath(sup.root, path)
    if not wanted:
        return Result(f"cleared breakpoints in {rel}", data=[])
    if states is None:
        return Result(
            f"{rel}: lines {', '.join(f'{w.line}{w.label()}' for w in wanted)} pending (sent at "
            "launch; the adapter resolves them then)",
            data=[{"file": rel, "line": w.line, "verified": None} for w in wanted],
        )
    return Result(
        "\n".join(format_breakpoints(sup.root, path, states)),
        data=breakpoint_data(sup.root, path, states),
    )


async def _function_breakpoints(sup: DebugSupervisor, names: list[str]) -> Result:
    names = list(dict.fromkeys(n.strip() for n in names))
    states = await sup.set_functions(names)
    if not names:
        return Result("cleared function breakpoints", data=[])
    if states is None:
        states = [Breakpoint(0, function=n, pending=True) for n in names]
    return Result(
        "\n".join(format_functions(sup.root, states)), data=function_data(sup.root, states)
    )


def format_functions(root: Path, states: list[Breakpoint]) -> list[str]:
    out = []
    for bp in states:
        text = f"function {bp.function}"
        if bp.pending:
            text += " pending (sent at launch)"
        elif bp.verified:
            place = f"{shown(root, bp.path)}:{bp.resolved}" if bp.path and bp.resolved else None
            text += f" verified{f' at {place}' if place else ''}"
        else:
            text += " unverified"
        if bp.message:
            text += f": {cap_value(bp.message, VALUE_CAP)}"
        out.append(text)
    return out


def function_data(root: Path, states: list[Breakpoint]) -> list[dict[str, Any]]:
    return [
        {
            "function": bp.function,
            "verified": None if bp.pending else bp.verified,
            "file": shown(root, bp.path) if bp.path else None,
            "resolved_line": bp.resolved,
            "message": bp.message,
        }
        for bp in states
    ]


async def op_exceptions(sup: DebugSupervisor, args: DebugArgs) -> Result:
    filters = _need(args.filters, "exceptions", "filters", 'names such as ["raised"]; [] = none')
    how = await sup.set_filters(list(dict.fromkeys(filters)))
    session = sup.live_session() if sup.session is not None and sup.session.live else None
    shown_filters = ", ".join(filters) or "none"
    text = f"exception filters {shown_filters}: {how}"
    if session is not None:
        declared = declared_filters(session.capabilities)
        text += "; it has: " + (", ".join(f"{k} ({v})" for k, v in declared.items()) or "none")
    return Result(text, data={"filters": filters})


def _launch_ask(sup: DebugSupervisor, args: DebugArgs) -> LaunchAsk:
    """The launch as asked, checked: each bad value is named by its argument."""
    options = args.options or LaunchOptions()
    if options.module is not None and args.program is not None:
        raise ToolError("give program or options.module, not both")
    if options.module is not None and not options.module.strip():
        raise ToolError("options.module is empty: give a module name such as pytest")
    program = None
    if options.module is None:
        given = _need(args.program, "launch", "program", "a script, executable or Go package")
        program = resolve_path(sup.root, given, must_exist=True)
        if not program.is_dir():
            check_regular(program, sup.root)  # a FIFO would block the adapter choice
    cwd = None
    if options.cwd is not None:
        cwd = resolve_path(sup.root, options.cwd, must_exist=True)
        if not cwd.is_dir():
            raise ToolError(f"options.cwd: {relpath(sup.root, cwd)} is not a directory")
    for i, arg in enumerate(args.args or []):
        if "\x00" in arg:
            raise ToolError(
                f"args[{i}] holds a NUL character ({cap_value(repr(arg), 80)}): a process argument "
                "cannot contain NUL; remove it"
            )
    for key, value in (options.env or {}).items():
        if not key or "=" in key or "\x00" in key:
            raise ToolError(
                f"options.env: {cap_value(repr(key), 80)} is not a variable name (empty, or "
                "with '=' or NUL)"
            )
        if "\x00" in value:
            raise ToolError(f"options.env[{key!r}] holds a NUL character")
    mine = options.just_my_code if options.just_my_code is not None else args.just_my_code
    return LaunchAsk(
        program=program,
        args=list(args.args or []),
        adapter=args.adapter,
        just_my_code=True if mine is None else mine,
        module=options.module.strip() if options.module else None,
        env=dict(options.env or {}),
        cwd=cwd,
        stop_on_entry=bool(options.stop_on_entry),
    )


async def op_launch(sup: DebugSupervisor, args: DebugArgs) -> Result:
    outcome = await sup.launch(_launch_ask(sup, args))
    return _launched(sup, outcome, "launched")


async def op_restart(sup: DebugSupervisor, args: DebugArgs) -> Result:
    outcome = await sup.restart()
    return _launched(sup, outcome, "restarted: launched")


def _launched(sup: DebugSupervisor, outcome: Outcome, verb: str) -> Result:
    session = sup.live_session()
    head = [f"{verb} {session.target} with {session.adapter.id}{_in_sandbox(sup)}"]
    if session.filter_note:
        head.append(session.filter_note)
    for bp_path, states in session.breakpoints.items():
        head += format_breakpoints(sup.root, bp_path, states)
    head += format_functions(sup.root, session.functions)
    if not session.breakpoints and not session.functions and outcome.kind != "stopped":
        head.append("no breakpoints set: it runs until it ends, crashes or is paused")
    result = outcome_result(sup, session, outcome, head, sup.launch_wait)
    result.data["breakpoints"] = [
        item
        for bp_path, states in session.breakpoints.items()
        for item in breakpoint_data(sup.root, bp_path, states)
    ] + function_data(sup.root, session.functions)
    return result


async def op_attach(sup: DebugSupervisor, args: DebugArgs) -> Result:
    port, pid = args.port, args.pid
    if port is not None and pid is not None:
        raise ToolError("attach takes port or pid, not both")
    if pid is None:
        port = _need(port, "attach", "port", "a localhost port a debug server listens on, or pid")
        if not 0 < port < 65536:
            raise ToolError(f"port must be 1..65535, got {port}")
    elif pid <= 0:
        raise ToolError(f"pid must be a process id (> 0), got {pid}")
    elif pid == os.getpid():
        raise ToolError(f"pid {pid} is this tool's own process")
    outcome = await sup.attach(port, args.adapter, pid)
    session = sup.live_session()
    head = [f"attached to {session.target} with {session.adapter.id}{_in_sandbox(sup)}"]
    for bp_path, states in session.breakpoints.items():
        head += format_breakpoints(sup.root, bp_path, states)
    head += format_functions(sup.root, session.functions)
    return outcome_result(sup, session, outcome, head, sup.attach_wait)


def _resume(command: str) -> Handler:
    async def run(sup: DebugSupervisor, args: DebugArgs) -> Result:
        session = sup.live_session()
        outcome = await session.resume(args.op, command, args.thread_id, sup.wait)
        return outcome_result(sup, session, outcome, [], sup.wait)

    return run


async def op_run_to(sup: DebugSupervisor, args: DebugArgs) -> Result:
    """A temporary breakpoint at one line, `continue`, and the breakpoint gone at the stop."""
    session = sup.live_session()
    file = _need(args.file, "run_to", "file", "the source file of the line")
    lines = _need(args.lines, "run_to", "lines", "[N], the one line to run to")
    if len(lines) != 1 or not isinstance(lines[0], int) or lines[0] < 1:
        raise ToolError(f"lines: run_to takes one 1-based line number, e.g. [42]; got {lines}")
    path = resolve_path(sup.root, file, must_exist=True)
    if not path.is_file():
        raise ToolError(f"file: {relpath(sup.root, path)} is not a file")
    if session.state != "stopped":
        raise ToolError(session._not_stopped("run_to"))
    rel = f"{relpath(sup.root, path)}:{lines[0]}"
    outcome, bp = await session.run_to(
        path, lines[0], sup.breakpoints.get(path, []), args.thread_id, sup.wait
    )
    at = bp.resolved or bp.line
    stop = session.stop if outcome.kind == "stopped" else None
    frame = stop.frame if stop is not None else None
    reached = frame is not None and frame.path == str(path) and frame.line == at
    if reached:
        head = [f"ran to {rel}" + (f" (resolved to line {at})" if at != lines[0] else "")]
    elif outcome.kind == "running":
        head = [f"running to {rel}: the temporary breakpoint stays until the next stop"]
    else:
        head = [f"did not reach {rel}; the temporary breakpoint was removed"]
    return outcome_result(sup, session, outcome, head, sup.wait)


_ASSIGN = re.compile(r"^(?P<target>.+?)(?<![=!<>])=(?!=)(?P<value>.+)$", re.S)


async def op_set(sup: DebugSupervisor, args: DebugArgs) -> Result:
    """`target = value`: setExpression where the adapter has it (debugpy: any assignable
    expression), else setVariable on a variable of the frame's scopes, or a child of
    `reference`, by name."""
    expression = _need(args.expression, "set", "expression", "'name = value', e.g. 'count = 3'")
    match = _ASSIGN.match(expression)
    if not match or not match["target"].strip() or not match["value"].strip():
        raise ToolError(
            f"expression: set takes 'target = value', e.g. 'count = 3'; got "
            f"{cap_value(repr(expression), 120)}"
        )
    target, value = match["target"].strip(), match["value"].strip()
    session = _stopped(sup, "set")
    caps, name = session.capabilities, session.adapter.id
    ref = args.reference
    if ref is not None and ref not in session.refs:
        raise ToolError(
            f"unknown reference {ref}: " + _known(session.refs, "reference", "scopes/variables")
        )
    frame_id = args.frame_id
    if frame_id is not None and frame_id not in session.frames:
        raise ToolError(f"unknown frame id {frame_id}: " + _known(session.frames, "frame", "stack"))
    if ref is None and frame_id is None:
        stop = await session.describe_stop()
        frame_id = stop.frame.id if stop is not None and stop.frame is not None else None
    if ref is None and caps.get("supportsSetExpression"):
        request: dict[str, Any] = {"expression": target, "value": value}
        if frame_id is not None:
            request["frameId"] = frame_id
        body = await session.call("setExpression", request)
    elif caps.get("supportsSetVariable"):
        if ref is None:
            if frame_id is None:
                raise ToolError("set: no frame to look the variable up in; give frame_id")
            ref = await _scope_of(session, frame_id, target)
        request = {"variablesReference": ref, "name": target, "value": value}
        body = await session.call("setVariable", request)
    else:
        raise ToolError(f"{name} cannot set variables (no setVariable or setExpression)")
    shown_value = cap_value(str(body.get("value", "")), VALUE_CAP)
    kind = body.get("type")
    text = f"{target} = {shown_value}" + (f" ({kind})" if kind else "")
    return Result(text, data={"target": target, "value": shown_value, "type": kind})


async def _scope_of(session: Session, frame_id: int, target: str) -> int:
    """The reference of the frame's scope that holds a variable named `target`."""
    body = await session.call("scopes", {"frameId": frame_id})
    names: list[str] = []
    for scope in body.get("scopes") or []:
        ref = int(scope.get("variablesReference") or 0)
        if not ref or scope.get("expensive"):
            continue
        request = {"variablesReference": ref, "start": 0, "count": MAX_FETCH_CHILDREN}
        found = await session.call("variables", request)
        for var in found.get("variables") or []:
            if var.get("name") == target:
                return ref
            names.append(str(var.get("name")))
    known = ", ".join(names[:20]) or "none"
    raise ToolError(
        f"expression: no variable named {target!r} in frame {frame_id} ({session.adapter.id} "
        f"sets a variable by name; a field or item: reference=N of its parent); known: {known}"
    )


async def op_pause(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = sup.live_session()
    already = session.state == "stopped"
    outcome = await session.pause(args.thread_id, sup.wait)
    head = ["already stopped (nothing to pause)"] if already else []
    return outcome_result(sup, session, outcome, head, sup.wait, pausing=True)


def _stopped(sup: DebugSupervisor, op: str) -> Session:
    session = sup.live_session()
    if session.state != "stopped":
        raise ToolError(session._not_stopped(op))
    session.unseen = False  # inspecting the stop is seeing it
    return session


def _thread_state(session: Session, thread: Any) -> str:
    """A thread's own stop reason, else what the adapter said about the others."""
    if session.state != "stopped":
        return session.state
    stop = session.stopped.get(thread) if isinstance(thread, int) else None
    if stop is None and session.stop is not None and session.stop.thread_id == thread:
        stop = session.stop
    if stop is not None:
        return f"stopped: {stop.reason}"
    return "suspended" if session.all_stopped else "running or suspended (adapter did not say)"


async def op_threads(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = sup.live_session()
    if not session.live:
        raise ToolError(session.describe_end())
    body = await session.call("threads")
    threads = [t for t in body.get("threads") or [] if isinstance(t, dict)]
    kept, note = cap_items(threads, THREADS_CAP)
    states = {t.get("id"): _thread_state(session, t.get("id")) for t in kept}
    lines = [
        f"thread {t.get('id')}: {cap_value(str(t.get('name', '')), 200)} [{states[t.get('id')]}]"
        for t in kept
    ]
    if note:
        lines.append(note)
    data = [{"id": t.get("id"), "name": t.get("name"), "state": states[t.get("id")]} for t in kept]
    return Result("\n".join(lines) or "no threads", data=data)


async def op_stack(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = _stopped(sup, "stack")
    thread = await session.thread_for(args.thread_id)
    frames, total = await session.stack(thread, STACK_CAP)
    kept, note = cap_items(frames, STACK_CAP)
    if total is not None and total > len(kept) and note is None:
        note = f"truncated: {total - len(kept)} more"
    lines = [f"thread {thread}:"]
    lines += [f"#{i} [frame {f.id}] {_where(sup.root, f)}" for i, f in enumerate(kept)]
    if note:
        lines.append(note)
    data = [frame_data(sup.root, f) for f in kept]
    return Result("\n".join(lines), data={"thread_id": thread, "frames": data, "note": note})


def _known(ids: Any, what: str, source: str) -> str:
    shown = ", ".join(str(i) for i in list(ids)[:20]) or "none yet"
    return f"{what} ids come from `{source}` at the current stop (known: {shown})"


async def op_scopes(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = _stopped(sup, "scopes")
    frame_id = _need(args.frame_id, "scopes", "frame_id", "a frame id from `stack`")
    if frame_id not in session.frames:
        raise ToolError(f"unknown frame id {frame_id}: " + _known(session.frames, "frame", "stack"))
    body = await session.call("scopes", {"frameId": frame_id})
    lines, data = [], []
    for scope in body.get("scopes") or []:
        ref = int(scope.get("variablesReference") or 0)
        total = _children(scope)
        if ref:
            session.refs[ref] = RefInfo(total)
        count = f", {total} variables" if total is not None else ""
        lines.append(f"{scope.get('name')}: reference {ref}{count}")
        data.append({"name": scope.get("name"), "reference": ref, "count": total})
    return Result("\n".join(lines) or "no scopes", data=data)


def _children(item: dict[str, Any]) -> int | None:
    named, indexed = item.get("namedVariables"), item.get("indexedVariables")
    if isinstance(named, int) or isinstance(indexed, int):
        return (named or 0) + (indexed or 0)
    return None


def _format_var(item: dict[str, Any], name_key: str = "name") -> str:
    value = cap_value(str(item.get("value", item.get("result", ""))), VALUE_CAP)
    kind = item.get("type")
    text = f"{item.get(name_key)}" + (f" ({kind})" if kind else "") + f" = {value}"
    ref = int(item.get("variablesReference") or 0)
    if ref:
        text += f"  [reference {ref}]"
    return text


async def op_variables(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = _stopped(sup, "variables")
    ref = _need(args.reference, "variables", "reference", "from `scopes` or a previous `variables`")
    if ref not in session.refs:
        raise ToolError(
            f"unknown reference {ref}: " + _known(session.refs, "reference", "scopes/variables")
        )
    first = max(args.start or 0, 0)
    total = session.refs[ref].total
    # Paged here, over the child list the adapter gives from 0: debugpy ignores start and count.
    request = {"variablesReference": ref, "start": 0, "count": MAX_FETCH_CHILDREN + first}
    body = await session.call("variables", request)
    children = [v for v in body.get("variables") or [] if isinstance(v, dict)]
    if session.refs[ref].size is not None:
        children = children[: session.refs[ref].size]
    kept = children[first : first + CHILDREN_CAP]
    after = first + len(kept)
    known = max(total or 0, len(children))
    note = None
    if known > after:
        note = f"truncated: {known - after} more; start={after} for the next page"
    elif first and not kept:
        note = f"start={first} is past the last child ({len(children)})"
    for v in kept:
        child = int(v.get("variablesReference") or 0)
        if child:
            session.refs[child] = RefInfo(_children(v), rust.size(v.get("value")))
    lines = [_format_var(v) for v in kept]
    if note:
        lines.append(note)
    data = {
        "variables": [
            {
                "name": v.get("name"),
                "type": v.get("type"),
                "value": cap_value(str(v.get("value", "")), VALUE_CAP),
                "reference": int(v.get("variablesReference") or 0),
            }
            for v in kept
        ],
        "note": note,
    }
    return Result("\n".join(lines) or "no variables", data=data)


async def op_evaluate(sup: DebugSupervisor, args: DebugArgs) -> Result:
    session = sup.live_session()
    expression = _need(args.expression, "evaluate", "expression", "e.g. len(items)")
    if session.state != "stopped":
        raise ToolError(session._not_stopped("evaluate"))
    session.unseen = False
    frame_id = args.frame_id
    if frame_id is None:
        stop = await session.describe_stop()
        frame_id = stop.frame.id if stop is not None and stop.frame is not None else None
    elif frame_id not in session.frames:
        raise ToolError(f"unknown frame id {frame_id}: " + _known(session.frames, "frame", "stack"))
    context = session.adapter.evaluate_context
    request: dict[str, Any] = {"expression": expression, "context": context}
    if frame_id is not None:
        request["frameId"] = frame_id
    try:
        body = await session.call("evaluate", request)
    except ToolError:
        # Rust's `item.tags[0]` through a reference: lldb takes it as `item->tags[0]`
        found = None
        if session.adapter.id == "lldb" and session.client is not None:
            found = await rust.evaluate_path(session.client, request, session.request_timeout)
        if found is None:
            raise
        body = found
    ref = int(body.get("variablesReference") or 0)
    if ref:
        session.refs[ref] = RefInfo(_children(body), rust.size(body.get("result")))
    value = cap_value(str(body.get("result", "")), VALUE_CAP)
    kind = body.get("type")
    text = value + (f" ({kind})" if kind else "") + (f"  [reference {ref}]" if ref else "")
    return Result(text, data={"result": value, "type": kind, "reference": ref})


async def op_output(sup: DebugSupervisor, args: DebugArgs) -> Result:
    """A page of the output stream. Offsets count every character ever written, so a page
    stays put while the ring moves on; the default is the tail."""
    session = sup.live_session()
    session.flush_partial()
    ring = session.output
    total, dropped = ring.total, ring.dropped
    if total == 0:
        return Result("no output yet", data={"output": "", "dropped": 0, "total": 0})
    held = ring.text()
    if args.start is None:
        begin = max(total - OUTPUT_CAP, dropped)
    elif args.start < 0:
        begin = max(total + args.start, dropped)
    else:
        begin = args.start
    head = []
    if begin < dropped:
        head.append(f"(characters 0..{dropped} fell out of the buffer; it starts at {dropped})")
        begin = dropped
    end = min(begin + OUTPUT_CAP, total)
    page = held[begin - dropped : end - dropped]
    if begin > dropped:
        head.append(
            f"(characters {begin}..{end} of {total}; "
            f"start={max(begin - OUTPUT_CAP, dropped)} for earlier)"
        )
    if end < total:
        page += f"\n... truncated: {total - end} more characters; start={end} for the next page"
    text = "\n".join([*head, session.shown(page).rstrip("\n")])
    data = {"output": page, "start": begin, "end": end, "total": total, "dropped": dropped}
    return Result(text, data=data)


async def op_terminate(sup: DebugSupervisor, args: DebugArgs) -> Result:
    was_live = sup.session is not None and sup.session.live
    session = await sup.terminate()
    if not was_live:
        text = f"nothing to terminate: {session.describe_end()}"
        return Result(text, data={"state": session.state})
    code = "" if session.exit_code is None else f" (exit code {session.exit_code})"
    if session.detach:
        return Result(
            f"detached the {session.adapter.id} session from {session.target}: the adapter "
            "stopped, the process runs on (it was running before the attach)",
            data={"state": session.state, "exit_code": session.exit_code},
        )
    return Result(
        f"terminated the {session.adapter.id} session: debuggee and adapter stopped{code}",
        data={"state": session.state, "exit_code": session.exit_code},
    )


OPS: dict[str, Handler] = {
    "adapters": op_adapters,
    "status": op_status,
    "breakpoints": op_breakpoints,
    "exceptions": op_exceptions,
    "launch": op_launch,
    "attach": op_attach,
    "restart": op_restart,
    "run_to": op_run_to,
    "set": op_set,
    "continue": _resume("continue"),
    "pause": op_pause,
    "step_over": _resume("next"),
    "step_in": _resume("stepIn"),
    "step_out": _resume("stepOut"),
    "threads": op_threads,
    "stack": op_stack,
    "scopes": op_scopes,
    "variables": op_variables,
    "evaluate": op_evaluate,
    "output": op_output,
    "terminate": op_terminate,
}


# Ops that start or run code (approve=ask asks about these only): launch/attach start or take
# over a program, evaluate runs an expression in it. Stepping and reading act on what was allowed.
ACTING_OPS = frozenset({"launch", "restart", "attach", "evaluate", "set"})


@asks_only_if(lambda args: args.op in ACTING_OPS)
async def handle(ctx: CallContext, args: DebugArgs) -> Result:
    sup = ctx.resource
    assert isinstance(sup, DebugSupervisor)
    return await OPS[args.op](sup, args)


def make_tool() -> Tool:
    return Tool(
        name="debug",
        tier=Tier.EXEC,
        args=DebugArgs,
        handler=handle,
        description=DESCRIPTION,
        resource=DebugSupervisor.key,
        parallel_safe=False,
        timeout=180.0,
    )
