"""The Sandbox port in core: the path map, the prefix launcher, the bubblewrap adapter, the run
option and CLI flags, detection inside, and nothing left after close or a SIGKILLed host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

import livetools_testkit
from livetools import Host
from livetools.detection import detect
from livetools.ports import Ports
from livetools.procs import session_members
from livetools.sandbox import PathMap, PrefixSandbox, WrapSandbox, spawn, which, wire_maps
from livetools.sandbox.options import SandboxOptionError, sandbox_from_option
from tests.sandboxes import bwrap_sandbox, require_bwrap, sandboxed_session
from tests.support import alive, assert_gone, plugin_env

MAP = PathMap(Path("/ck/my proj"), PurePosixPath("/workspace"))


def test_paths_map_whole_segments_both_ways() -> None:
    assert MAP.to_inside("/ck/my proj/src/a.py") == "/workspace/src/a.py"
    assert MAP.to_inside("/ck/my proj") == "/workspace"
    assert MAP.to_inside("/ck/my project/a.py") == "/ck/my project/a.py"  # not a child
    assert MAP.to_inside("/usr/lib/python3") == "/usr/lib/python3"
    assert MAP.to_host("/workspace/src/a.py") == "/ck/my proj/src/a.py"
    assert MAP.to_host("/workspacex/a.py") == "/workspacex/a.py"


def test_messages_map_uris_and_paths_but_never_contents() -> None:
    message = {
        "rootUri": "file:///ck/my%20proj",
        "rootPath": "/ck/my proj",
        "workspaceFolders": [{"uri": "file:///ck/my%20proj", "name": "my proj"}],
        "textDocument": {"uri": "file:///ck/my%20proj/a.py", "text": "/ck/my proj/a.py"},
        "edits": [{"newText": "/ck/my proj"}],
        "args": ["/ck/my proj/b.py", "--flag", 3, None],
    }
    inside = MAP.outbound(message)
    assert inside["rootUri"] == "file:///workspace"
    assert inside["rootPath"] == "/workspace"
    assert inside["workspaceFolders"][0]["uri"] == "file:///workspace"
    assert inside["textDocument"] == {
        "uri": "file:///workspace/a.py",
        "text": "/ck/my proj/a.py",  # a document's text reaches the server byte for byte
    }
    assert inside["edits"] == [{"newText": "/ck/my proj"}]
    assert inside["args"] == ["/workspace/b.py", "--flag", 3, None]
    assert MAP.inbound(inside) == message
    same = PathMap(Path("/r"), PurePosixPath("/r"))
    assert same.identity and same.outbound(message) is message
    assert wire_maps(None) == (None, None)


async def test_a_prefix_launcher_gets_the_cwd_and_the_environment_changes(tmp_path: Path) -> None:
    """`env` stands in for `docker exec -i box`: a program that runs its arguments with stdio
    piped and does not carry the caller's cwd or extra environment over by itself."""
    (tmp_path / "sub").mkdir()
    sandbox = PrefixSandbox(["env"], host_root=tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    env["LT_PROBE"] = "yes"
    script = 'import os; print(os.getcwd(), os.environ.get("LT_PROBE"), os.environ.get("HOME"))'
    child = await spawn(sandbox, [sys.executable, "-c", script], cwd=tmp_path / "sub", env=env)
    try:
        assert child.stdout is not None
        out = (await child.stdout.read()).decode().split()
        assert await child.wait(30) == 0
    finally:
        await child.aclose(grace=0)
    assert out == [str(tmp_path / "sub"), "yes", "None"]
    assert "env" in sandbox.describe()


def test_the_option_shapes_and_their_errors(tmp_path: Path) -> None:
    assert sandbox_from_option(None, tmp_path) is None
    assert sandbox_from_option("none", tmp_path) is None
    wrapped = sandbox_from_option({"wrap": "docker exec -i box", "root": "/src"}, tmp_path)
    assert isinstance(wrapped, PrefixSandbox)
    assert wrapped.prefix == ("docker", "exec", "-i", "box")
    assert str(wrapped.paths.inside) == "/src"
    for bad, says in [
        ({"kind": "podman"}, "unknown kind"),
        ({"wrap": ""}, "sandbox.wrap"),
        ({"wrap": "x", "root": "rel"}, "sandbox.root"),
        (7, "expected one of"),
    ]:
        with pytest.raises(SandboxOptionError, match=says):
            sandbox_from_option(bad, tmp_path)


async def test_the_older_wrap_port_still_launches(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    async def wrap(argv: list[str]) -> list[str]:
        seen.append(argv)
        return ["env", *argv]

    host = Host(plugins=[("testkit", livetools_testkit)], entry_points=False)
    async with host.open_run(tmp_path, ports=Ports(sandbox=wrap)) as run:
        assert isinstance(run.sandbox, WrapSandbox)
        started = await run.call("stubborn", {})
        assert not started.is_error, started.text
        assert seen and seen[0][0] == sys.executable
        session = started.data["session"]
        assert session_members(session)
    assert_gone([session], within=10)


async def test_bwrap_runs_the_process_inside_at_workspace(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("inside\n")
    script = (
        "import os; print(os.getcwd()); print(open('here.txt').read().strip()); "
        f"print(os.path.exists({str(tmp_path)!r}))"
    )
    with bwrap_sandbox(tmp_path) as sandbox:
        child = await spawn(sandbox, [sys.executable, "-c", script], cwd=tmp_path)
        try:
            assert child.stdout is not None
            out = (await child.stdout.read()).decode().split()
            assert await child.wait(30) == 0, child.stderr_tail()
        finally:
            await child.aclose(grace=0)
    assert out == ["/workspace", "inside", "False"]  # the host path is not visible inside


async def test_detection_looks_inside_the_sandbox(tmp_path: Path) -> None:
    """A binary on the host's PATH in a folder the sandbox does not show is not usable there,
    and the reason says where it was looked for."""
    tools = tmp_path / "bin"
    tools.mkdir()
    tool = tools / "lt-only-on-host"
    tool.write_text("#!/bin/sh\necho lt 1.0\n")
    tool.chmod(0o755)
    path = f"{tools}{os.pathsep}{os.environ['PATH']}"
    os.environ["PATH"], old = path, os.environ["PATH"]
    try:
        on_host = await detect(tmp_path, tmp_path, markers=[], binaries=["lt-only-on-host"])
        with bwrap_sandbox(tmp_path) as sandbox:
            inside = await detect(
                tmp_path, tmp_path, markers=[], binaries=["lt-only-on-host"], sandbox=sandbox
            )
            assert await which(sandbox, ["sh"]) in ("/bin/sh", "/usr/bin/sh")
    finally:
        os.environ["PATH"] = old
    assert on_host.usable and on_host.version == "lt 1.0"
    assert not inside.usable
    assert inside.reason == "binary not on PATH inside sandbox bwrap: lt-only-on-host"


def _cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit"),
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_cli_names_the_sandbox_and_refuses_bad_flags(tmp_path: Path) -> None:
    require_bwrap()
    shown = _cli("status", "--root", str(tmp_path), "--sandbox", "bwrap", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["sandbox"] == "bwrap (root at /workspace, no network)"
    text = _cli("status", "--root", str(tmp_path), "--sandbox-wrap", "env", "--sandbox-root", "/x")
    assert "sandbox: env (prefix env, root at /x)" in text.stdout
    lone = _cli("status", "--root", str(tmp_path), "--sandbox-root", "/x")
    assert lone.returncode == 2 and "--sandbox-root goes with" in lone.stderr
    both = _cli("status", "--sandbox", "bwrap", "--sandbox-wrap", "env")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_nothing_survives_a_sigkilled_host_with_a_bwrap_sandbox(tmp_path: Path) -> None:
    """A `livetools session --sandbox bwrap` whose tool started a stubborn tree inside the
    sandbox is SIGKILLed: within 10 s no process of that tree is left on the host."""
    host = sandboxed_session(tmp_path, plugins="testkit")
    try:
        assert host.stdin and host.stdout
        host.stdin.write(json.dumps({"tool": "stubborn", "args": {}}) + "\n")
        host.stdin.flush()
        reply = json.loads(host.stdout.readline())
        assert reply["ok"], reply
        members = session_members(reply["data"]["session"])
        assert len(members) >= 3 and all(alive(p) for p in members)  # bwrap, child, grandchild
    finally:
        host.kill()
        host.wait(10)
    assert_gone(members, within=10)


async def test_run_close_leaves_nothing_of_a_bwrap_tree(tmp_path: Path) -> None:
    require_bwrap()
    host = Host(plugins=[("testkit", livetools_testkit)], entry_points=False)
    async with host.open_run(tmp_path, options={"sandbox": "bwrap"}) as run:
        sandbox = run.sandbox
        assert sandbox is not None and sandbox.shared_dir is not None
        started = await run.call("stubborn", {})
        assert not started.is_error, started.text
        members = session_members(started.data["session"])
        assert len(members) >= 3
    assert_gone(members, within=10)
    assert not sandbox.shared_dir.exists()  # the run built it from the option, the run removed it


async def test_a_process_can_be_signalled(tmp_path: Path) -> None:
    """The protocol's `send_signal` reaches the process itself: a local child, here."""
    child = await spawn(None, ["sleep", "600"], cwd=tmp_path, stdin=False)
    try:
        child.send_signal(signal.SIGTERM)
        assert await child.wait(30) == -signal.SIGTERM
        child.send_signal(signal.SIGTERM)  # gone: quiet
    finally:
        await child.aclose(grace=0)
