"""The debug tool against real debugpy: stops, inspection with caps, steps, pause, exceptions,
output, exit codes, breakpoint resolution, the project's own venv and attach."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

from livetools.procs import ChildProcess, session_members
from livetools.wire import free_port

from .conftest import assert_gone, copy_project, line_of, wait_listening


async def test_breakpoint_stack_scopes_variables_evaluate(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    app = root / "app.py"
    call_line = line_of(app, "# call total")
    dbg = await open_debugger(root)

    result = await dbg.ok("breakpoints", file="app.py", lines=[call_line])
    assert "pending (sent at launch" in result.text
    status = await dbg.ok("status")
    assert f"app.py:{call_line} pending (sent at launch)" in status.text
    assert "verified" not in status.text
    result = await dbg.ok("launch", program="app.py")
    assert result.data["outcome"] == "stopped"
    assert result.data["stop"]["reason"] == "breakpoint"
    assert result.data["stop"]["frame"]["path"] == "app.py"
    assert result.data["stop"]["frame"]["line"] == call_line
    assert f"app.py:{call_line} verified" in result.text
    assert "hello from app" in result.text  # output printed before the stop

    stack = await dbg.ok("stack")
    names = [f["name"] for f in stack.data["frames"]]
    assert names[:2] == ["main", "<module>"]
    main_frame = stack.data["frames"][0]["id"]
    module_frame = stack.data["frames"][1]["id"]

    scopes = await dbg.ok("scopes", frame_id=main_frame)
    locals_ref = next(s["reference"] for s in scopes.data if s["name"].startswith("Locals"))
    variables = await dbg.ok("variables", reference=locals_ref)
    by_name = {v["name"]: v for v in variables.data["variables"]}
    assert by_name["mode"]["value"] == "''"
    # values are capped at 400 characters, and the cut is stated
    assert len(by_name["text"]["value"]) <= 400 + 60
    assert "more characters" in by_name["text"]["value"] or len(by_name["text"]["value"]) <= 400

    items = await dbg.ok("variables", reference=by_name["items"]["reference"])
    assert len(items.data["variables"]) == 50  # debugpy ignores `count`: we cap
    assert items.data["note"] and items.data["note"].startswith("truncated:")
    data = await dbg.ok("variables", reference=by_name["data"]["reference"])
    value = data.data["variables"][0]["value"]
    assert "truncated" in value or len(value) <= 400

    evaluated = await dbg.ok("evaluate", expression="len(items) + 1")
    assert evaluated.text.startswith("101")
    in_module = await dbg.ok("evaluate", expression="__name__", frame_id=module_frame)
    assert "__main__" in in_module.text

    threads = await dbg.ok("threads")
    assert "MainThread" in threads.text


async def test_steps(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    app = root / "app.py"
    call_line = line_of(app, "# call total")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="app.py", lines=[call_line])
    await dbg.ok("launch", program="app.py")

    step = await dbg.ok("step_in")
    assert step.data["stop"]["reason"] == "step"
    assert step.data["stop"]["frame"]["name"] == "total"
    assert step.data["stop"]["frame"]["line"] == line_of(app, "acc = 0")

    step = await dbg.ok("step_over")
    assert step.data["stop"]["frame"]["line"] == line_of(app, "for v in values")

    step = await dbg.ok("step_out")
    assert step.data["stop"]["frame"]["name"] == "main"
    assert step.data["stop"]["frame"]["line"] == call_line

    step = await dbg.ok("step_over", thread_id=step.data["stop"]["thread_id"])
    assert step.data["stop"]["frame"]["line"] == line_of(app, 'print("result"')

    done = await dbg.ok("continue")
    # sys.exit(3) is an uncaught SystemExit for debugpy: it stops there first
    if done.data["outcome"] == "stopped":
        assert "SystemExit" in done.text
        done = await dbg.ok("continue")
    assert done.data["outcome"] == "exited"
    assert done.data["exit_code"] == 3


async def test_breakpoint_resolution(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    app = root / "app.py"
    blank = line_of(app, "return acc") + 1  # the blank line after total()
    assert app.read_text().splitlines()[blank - 1] == ""
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="app.py", lines=[blank, 500])
    result = await dbg.ok("launch", program="app.py")
    marks = {bp["line"]: bp for bp in result.data["breakpoints"]}
    assert marks[blank]["resolved_line"] == blank - 1  # moved into the previous function
    assert f"app.py:{blank} -> resolved to line {blank - 1} (moved)" in result.text
    assert marks[500]["resolved_line"] != 500

    # Set while the session lives: answered by the adapter at once; [] clears.
    live = await dbg.ok("breakpoints", file="app.py", lines=[line_of(app, "acc += v")])
    assert live.data[0]["verified"] is True
    cleared = await dbg.ok("breakpoints", file="app.py", lines=[])
    assert "cleared" in cleared.text
    status = await dbg.ok("status")
    assert "breakpoints: none" in status.text


async def test_uncaught_exception_stop_and_exit_code(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root)
    result = await dbg.ok("launch", program="app.py", args=["crash"])
    assert result.data["outcome"] == "stopped"
    assert result.data["stop"]["reason"] == "exception"
    assert "KeyError" in result.data["stop"]["text"]
    assert "missing" in result.text
    status = await dbg.ok("status")  # the stop reason is not lost
    assert "KeyError" in status.text
    done = await dbg.ok("continue")
    assert done.data["outcome"] == "exited"
    assert done.data["exit_code"] == 1
    assert "exited with code 1" in done.text
    # The traceback shows the program's frames only, counting the debugger's own ones.
    traceback = done.text[done.text.index("Traceback") :]
    assert 'File "app.py"' in traceback and "KeyError" in traceback
    assert "internal frames of the debugger left out" in traceback
    assert not any(word in traceback for word in ("runpy", "pydevd", "debugpy"))


async def stopped_in_status(dbg, within: float = 60.0) -> dict:
    """The stop `status` reports, polled until the session is stopped (bounded)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        status = await dbg.ok("status")
        if status.data["state"] == "stopped":
            return status.data["stop"]
        assert asyncio.get_running_loop().time() < deadline, status.text
        await asyncio.sleep(0.2)


