"""The debug family inside a real bubblewrap sandbox: debugpy runs in the jail (root at
/workspace, private /tmp, no network) and starts the debuggee there; breakpoints set on host
paths stop it, stacks come back relative to the root, and nothing is left after close or a
SIGKILLed host. TCP adapters are refused at once in a sandbox with a network of its own."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import IO

import pytest

from livetools.ports import Ports
from livetools.procs import session_members
from livetools.procs.sessions import descendants
from livetools.sandbox import spawn
from livetools.wire import free_port
from livetools_debug.adapters import Adapter
from tests.sandboxes import bwrap_sandbox, require_bwrap, sandboxed_session
from tests.support import assert_gone

from .conftest import (
    build_c,
    copy_project,
    line_of,
    require_delve,
    require_lldb,
    wait_listening,
)
from .test_debugpy import stopped_in_status
from .test_faults_and_hooks import ThirdParty

PROGRAM = """\
import os

print("cwd", os.getcwd(), flush=True)
with open("host_path.txt") as f:
    host_root = f.read().strip()


def total(values):
    acc = 0
    for v in values:
        acc += v
    return acc


def main():
    items = list(range(5))
    label = "sum"
    result = total(items)  # call total
    print(label, result, "host root visible:", os.path.exists(host_root))


main()
"""

BOOM = """\
def fail():
    return {}["missing"]


