"""The debug tool against real delve (`dlv dap`, TCP) on a Go module."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from livetools.procs import ChildProcess, session_members
from livetools.wire import free_port

from .conftest import assert_gone, copy_project, line_of, require_delve


@pytest.fixture
def go_project(tmp_path: Path) -> Path:
    require_delve()
    return copy_project("go", tmp_path)


async def test_breakpoint_inspect_steps_output_and_exit(go_project: Path, open_debugger) -> None:
    root = go_project
    main_go = root / "main.go"
    call_line = line_of(main_go, "// call total")
    dbg = await open_debugger(root)
    assert "delve: usable" in (await dbg.ok("adapters")).text

    await dbg.ok("breakpoints", file="main.go", lines=[call_line])
    result = await dbg.ok("launch", program=".")
    assert "with delve" in result.text
    stop = result.data["stop"]
    assert stop["reason"] == "breakpoint"
    assert (stop["frame"]["path"], stop["frame"]["line"]) == ("main.go", call_line)
    assert "hello from app" in result.text  # from dlv's own stdout, not output events

    stack = await dbg.ok("stack")
    assert stack.data["frames"][0]["name"] == "main.main"
    scopes = await dbg.ok("scopes", frame_id=stack.data["frames"][0]["id"])
    variables = await dbg.ok("variables", reference=scopes.data[0]["reference"])
    by_name = {v["name"]: v for v in variables.data["variables"]}
    assert "more characters" in by_name["text"]["value"]  # a 1000-char string, capped at 400
    items = await dbg.ok("variables", reference=by_name["items"]["reference"])
    assert len(items.data["variables"]) == 50  # dlv sends 64 whatever `count` says
    assert items.data["note"] == "truncated: 50 more; start=50 for the next page"
    assert (await dbg.ok("evaluate", expression="len(items)")).text.startswith("100")
    missing = await dbg.err("evaluate", expression="result")  # not in scope yet
    assert "result" in missing.text

    step = await dbg.ok("step_in")
    assert step.data["stop"]["frame"]["name"] == "main.total"
    step = await dbg.ok("step_out")
    assert step.data["stop"]["frame"]["name"] == "main.main"
    step = await dbg.ok("step_over")
    assert step.data["stop"]["reason"] == "step"
    assert step.data["stop"]["frame"]["line"] > call_line

    done = await dbg.ok("continue")
    assert done.data["outcome"] == "exited"
    assert done.data["exit_code"] == 3  # parsed from dlv's console: there is no exited event
    output = await dbg.ok("output")
    assert "result 10 1000" in output.text
    assert "DAP server listening" not in output.text


async def test_pause_panic_stdin_and_leaks(go_project: Path, open_debugger) -> None:
    root = go_project
    dbg = await open_debugger(root, debug_launch_wait=1.0, debug_wait=1.0)
    result = await dbg.ok("launch", program=".", args=["busy"])
    assert result.data["outcome"] == "running"
    # From here every wait ends at its event (a stop, an exit); the short waits only let the busy
    # launch come back running, and a loaded machine may take longer than 1 s to stop or build.
    dbg.supervisor.wait = dbg.supervisor.launch_wait = 60.0
    sids, _ = dbg.processes()
    paused = await dbg.ok("pause")
    assert paused.data["stop"]["reason"] == "pause"
    # The pause may land while the goroutine's thread runs a signal handler (`runtime.sigtramp`,
    # Go's own source): the stop then names the first frame inside the project beside it.
    stop = paused.data["stop"]
    assert (stop.get("project_frame") or stop["frame"])["name"] == "main.busy", stop
    await dbg.ok("terminate")
    assert_gone(sids)

    crashed = await dbg.ok("launch", program="main.go", args=["crash"])
    assert crashed.data["stop"]["reason"] == "exception"
    assert "nil map" in crashed.data["stop"]["text"]
    project = crashed.data["stop"]["project_frame"]
    assert project["path"] == "main.go"
    assert project["line"] == line_of(root / "main.go", 'm["missing"] = 1')
    done = await dbg.ok("continue")
    assert done.data["exit_code"] == 2

    result = await dbg.ok("launch", program=".", args=["stdin"])
    assert result.data["outcome"] == "exited"
    assert "read 0" in (await dbg.ok("output")).text

    await dbg.ok("breakpoints", file="main.go", lines=[line_of(root / "main.go", "// call total")])
    await dbg.ok("launch", program=".")
    sids, _ = dbg.processes()
    await dbg.run.aclose()
    assert_gone(sids)


@pytest.fixture
def go_binary(go_project: Path) -> Path:
    """A binary built the way dlv needs it (no optimisation, no inlining)."""
    binary = go_project / "app"
    build = ["go", "build", "-gcflags=all=-N -l", "-o", str(binary), "."]
    subprocess.run(build, cwd=go_project, check=True, timeout=300)
    return binary


async def test_attach_to_headless_delve(go_binary: Path, open_debugger) -> None:
    root = go_binary.parent
    port = free_port()
    headless = ["dlv", "exec", "--headless", f"--listen=127.0.0.1:{port}", "--accept-multiclient"]
    server = await ChildProcess.start(
        [*headless, "--api-version=2", str(go_binary)],
        cwd=root,
        stdin=False,
        merge_stderr=True,
    )
    try:
        dbg = await open_debugger(root)
        await dbg.ok("breakpoints", file="main.go", lines=[line_of(root / "main.go", "acc += v")])
        result = await dbg("attach", port=port, adapter="delve")
        for _ in range(40):  # the headless server opens its port a moment after it starts
            if not result.is_error:
                break
            await asyncio.sleep(0.1)
            result = await dbg("attach", port=port, adapter="delve")
        assert not result.is_error, result.text
        assert result.data["stop"]["frame"]["name"] == "main.total"
        assert (await dbg.ok("evaluate", expression="acc")).text.startswith("0")
        await dbg.ok("terminate")
        assert await server.wait(10) is not None
    finally:
        await server.aclose(grace=0)
    assert session_members(server.pid) == []


async def test_step_after_a_step_cut_short_by_a_breakpoint(tmp_path: Path, open_debugger) -> None:
    """main steps over `close(start)` / `done.Wait()` while three goroutines run into a
    breakpoint: that stop cuts the step short, and dlv refuses every step until `continue` has
    finished it. The cut is said at the stop; the next step is a clear error (not a stop with
    reason 'exception'), and the session stays stopped where it was."""
    require_delve()
    root = copy_project("go", tmp_path)
    (root / "main.go").unlink()
    (root / "main.go").write_text(
        (Path(__file__).with_name("programs") / "goroutines.go").read_text()
    )
    hit = line_of(root / "main.go", "// all three here")
    release = line_of(root / "main.go", "close(start)")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="main.go", lines=[release, hit])
    result = await dbg.ok("launch", program=".")
    assert result.data["stop"]["frame"]["line"] == release, result.text
    for _ in range(3):
        result = await dbg.ok("step_over")
        if result.data["stop"]["reason"] == "breakpoint":
            break
    assert result.data["stop"]["frame"]["line"] == hit, result.text
    assert "cut the step_over of thread 1 short" in result.text
    refused = await dbg.err("step_over")
    assert "delve refused step_over: Unable to step while the previous step" in refused.text
    assert "Nothing ran" in refused.text
    status = await dbg.ok("status")
    assert status.data["state"] == "stopped"
    assert status.data["stop"]["frame"]["line"] == hit, status.text
    assert "stopped: exception" not in status.text
    assert (await dbg.ok("stack")).data["frames"][0]["line"] == hit
    for _ in range(5):  # continue finishes main's step; the goroutines' stops come on the way
        result = await dbg.ok("continue")
        if result.data["outcome"] != "stopped":
            break
    assert result.data["outcome"] == "exited", result.text