async def test_pause_busy_loop_still_running_then_terminate(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root, debug_launch_wait=1.5, debug_wait=1.5)
    result = await dbg.ok("launch", program="app.py", args=["busy"])
    assert result.data["outcome"] == "running"
    assert "still running after 1.5s" in result.text
    sids, pid = dbg.processes()
    status = await dbg.ok("status")
    assert status.data["state"] == "running"
    await dbg.err("stack")  # not stopped: a clear refusal, not a hang
    paused = result
    stop: dict = {}
    for _ in range(20):  # under load the program may not have reached busy() yet
        paused = await dbg.ok("pause")
        # Under load the stop can come after the 1.5 s wait: the pause then answers "still
        # running" and the stop shows in `status` once debugpy sends it.
        if paused.data["stop"] is None:
            assert "pause sent, but no stop reported within 1.5s" in paused.text
        stop = paused.data["stop"] or await stopped_in_status(dbg)
        assert stop["reason"] == "pause"
        if stop["frame"]["name"] == "busy":
            break
        await dbg.ok("continue")
    assert stop["frame"]["name"] == "busy"
    again = await dbg.ok("pause")  # already stopped: answered without asking the adapter
    assert "already stopped" in again.text
    resumed = await dbg.ok("continue")
    assert resumed.data["outcome"] == "running"
    ended = await dbg.ok("terminate")
    assert "terminated" in ended.text
    assert_gone(sids, pid)
    after = await dbg.ok("status")
    assert after.data["state"] == "ended"


async def test_output_stdin_eof_and_subprocess(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root)
    result = await dbg.ok("launch", program="app.py", args=["stdin"])
    if result.data["outcome"] == "stopped":  # SystemExit(3)
        result = await dbg.ok("continue")
    assert result.data["exit_code"] == 3
    output = await dbg.ok("output")
    assert "read: ''" in output.text  # stdin is at EOF, not a hang
    assert "to stderr" in output.text
    assert "telemetry" not in output.text

    # A subprocess of the debuggee runs free and does not hang the parent.
    result = await dbg.ok("launch", program="app.py", args=["child"])
    if result.data["outcome"] == "stopped":
        result = await dbg.ok("continue")
    assert result.data["outcome"] == "exited"
    assert result.data["exit_code"] == 3