fail()
"""


def _project(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'sbx'\nversion = '0'\n")
    (root / "prog.py").write_text(PROGRAM)
    (root / "boom.py").write_text(BOOM)
    # Read by the debuggee: a path that exists on the host and must not exist inside (launch
    # args would not do, the wire maps them to /workspace).
    (root / "host_path.txt").write_text(str(root))
    return root


def _cmdlines(pids: list[int]) -> list[str]:
    lines = []
    for pid in pids:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return lines


async def test_debugpy_in_bwrap_stops_inspects_and_exits(tmp_path: Path, open_debugger) -> None:
    root = _project(tmp_path / "proj")
    call_line = line_of(root / "prog.py", "# call total")
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        listing = await dbg.ok("adapters")
        assert "debugpy: usable" in listing.text
        assert "inside sandbox bwrap (root at /workspace, no network)" in listing.text

        await dbg.ok("breakpoints", file="prog.py", lines=[call_line])  # before launch
        started = time.monotonic()
        launched = await dbg.ok("launch", program="prog.py")
        took = time.monotonic() - started
        assert launched.data["outcome"] == "stopped", launched.text
        assert "inside sandbox bwrap" in launched.text
        assert f"prog.py:{call_line} verified" in launched.text
        stop = launched.data["stop"]
        assert stop["reason"] == "breakpoint"
        assert stop["frame"]["path"] == "prog.py" and stop["frame"]["line"] == call_line
        assert "cwd /workspace" in launched.text  # the debuggee's own cwd: it runs inside
        assert "/workspace" not in launched.text.replace("cwd /workspace", "")
        print(f"bwrap launch -> first stop: {took:.2f}s")

        # The debuggee is a process of the adapter's session, seen from the host.
        sids, pid = dbg.processes()
        assert pid is None  # the `process` event names a pid of the sandbox's namespace
        members = [p for s in sids for p in session_members(s)]
        assert any("/workspace/prog.py" in c for c in _cmdlines(members)), _cmdlines(members)

        stack = await dbg.ok("stack")
        frames = stack.data["frames"]
        assert [(f["name"], f["path"]) for f in frames[:2]] == [
            ("main", "prog.py"),
            ("<module>", "prog.py"),
        ]
        assert frames[0]["line"] == call_line
        assert frames[1]["line"] == len(PROGRAM.splitlines())  # the last line, `main()`
        assert f"prog.py:{call_line}" in stack.text and str(root) not in stack.text

        scopes = await dbg.ok("scopes", frame_id=frames[0]["id"])
        ref = next(s["reference"] for s in scopes.data if s["name"].startswith("Locals"))
        variables = {
            v["name"]: v for v in (await dbg.ok("variables", reference=ref)).data["variables"]
        }
        assert variables["items"]["value"] == "[0, 1, 2, 3, 4]"
        assert variables["label"]["value"] == "'sum'"

        # evaluate answers the program's own values: paths as the debuggee sees them
        assert (await dbg.ok("evaluate", expression="os.getcwd()")).text.startswith("'/workspace'")
        assert (await dbg.ok("evaluate", expression="__file__")).text.startswith(
            "'/workspace/prog.py'"
        )
        assert (await dbg.ok("evaluate", expression="total(items) * 2")).text.startswith("20")

        status = await dbg.ok("status")
        assert "sandbox: bwrap (root at /workspace, no network)" in status.text
        assert status.data["sandbox"] == "bwrap (root at /workspace, no network)"
        assert (await dbg.supervisor.status())["sandbox"] == status.data["sandbox"]

        step = await dbg.ok("step_in")
        assert step.data["stop"]["frame"] == {
            **step.data["stop"]["frame"],
            "name": "total",
            "path": "prog.py",
            "line": line_of(root / "prog.py", "acc = 0"),
        }

        done = await dbg.ok("continue")
        assert done.data["outcome"] == "exited", done.text
        assert done.data["exit_code"] == 0
        output = (await dbg.ok("output")).text
        assert "cwd /workspace" in output
        assert "sum 10 host root visible: False" in output  # /tmp inside is not the host's

        await dbg.run.aclose()
        assert_gone(members, within=10)


async def test_traceback_paths_are_relative_in_a_sandbox(tmp_path: Path, open_debugger) -> None:
    root = _project(tmp_path / "proj")
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        result = await dbg.ok("launch", program="boom.py")
        assert result.data["outcome"] == "stopped" and "KeyError" in result.text
        assert result.data["stop"]["frame"]["path"] == "boom.py"
        done = await dbg.ok("continue")
        assert done.data["outcome"] == "exited" and done.data["exit_code"] == 1
        output = (await dbg.ok("output")).text
        assert 'File "boom.py", line 2, in fail' in output, output
        assert "/workspace" not in output
        await dbg.run.aclose()


async def test_run_close_mid_stop_leaves_nothing_in_bwrap(tmp_path: Path, open_debugger) -> None:
    root = _project(tmp_path / "proj")
    call_line = line_of(root / "prog.py", "# call total")
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        await dbg.ok("breakpoints", file="prog.py", lines=[call_line])
        assert (await dbg.ok("launch", program="prog.py")).data["outcome"] == "stopped"
        sids, _ = dbg.processes()
        members = [p for s in sids for p in session_members(s)]
        assert len(members) >= 4  # bwrap, its init, the adapter, the launcher, the debuggee
        await dbg.run.aclose()
        assert_gone(members, within=10)
        assert all(session_members(s) == [] for s in sids)


async def test_adapters_and_what_they_need_are_looked_up_inside(
    tmp_path: Path, open_debugger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Binaries on the host's PATH in a folder the sandbox does not show (under the host's
    /tmp) are usable on the host and not in the sandbox, and the reason says where."""
    root = _project(tmp_path / "proj")
    (root / "fake.toml").write_text("")
    (root / "prog.fake").write_text("")
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("lt-dap-on-host", "lt-need-on-host"):
        (tools / name).write_text("#!/bin/sh\nexit 0\n")
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    binary = ThirdParty("hang")
    binary.adapter = replace(binary.adapter, id="fake-bin", command=("lt-dap-on-host",))
    needs = ThirdParty("hang")
    needs.adapter = replace(needs.adapter, id="fake-needs", requires=("lt-need-on-host",))
    plugins = (("bin", binary), ("needs", needs))

    on_host = (await (await open_debugger(root, plugins=plugins)).ok("adapters")).text
    assert "fake-bin: usable" in on_host and "fake-needs: usable" in on_host
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, plugins=plugins, ports=Ports(sandbox=sandbox))
        inside = (await dbg.ok("adapters")).text
        assert "fake-bin: not usable: binary not on PATH inside sandbox bwrap: lt-dap-on-host" in (
            inside
        )
        assert (
            "fake-needs: not usable: binary not on PATH inside sandbox bwrap: lt-need-on-host "
            "(needed to launch)"
        ) in inside
        refused = await dbg.err("launch", program="prog.fake", adapter="fake-needs")
        assert "lt-need-on-host (needed to launch)" in refused.text

    # A sandbox that cannot start anything says so, instead of "binary not on PATH"
    with bwrap_sandbox(root, bwrap="no-such-bwrap") as broken:
        dbg = await open_debugger(root, ports=Ports(sandbox=broken))
        started = time.monotonic()
        refused = await dbg.err("launch", program="prog.py")
        assert time.monotonic() - started < 30
        assert "the sandbox cannot start processes: cannot start 'no-such-bwrap'" in refused.text


async def test_the_project_venv_is_the_debuggee_inside(venv_project: Path, open_debugger) -> None:
    """The venv's python, a host path under the root in the launch config, reaches the adapter
    as the inside's path: the debuggee runs on it there."""
    root = venv_project
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        result = await dbg.ok("launch", program="app.py", args=["where"])
        if result.data["outcome"] == "stopped":  # sys.exit(3): an uncaught SystemExit
            await dbg.ok("continue")
        output = (await dbg.ok("output")).text
        assert "python: /workspace/.venv/bin/python" in output, output


