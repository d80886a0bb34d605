"""The debug tool against real lldb-vscode-16 / lldb-dap on a C program built with -g."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

import pytest

from livetools.detection import which_any
from livetools.procs import ChildProcess, session_members
from livetools.wire import free_port
from livetools_debug.adapters import AttachInfo, _lldb_attach, lldb_names
from livetools_debug.listening import listening
from tests.support import require_binary

from .conftest import assert_gone, build_c, copy_project, line_of, require_lldb


@pytest.fixture
def c_project(tmp_path: Path) -> Path:
    require_lldb()
    root = copy_project("c", tmp_path)
    build_c(root, "-g", "-O0")
    return root


async def test_breakpoint_inspect_steps_and_exit(c_project: Path, open_debugger) -> None:
    root = c_project
    main_c = root / "main.c"
    call_line = line_of(main_c, "/* call total */")
    dbg = await open_debugger(root)
    adapters = await dbg.ok("adapters")
    assert "lldb: usable" in adapters.text
    assert "debugpy: not usable: marker missing" in adapters.text

    await dbg.ok("breakpoints", file="main.c", lines=[call_line])
    result = await dbg.ok("launch", program="app")
    assert "with lldb" in result.text
    assert result.data["breakpoints"][0]["verified"] is True
    stop = result.data["stop"]
    assert stop["reason"] == "breakpoint"
    assert (stop["frame"]["path"], stop["frame"]["line"]) == ("main.c", call_line)

    stack = await dbg.ok("stack")
    assert stack.data["frames"][0]["name"] == "main"
    frame = stack.data["frames"][0]["id"]
    scopes = await dbg.ok("scopes", frame_id=frame)
    locals_ref = next(s["reference"] for s in scopes.data if s["name"] == "Locals")
    variables = await dbg.ok("variables", reference=locals_ref)
    by_name = {v["name"]: v for v in variables.data["variables"]}
    assert len(by_name["text"]["value"]) <= 460  # a char[1200] summary, capped
    items = await dbg.ok("variables", reference=by_name["items"]["reference"])
    assert len(items.data["variables"]) == 50
    assert items.data["note"] == "truncated: 50 more; start=50 for the next page"
    assert (await dbg.ok("evaluate", expression="items[3] + items[4]")).text.startswith("7")

    step = await dbg.ok("step_in")
    assert step.data["stop"]["frame"]["name"] == "total"
    step = await dbg.ok("step_out")
    assert step.data["stop"]["frame"]["name"] == "main"
    step = await dbg.ok("step_over")
    assert step.data["stop"]["reason"] == "step"
    assert step.data["stop"]["frame"]["line"] > call_line

    done = await dbg.ok("continue")
    assert done.data["outcome"] == "exited"
    assert done.data["exit_code"] == 3
    output = await dbg.ok("output")
    assert "hello from app" in output.text and "\r" not in output.text


async def test_pause_crash_stdin_and_leaks(c_project: Path, open_debugger) -> None:
    root = c_project
    dbg = await open_debugger(root, debug_launch_wait=1.0, debug_wait=1.0)
    result = await dbg.ok("launch", program="app", args=["busy"])
    assert result.data["outcome"] == "running"
    sids, pid = dbg.processes()
    paused = await dbg.ok("pause")
    assert paused.data["stop"]["reason"] == "pause"  # lldb says "signal SIGSTOP"
    assert paused.data["stop"]["frame"]["name"] == "busy"
    await dbg.ok("terminate")
    assert_gone(sids, pid)

    crashed = await dbg.ok("launch", program="app", args=["crash"])
    assert crashed.data["stop"]["reason"] == "exception"
    assert "SIGSEGV" in crashed.data["stop"]["text"]
    assert crashed.data["stop"]["frame"]["line"] == line_of(root / "main.c", "*p = 1")
    ended = await dbg.ok("continue")
    assert ended.data["exit_code"] == 11
    assert "exited with signal SIGSEGV (code 11)" in ended.text, ended.text

    # The debuggee's stdin is /dev/null: a read sees EOF instead of blocking on the pty.
    result = await dbg.ok("launch", program="app", args=["stdin"])
    assert result.data["outcome"] == "exited"
    assert "read 0" in (await dbg.ok("output")).text

    await dbg.ok("breakpoints", file="main.c", lines=[line_of(root / "main.c", "/* call total */")])
    await dbg.ok("launch", program="app")
    sids, pid = dbg.processes()
    await dbg.run.aclose()
    assert_gone(sids, pid)


async def test_no_debug_info_reports_unverified(tmp_path: Path, open_debugger) -> None:
    require_lldb()
    root = copy_project("c", tmp_path)
    build_c(root, "-O2")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="main.c", lines=[line_of(root / "main.c", "/* call total */")])
    result = await dbg.ok("launch", program="app")
    assert result.data["breakpoints"][0]["verified"] is False
    assert "unverified: no code at this line in the binary: build with -g" in result.text
    assert result.data["outcome"] == "exited"


async def test_stop_between_calls_is_never_skipped(c_project: Path, open_debugger) -> None:
    root = c_project
    dbg = await open_debugger(root, debug_launch_wait=0.5, debug_wait=0.5)
    result = await dbg.ok("launch", program="app", args=["busy"])
    assert result.data["outcome"] == "running"
    waited = await dbg.ok("continue")  # running already: continue waits for the next stop
    assert waited.data["outcome"] == "running"
    loop_line = line_of(root / "main.c", "n++;")
    answer = await dbg.ok("breakpoints", file="main.c", lines=[loop_line])
    assert answer.data[0]["verified"] is True
    for _ in range(50):  # the stop arrives between calls
        if dbg.supervisor.session.state == "stopped":
            break
        await asyncio.sleep(0.05)
    first = await dbg.ok("step_over")
    assert "nothing was resumed" in first.text
    assert first.data["stop"]["reason"] == "breakpoint"
    await dbg.ok("breakpoints", file="main.c", lines=[])
    second = await dbg.ok("step_over")  # this one resumes
    assert second.data["stop"]["reason"] == "step"
    assert "nothing was resumed" not in second.text
    await dbg.ok("terminate")


async def test_attach_to_lldb_server(c_project: Path, open_debugger) -> None:
    root = c_project
    server_binary = which_any(["lldb-server", *(f"lldb-server-{n}" for n in range(30, 9, -1))])
    if server_binary is None:
        server_binary = require_binary("lldb-server", "apt-get install lldb-16")
    port = free_port()
    server = await ChildProcess.start(
        [server_binary, "gdbserver", f"127.0.0.1:{port}", str(root / "app")],
        cwd=root,
        stdin=False,
        merge_stderr=True,
    )
    try:
        dbg = await open_debugger(root)
        total_line = line_of(root / "main.c", "acc += values[i]")
        await dbg.ok("breakpoints", file="main.c", lines=[total_line])
        result = await dbg.ok("attach", port=port, adapter="lldb")
        assert result.data["stop"]["reason"] == "breakpoint"
        assert result.data["stop"]["frame"]["line"] == total_line
        assert (await dbg.ok("evaluate", expression="acc")).text.startswith("0")
        sids, _ = dbg.processes()
        await dbg.ok("terminate")
        assert_gone(sids)
        assert await server.wait(10) is not None
    finally:
        await server.aclose(grace=0)
    assert session_members(server.pid) == []


async def test_attach_waits_for_a_server_that_is_still_starting(
    c_project: Path, open_debugger
) -> None:
    """An agent starts lldb-server in its shell and attaches at once: attach waits for the port to
    listen (lldb's gdb-remote dials once and fails with "process unloaded during launch or
    attach"), without connecting to it (lldb-server serves one connection)."""
    root = c_project
    server_binary = which_any(["lldb-server", *(f"lldb-server-{n}" for n in range(30, 9, -1))])
    if server_binary is None:
        server_binary = require_binary("lldb-server", "apt-get install lldb-16")
    port = free_port()
    dbg = await open_debugger(root)
    total_line = line_of(root / "main.c", "acc += values[i]")
    await dbg.ok("breakpoints", file="main.c", lines=[total_line])
    attaching = asyncio.ensure_future(dbg.ok("attach", port=port, adapter="lldb"))
    # The server starts after the attach began (0.5 s: well inside attach's wait for the port,
    # which is at least 2 s and grows with the load); the attach must still be waiting.
    await asyncio.sleep(0.5)
    assert not attaching.done()
    server = await ChildProcess.start(
        [server_binary, "gdbserver", f"127.0.0.1:{port}", str(root / "app")],
        cwd=root,
        stdin=False,
        merge_stderr=True,
    )
    try:
        result = await attaching
        assert result.data["stop"]["frame"]["line"] == total_line
        await dbg.ok("terminate")
        assert await server.wait(10) is not None
    finally:
        await server.aclose(grace=0)


async def test_unverified_line_in_a_debug_build_gets_no_build_hint(
    c_project: Path, open_debugger
) -> None:
    root = c_project
    dbg = await open_debugger(root)
    call_line = line_of(root / "main.c", "/* call total */")
    await dbg.ok("breakpoints", file="main.c", lines=[1, call_line])
    result = await dbg.ok("launch", program="app")
    marks = {bp["line"]: bp for bp in result.data["breakpoints"]}
    assert marks[call_line]["verified"] is True
    assert marks[1]["verified"] is False  # the #include line
    assert "no code at this line" in marks[1]["message"] and "-g" not in marks[1]["message"]
    await dbg.ok("terminate")


def _dap_attach(adapter: list[str], config: dict) -> str:
    """initialize + attach with `config` on a raw DAP pipe; the attach answer's message."""
    proc = subprocess.Popen(adapter, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    out, into = proc.stdout, proc.stdin

    def send(seq: int, command: str, arguments: dict) -> None:
        message = {"seq": seq, "type": "request", "command": command, "arguments": arguments}
        body = json.dumps(message).encode()
        into.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        into.flush()

    def answer(command: str) -> dict:
        while True:
            length = 0
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not length:
                raise AssertionError(f"the adapter exited before answering {command}")
            message = json.loads(out.read(length))
            if message.get("type") == "response" and message.get("command") == command:
                return message

    try:
        send(1, "initialize", {"adapterID": "lldb", "linesStartAt1": True})
        answer("initialize")
        send(2, "attach", config)
        reply = answer("attach")
        return "ok" if reply.get("success") else str(reply.get("message"))
    finally:
        proc.kill()
        proc.wait()


async def test_attach_config_holds_with_the_adapter_on_one_busy_core(c_project: Path) -> None:
    """lldb-dap fails an attach at once if, after its attachCommands, the process's public state
    is still "unloaded" — it leaves that state when lldb-dap's event thread takes the stop event,
    which a busy machine delays. The attach the debug tool sends, to an adapter pinned to one
    core beside three busy loops: an asynchronous gdb-remote failed 11 of 15 times like that."""
    taskset = require_binary("taskset", "apt-get install util-linux")
    real = which_any(list(lldb_names()))
    server_binary = which_any(["lldb-server", *(f"lldb-server-{n}" for n in range(30, 9, -1))])
    if real is None or server_binary is None:
        server_binary = require_binary("lldb-server", "apt-get install lldb-16")
    assert real is not None
    root = c_project
    # In this process's session, so in its scheduling group (autogroup), as beside a loaded suite.
    pinned = [taskset, "-c", "0", "sh", "-c", "while :; do :; done"]
    hogs = [await asyncio.create_subprocess_exec(*pinned) for _ in range(3)]
    answers = []
    try:
        for _ in range(4):
            port = free_port()
            server = await ChildProcess.start(
                [server_binary, "gdbserver", f"127.0.0.1:{port}", str(root / "app")],
                cwd=root,
                stdin=False,
                merge_stderr=True,
            )
            try:
                deadline = time.monotonic() + 30
                while not listening(port):
                    assert time.monotonic() < deadline, "lldb-server never listened"
                    await asyncio.sleep(0.05)
                config = _lldb_attach(AttachInfo("127.0.0.1", port, root, root))
                adapter = [taskset, "-c", "0", real]
                answers.append(await asyncio.to_thread(_dap_attach, adapter, config))
            finally:
                await server.aclose(grace=0)
    finally:
        for hog in hogs:
            hog.kill()
            await hog.wait()
    assert answers == ["ok"] * 4, answers