async def test_refusals(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    (tmp_path / "outside.py").write_text("print(1)\n")
    dbg = await open_debugger(root)
    for op, args in [
        ("stack", {}),
        ("continue", {}),
        ("output", {}),
        ("terminate", {}),
        ("variables", {"reference": 1}),
    ]:
        result = await dbg.err(op, **args)
        assert "no debug session" in result.text
    assert "outside the project root" in (await dbg.err("launch", program="../outside.py")).text
    unknown = await dbg.err("launch", program="app.py", adapter="nope")
    assert 'unknown adapter "nope"' in unknown.text
    assert "needs program" in (await dbg.err("launch")).text
    assert "no such file" in (await dbg.err("breakpoints", file="nope.py", lines=[1])).text
    assert "1-based" in (await dbg.err("breakpoints", file="app.py", lines=[0])).text
    assert "no adapter handles" in (await dbg.err("launch", program="pyproject.toml")).text
    usage = await dbg("bogus")
    assert usage.is_error and "op" in usage.text

    call_line = line_of(root / "app.py", "# call total")
    await dbg.ok("breakpoints", file="app.py", lines=[call_line])
    await dbg.ok("launch", program="app.py")
    second = await dbg.err("launch", program="app.py")
    assert "already running" in second.text and "terminate" in second.text
    assert "unknown frame id 999999" in (await dbg.err("scopes", frame_id=999999)).text
    assert "unknown reference 999999" in (await dbg.err("variables", reference=999999)).text
    assert "needs frame_id" in (await dbg.err("scopes")).text
    assert (
        "unknown thread id 4242; threads: 1 (MainThread)"
        in (await dbg.err("step_over", thread_id=4242)).text
    )
    assert (await dbg.ok("status")).data["state"] == "stopped"  # a refused step changes nothing
    bad = await dbg.err("evaluate", expression="no_such_name")
    assert "no_such_name" in bad.text
    stack = await dbg.ok("stack")
    scopes = await dbg.ok("scopes", frame_id=stack.data["frames"][0]["id"])
    ref = scopes.data[0]["reference"]
    await dbg.ok("step_in")
    await dbg.ok("step_out")
    # references die with the stop (debugpy reuses small frame ids, so those may come back)
    assert ref not in dbg.supervisor.session.refs


async def test_ttl_expiry_kills_everything(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root, debug_ttl=60.0)
    call_line = line_of(root / "app.py", "# call total")
    await dbg.ok("breakpoints", file="app.py", lines=[call_line])
    await dbg.ok("launch", program="app.py")
    sids, pid = dbg.processes()
    assert sids and all(session_members(s) for s in sids)
    assert re.search(r"TTL: 0:\d\d left \(of 1:00\)", (await dbg.ok("status")).text)
    dbg.supervisor.set_ttl(0.5)  # the deadline moves: 0.5 s after the start, so now
    status = None
    for _ in range(100):
        status = await dbg.ok("status")
        if status.data["state"] != "stopped":
            break
        await asyncio.sleep(0.1)
    assert status is not None and status.data["state"] == "expired"
    assert "expired" in status.text
    assert_gone(sids, pid)
    assert "expired" in (await dbg.err("stack")).text
    dbg.supervisor.set_ttl(60.0)
    again = await dbg.ok("launch", program="app.py")  # a new session after expiry
    assert again.data["outcome"] == "stopped"


async def test_run_close_mid_stop_leaves_nothing(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root)
    call_line = line_of(root / "app.py", "# call total")
    await dbg.ok("breakpoints", file="app.py", lines=[call_line])
    await dbg.ok("launch", program="app.py")
    sids, pid = dbg.processes()
    assert pid is not None
    await dbg.run.aclose()
    assert_gone(sids, pid)


async def test_project_venv_is_the_debuggee(venv_project: Path, open_debugger) -> None:
    root = venv_project
    site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "libmod.py").write_text("def f():\n    return 1\n")
    dbg = await open_debugger(root)
    lib = site / "libmod.py"
    await dbg.ok("breakpoints", file=str(lib.relative_to(root)), lines=[2])
    result = await dbg.ok("launch", program="app.py", args=["where"])
    # justMyCode: a breakpoint in the venv's site-packages is refused with the adapter's words
    lib_bp = next(bp for bp in result.data["breakpoints"] if bp["file"].endswith("libmod.py"))
    assert lib_bp["verified"] is False
    assert lib_bp["message"] and "justMyCode" in lib_bp["message"]
    if result.data["outcome"] == "stopped":
        await dbg.ok("continue")
    output = await dbg.ok("output")
    assert f"python: {root / '.venv' / 'bin' / 'python'}" in output.text