def _tcp_adapter() -> Adapter:
    adapter = ThirdParty("hang").adapter
    return replace(adapter, id="fake-tcp", transport="tcp", dial_in=True, description="a TCP one")


async def test_tcp_adapters_and_attach_are_refused_at_once(tmp_path: Path, open_debugger) -> None:
    """dlv dials us on the host's 127.0.0.1, which a sandbox with its own network does not
    reach: refused before anything starts, with what to do. Attaching to a port likewise."""
    root = _project(tmp_path / "proj")
    (root / "fake.toml").write_text("")
    (root / "prog.fake").write_text("")
    plugin = ThirdParty("hang")
    plugin.adapter = _tcp_adapter()
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, plugins=(("tp", plugin),), ports=Ports(sandbox=sandbox))
        assert "fake-tcp: usable" in (await dbg.ok("adapters")).text  # found inside
        started = time.monotonic()
        refused = await dbg.err("launch", program="prog.fake")
        assert time.monotonic() - started < 30
        text = refused.text
        assert "adapter fake-tcp (a TCP one) cannot work inside sandbox bwrap" in text
        assert "talks TCP on 127.0.0.1" in text and "network=True" in text
        assert dbg.supervisor.session is None  # nothing was started

        attach = await dbg.err("attach", port=5678, adapter="debugpy")
        assert "attach to port 5678 (adapter debugpy) cannot work inside sandbox" in attach.text
        assert "network=True" in attach.text
        assert dbg.supervisor.session is None


async def test_lldb_in_bwrap_with_binaries_built_on_the_host_and_inside(
    tmp_path: Path, open_debugger
) -> None:
    """A binary built on the host names host paths in its debug info; the adapter inside is told
    the inside's, and `target.source-map` joins them. One built inside needs no mapping (one
    would break it). Either way breakpoints verify and frames come back relative."""
    require_lldb()
    root = copy_project("c", tmp_path)
    build_c(root, "-g", "-O0")
    call_line = line_of(root / "main.c", "/* call total */")
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        await dbg.ok("breakpoints", file="main.c", lines=[call_line])
        result = await dbg.ok("launch", program="app")
        assert "with lldb inside sandbox bwrap" in result.text
        assert result.data["breakpoints"][0]["verified"] is True, result.text
        frame = result.data["stop"]["frame"]
        assert (frame["path"], frame["line"]) == ("main.c", call_line)
        stack = await dbg.ok("stack")
        assert stack.data["frames"][0]["path"] == "main.c"
        assert (await dbg.ok("evaluate", expression="items[3] + items[4]")).text.startswith("7")
        sids, _ = dbg.processes()
        members = [p for s in sids for p in session_members(s)]
        assert any(c.startswith("/workspace/app") for c in _cmdlines(members)), _cmdlines(members)
        done = await dbg.ok("continue")
        assert done.data["outcome"] == "exited" and done.data["exit_code"] == 3
        assert "result 10 1199" in (await dbg.ok("output")).text

        build = ["cc", "-g", "-O0", "-o", "app_inside", "main.c"]
        cc = await spawn(sandbox, build, cwd=root, stdin=False, merge_stderr=True)
        assert await cc.wait(120) == 0, cc.stderr_tail()
        await cc.aclose()
        assert str(root).encode() not in (root / "app_inside").read_bytes()
        result = await dbg.ok("launch", program="app_inside", adapter="lldb")
        assert result.data["breakpoints"][0]["verified"] is True, result.text
        frame = result.data["stop"]["frame"]
        assert (frame["path"], frame["line"]) == ("main.c", call_line)
        await dbg.run.aclose()
        assert_gone(members, within=10)


@pytest.fixture
def go_cache() -> Path:
    """The user's Go build cache (warm from the host tests), made if missing."""
    require_delve()
    found = subprocess.run(["go", "env", "GOCACHE"], capture_output=True, text=True, timeout=60)
    cache = Path(found.stdout.strip())
    cache.mkdir(parents=True, exist_ok=True)
    return cache