async def test_attach_to_listening_debugpy(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    port = free_port()
    server = await ChildProcess.start(
        [
            sys.executable,
            "-m",
            "debugpy",
            "--listen",
            f"127.0.0.1:{port}",
            "--wait-for-client",
            "app.py",
            "busy",
        ],
        cwd=root,
        stdin=False,
    )
    try:
        await wait_listening(port)  # the listener opens its port a moment after it starts
        dbg = await open_debugger(root)
        total_line = line_of(root / "app.py", "acc += v")
        await dbg.ok("breakpoints", file="app.py", lines=[total_line])
        result = await dbg.ok("attach", port=port)
        assert "attached to port" in result.text
        stop = result.data["stop"] or await stopped_in_status(dbg)  # a late stop, under load
        assert stop["reason"] == "breakpoint"
        assert stop["frame"]["line"] == total_line
        value = await dbg.ok("evaluate", expression="acc")
        assert value.text.startswith("0")
        await dbg.ok("terminate")
        assert await server.wait(10) is not None  # terminateDebuggee ended the listener's program
    finally:
        await server.aclose(grace=0)
    assert session_members(server.pid) == []


async def test_attach_refused_without_listener(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root)
    result = await dbg.err("attach", port=free_port(), adapter="debugpy")
    assert "could not connect" in result.text and "--listen" in result.text
    assert "port must be" in (await dbg.err("attach", port=70000)).text


async def test_launch_refuses_fifo_program_and_nul_args(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    os.mkfifo(root / "pipe.py")
    dbg = await open_debugger(root)
    started = time.monotonic()
    fifo = await dbg.err("launch", program="pipe.py")
    assert "pipe.py is a FIFO" in fifo.text
    assert time.monotonic() - started < 30
    nul = await dbg.err("launch", program="app.py", args=["ok", "a\x00b"])
    assert "args[1] holds a NUL" in nul.text and "Traceback" not in nul.text


async def test_output_and_variables_page(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    (root / "many.py").write_text(
        "for i in range(200_000):\n    print(f'line {i}')\nbig = list(range(500))\nprint('end')\n"
    )
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="many.py", lines=[4])
    result = await dbg.ok("launch", program="many.py")
    assert result.data["stop"]["frame"]["line"] == 4
    # At the stop, everything printed before it is there (debugpy relays it behind the stop).
    assert result.text.rstrip().endswith("line 199999")
    tail = await dbg.ok("output")
    assert tail.text.rstrip().endswith("line 199999") and "livetools-sync" not in tail.text
    assert "for earlier" in tail.text
    first = await dbg.ok("output", start=0)  # the head fell out of the ring: said so
    assert "fell out of the buffer" in first.text and "for the next page" in first.text
    page = await dbg.ok("output", start=first.data["end"])
    assert page.data["start"] == first.data["end"]
    back = await dbg.ok("output", start=-100)
    assert back.data["end"] == back.data["total"]

    stack = await dbg.ok("stack")
    scopes = await dbg.ok("scopes", frame_id=stack.data["frames"][0]["id"])
    ref = next(s["reference"] for s in scopes.data if s["name"].startswith("Globals"))
    glob = await dbg.ok("variables", reference=ref)
    big = next(v for v in glob.data["variables"] if v["name"] == "big")["reference"]
    head = await dbg.ok("variables", reference=big)
    assert "start=50 for the next page" in head.data["note"]
    page2 = await dbg.ok("variables", reference=big, start=50)
    names = [v["name"] for v in head.data["variables"] + page2.data["variables"]]
    assert len(names) == len(set(names)) == 100  # two pages, no overlap
    # debugpy itself gives the first 100 items of a long list (plus len and groups): said so
    rest = await dbg.ok("variables", reference=big, start=100)
    assert rest.data["note"] is None or "more" in rest.data["note"]


async def test_step_over_print_shows_its_output(tmp_path: Path, open_debugger) -> None:
    """The step's result holds what the stepped line wrote to stdout and stderr, though debugpy
    relays the program's pipes behind the `stopped` event."""
    root = copy_project("py", tmp_path)
    (root / "talk.py").write_text(
        "import sys\n"
        "for i in range(3):\n"
        "    print(f'out {i}')\n"
        "    print(f'err {i}', file=sys.stderr)\n"
        "done = True\n"
    )
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="talk.py", lines=[3])
    await dbg.ok("launch", program="talk.py")
    for i in range(3):
        printed = await dbg.ok("step_over")  # out i
        assert f"out {i}" in printed.text, printed.text
        errored = await dbg.ok("step_over")  # err i
        assert f"err {i}" in errored.text, errored.text
        if i < 2:
            await dbg.ok("continue")  # to the breakpoint again
    status = await dbg.ok("output")
    assert "livetools-sync" not in status.text


async def test_output_sync_leaves_a_redirected_stdout_alone(tmp_path: Path, open_debugger) -> None:
    """A program that points fd 1 at a file of its own never finds the sync marker in it; its
    stderr, still the launcher's pipe, keeps syncing."""
    root = copy_project("py", tmp_path)
    (root / "redirect.py").write_text(
        "import os, sys\n"
        "log = open('own.log', 'w')\n"
        "os.dup2(log.fileno(), 1)\n"
        "print('to the file', flush=True)\n"
        "print('to stderr', file=sys.stderr)\n"
        "done = True\n"
        "print('after', flush=True)\n"
    )
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="redirect.py", lines=[5])
    await dbg.ok("launch", program="redirect.py")
    stepped = await dbg.ok("step_over")
    assert "to stderr" in stepped.text, stepped.text
    await dbg.ok("step_over")
    await dbg.ok("continue")
    log = (root / "own.log").read_text()
    assert log == "to the file\nafter\n", log
    assert "livetools-sync" not in (await dbg.ok("output")).text