async def test_delve_in_bwrap_with_the_host_network(
    tmp_path: Path, go_cache: Path, open_debugger
) -> None:
    """With the host's network the dial-in reaches us, and the frames on that socket are
    path-mapped too. The Go build cache is bound writable: the home is read-only inside."""
    root = copy_project("go", tmp_path)
    cache = go_cache
    call_line = line_of(root / "main.go", "// call total")
    with bwrap_sandbox(root, network=True, binds=[cache]) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        await dbg.ok("breakpoints", file="main.go", lines=[call_line])
        result = await dbg.ok("launch", program=".")
        assert "with delve inside sandbox bwrap" in result.text
        frame = result.data["stop"]["frame"]
        assert (frame["path"], frame["line"]) == ("main.go", call_line), result.text
        assert (await dbg.ok("evaluate", expression="len(items)")).text.startswith("100")
        sids, _ = dbg.processes()
        members = [p for s in sids for p in session_members(s)]
        done = await dbg.ok("continue")
        assert done.data["outcome"] == "exited" and done.data["exit_code"] == 3
        assert "result 10 1000" in (await dbg.ok("output")).text

        # mode exec on a binary built on the host: substitutePath maps its debug info's paths
        build = ["go", "build", "-gcflags=all=-N -l", "-o", "prebuilt", "."]
        await asyncio.to_thread(subprocess.run, build, cwd=root, check=True, timeout=300)
        result = await dbg.ok("launch", program="prebuilt", adapter="delve")
        assert result.data["breakpoints"][0]["verified"] is True, result.text
        frame = result.data["stop"]["frame"]
        assert (frame["path"], frame["line"]) == ("main.go", call_line), result.text
        await dbg.run.aclose()
        assert_gone(members, within=10)


async def test_attach_to_a_debugpy_listening_inside_with_the_host_network(
    tmp_path: Path, open_debugger
) -> None:
    """With the host network, attach reaches a `debugpy --listen` started inside the sandbox;
    that server speaks the inside's paths, and the frames are mapped as a launch's are."""
    root = _project(tmp_path / "proj")
    call_line = line_of(root / "prog.py", "# call total")
    port = free_port()
    with bwrap_sandbox(root, network=True) as sandbox:
        listen = [sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}"]
        server = await spawn(sandbox, [*listen, "--wait-for-client", "prog.py"], cwd=root)
        try:
            await wait_listening(port)
            dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
            await dbg.ok("breakpoints", file="prog.py", lines=[call_line])
            result = await dbg.ok("attach", port=port, adapter="debugpy")
            assert "attached to port" in result.text and "inside sandbox bwrap" in result.text
            stop = result.data["stop"] or await stopped_in_status(dbg)  # a late stop, under load
            assert (stop["frame"]["path"], stop["frame"]["line"]) == ("prog.py", call_line)
            cwd = await dbg.ok("evaluate", expression="os.getcwd()")
            assert cwd.text.startswith("'/workspace'")
            await dbg.ok("terminate")
            assert await server.wait(30) is not None
        finally:
            await server.aclose(grace=0)
        assert session_members(server.pid) == []


def _readline(stream: IO[str], within: float) -> str:
    """One line from the host, or fail after `within` seconds (never a hung test)."""
    ready, _, _ = select.select([stream], [], [], within)
    assert ready, f"no answer from the host within {within:g}s"
    line = stream.readline()
    assert line, "the host closed its stdout"
    return line


def test_sigkilled_host_leaves_no_debugpy_in_bwrap(tmp_path: Path) -> None:
    """A `livetools session --sandbox bwrap` stopped at a breakpoint is SIGKILLed: the jail,
    the adapter and the debuggee inside all go with it."""
    require_bwrap()
    root = _project(tmp_path / "proj")
    call_line = line_of(root / "prog.py", "# call total")
    host = sandboxed_session(root)
    left: list[int] = []
    try:
        assert host.stdin and host.stdout
        for args in (
            {"op": "breakpoints", "file": "prog.py", "lines": [call_line]},
            {"op": "launch", "program": "prog.py"},
        ):
            host.stdin.write(json.dumps({"tool": "debug", "args": args}) + "\n")
            host.stdin.flush()
            reply = json.loads(_readline(host.stdout, within=120))
            assert reply["ok"], reply
        assert reply["data"]["stop"]["frame"] == {
            **reply["data"]["stop"]["frame"],
            "line": call_line,
        }
        left = descendants(host.pid)
        assert any("/workspace/prog.py" in c for c in _cmdlines(left)), _cmdlines(left)
    finally:
        host.kill()
        host.wait(30)
    assert_gone(left, within=10)


async def test_attach_by_pid_is_refused_in_a_sandbox(tmp_path: Path, open_debugger) -> None:
    """A pid names a process of the host, not of the sandbox: refused at once, saying so."""
    root = copy_project("py", tmp_path)
    with bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        r = await dbg.err("attach", pid=os.getpid() + 1)
        assert "pid: attaching to a process by id is not available in sandbox bwrap" in r.text