async def test_pydevd_socket_gets_nodelay_at_the_first_stop(tmp_path: Path, open_debugger) -> None:
    """pydevd writes a message's header and body in two sends: without TCP_NODELAY each request
    waited ~40 ms for a delayed ACK. The option is set once, at the first stop, and the steps
    after it still report their stops."""
    root = copy_project("py", tmp_path)
    line = line_of(root / "app.py", "# call total")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="app.py", lines=[line])
    await dbg.ok("launch", program="app.py")
    probe = "__import__('pydevd').get_global_debugger().writer.sock.getsockopt(6, 1)"
    assert (await dbg.ok("evaluate", expression=probe)).data["result"] != "0"
    step = await dbg.ok("step_over")
    assert step.data["stop"]["frame"]["line"] == line + 1, step.text


async def test_stdout_and_stderr_lines_are_not_spliced(tmp_path: Path, open_debugger) -> None:
    """The two streams arrive as chunks; a line of one is never cut by a line of the other
    (it was: 'hello from appto stderr', in 1 or 2 launches of 6)."""
    root = copy_project("py", tmp_path)
    (root / "mix.py").write_text(
        "import sys, time\n"
        "sys.stdout.write('part-a'); sys.stdout.flush(); time.sleep(0.05)\n"
        "sys.stderr.write('line-b\\n'); sys.stderr.flush(); time.sleep(0.05)\n"
        "sys.stdout.write('rest\\n'); sys.stdout.flush()\n"
        "sys.stdout.write('prompt> '); sys.stdout.flush()\n"
        "x = 1  # stop\n"
    )
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="mix.py", lines=[line_of(root / "mix.py", "# stop")])
    r = await dbg.ok("launch", program="mix.py")
    assert r.data["outcome"] == "stopped", r.text
    out = (await dbg.ok("output")).data["output"]
    lines = out.splitlines()
    assert "part-arest" in lines and "line-b" in lines, out
    assert out.endswith("prompt> "), out  # an unfinished line is shown at the stop
