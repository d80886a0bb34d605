"""Kernels inside a real bubblewrap sandbox: the root at /workspace, no network, unix sockets in the
sandbox's shared folder, the bridge, interrupt, reset, and nothing left after close or a SIGKILLed
host. Processes are found on the host by a token in their environment (pids inside are another
namespace's)."""

from __future__ import annotations

import ast
import json
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from livetools import Ports, hookimpl
from livetools_eval import KernelSpec, KernelUnavailable
from livetools_eval.builtin import builtin_kernels, deno_argv
from tests.eval.support import cell, host, kernel_pids, open_run
from tests.sandboxes import TOKEN_ENV, bwrap_sandbox, marked, sandboxed_session
from tests.support import alive, assert_gone, missing


def cmdline(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    """A token every kernel of the test inherits (passed inside by name: the sandbox's environment
    is an allow-list)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_ENV, value)
    monkeypatch.setenv("LIVETOOLS_SANDBOX_ENV", TOKEN_ENV)  # the allow-list keeps it out else
    return value


async def test_cells_run_in_the_sandbox_root_without_network(tmp_path: Path, token: str) -> None:
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(tmp_path, ports=Ports(sandbox=sandbox)) as run:
            status = await run.resource("eval").status()
            assert status["kernels"]["python"]["usable"] is True, status
            if "command" in status["kernels"]["javascript"]:  # Deno, and the relay's python
                assert status["kernels"]["javascript"]["usable"] is True, status
            first = await cell(run, "import os\nx = 41\nos.getcwd()")
            assert (first.is_error, first.text) == (False, "'/workspace'"), first.text
            assert (await cell(run, "x + 1")).text == "42"
            wrote = await cell(run, "open('made.txt', 'w').write('inside')")
            assert not wrote.is_error, wrote.text
            assert (tmp_path / "made.txt").read_text() == "inside"
            # The connection file and sockets live in the shared folder, reachable from inside.
            conn = await cell(
                run,
                "from ipykernel.kernelapp import IPKernelApp\n"
                "a = IPKernelApp.instance()\n(a.transport, a.connection_file)",
            )
            transport, path = ast.literal_eval(conn.text)
            assert transport == "ipc" and sandbox.shared_dir is not None
            assert Path(path).parent.parent == sandbox.shared_dir
            t0 = time.monotonic()
            net = await cell(
                run,
                "import socket\ns = socket.socket()\ns.settimeout(20)\n"
                "try:\n    s.connect(('192.0.2.1', 80))\nexcept OSError as e:\n"
                "    print('refused', e.errno)",
            )
            assert net.text.startswith("refused"), net.text
            assert time.monotonic() - t0 < 15  # unreachable at once, not a 20 s timeout
            pids = marked(token)
            assert pids and all(alive(p) for p in pids)
        assert_gone(pids, within=10)


async def test_bridge_reaches_the_runs_tools(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(tmp_path, ports=Ports(sandbox=sandbox)) as run:
            read = await cell(run, "tool('read', {'path': 'notes.txt'}).text.splitlines()")
            assert read.text == "['alpha', 'beta']", read.text
            wrote = await cell(run, "tool('touch', {'path': 'x.txt', 'content': 'hi'}).text")
            assert "wrote x.txt" in wrote.text
            assert (tmp_path / "x.txt").read_text() == "hi"
            batch = await cell(run, "[r.text for r in tools([('stall', {'seconds': 0.1})] * 3)]")
            assert batch.text == "['slept 0.1', 'slept 0.1', 'slept 0.1']", batch.text


async def test_interrupt_reaches_the_kernel_and_reset_starts_clean(
    tmp_path: Path, token: str
) -> None:
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(tmp_path, ports=Ports(sandbox=sandbox), eval_idle_timeout=1.0) as run:
            await cell(run, "x = 7")
            t0 = time.monotonic()
            busy = await cell(run, "while True:\n    pass")
            assert time.monotonic() - t0 < 60
            assert busy.is_error and busy.data["status"] == "interrupted", busy.text
            # SIGINT went to the kernel itself, not to bwrap (which would have died of it).
            kernel = run.resource("eval").live["python"]
            inside = kernel._interrupt_pid()
            assert inside is not None and inside != kernel.pid
            assert b"ipykernel" in cmdline(inside)
            kept = await cell(run, "x")
            assert kept.text == "7" and "fresh" not in kept.text, kept.text  # same kernel
            old = marked(token)
            reset = await cell(run, "'x' in dir()", reset=True)
            assert "reset" in reset.text and reset.text.endswith("False"), reset.text
            assert_gone(old, within=10)
            cwd = await cell(run, "import os\nos.getcwd()")
            assert cwd.text == "'/workspace'"
            assert len(kernel_pids(run)) == 2
            pids = marked(token)
        assert_gone(pids, within=10)


# A `livetools session --sandbox bwrap` with the eval plugin: runs one cell, then is SIGKILLed.
def test_nothing_survives_a_sigkilled_host(tmp_path: Path, token: str) -> None:
    host = sandboxed_session(tmp_path, plugins="eval")
    pids: list[int] = []
    try:
        assert host.stdin and host.stdout
        code = "import os, subprocess\np = subprocess.Popen(['sleep', '300'])\nos.getcwd()"
        call = {
            "tool": "eval",
            "args": {"code": code, "description": "start a sleeper process inside the sandbox"},
        }
        host.stdin.write(json.dumps(call) + "\n")
        host.stdin.flush()
        reply = json.loads(host.stdout.readline())
        assert reply["ok"] and reply["text"] == "'/workspace'", reply
        pids = marked(token)
        assert len(pids) >= 3, pids  # bwrap (twice), the kernel, the sleeper
    finally:
        host.kill()
        host.wait(10)
    assert_gone(pids, within=10)


class TcpPython:
    """ipykernel told to speak TCP only, as most installed kernelspecs do: it reaches the host
    through the relay, and its signal-mode interrupt through the relay's forwarding."""

    @hookimpl
    def livetools_eval_kernels(self, run: object) -> list[KernelSpec]:
        return [replace(builtin_kernels()[0], name="tcp-ipykernel", transport="tcp")]


async def test_a_tcp_only_kernel_is_relayed_over_the_shared_folder(
    tmp_path: Path, token: str
) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(
            tmp_path,
            host_=host(("tcp", TcpPython())),
            ports=Ports(sandbox=sandbox),
            eval_idle_timeout=1.0,
        ) as run:
            first = await cell(run, "import os\nx = 3\nos.getcwd()")
            assert first.text == "'/workspace'", first.text
            kernel = run.resource("eval").live["python"]
            assert kernel.spec.name == "tcp-ipykernel"
            conn = await cell(
                run, "from ipykernel.kernelapp import IPKernelApp\nIPKernelApp.instance().transport"
            )
            assert conn.text == "'tcp'"  # the kernel's side; ours is a unix socket
            read = await cell(run, "tool('read', {'path': 'notes.txt'}).text")
            assert read.text == "'alpha\\n'", read.text
            busy = await cell(run, "while True:\n    pass")
            assert busy.data["status"] == "interrupted", busy.text
            assert (await cell(run, "x")).text == "3"
            pids = marked(token)
        assert_gone(pids, within=10)


async def test_deno_runs_inside_through_the_relay(tmp_path: Path, token: str) -> None:
    try:
        deno_argv()
    except KernelUnavailable as exc:
        missing(str(exc))
    (tmp_path / "notes.txt").write_text("alpha\n")
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(tmp_path, ports=Ports(sandbox=sandbox), eval_idle_timeout=1.0) as run:
            first = await cell(run, "let x = 5;\nDeno.cwd()", language="javascript")
            assert first.text == '"/workspace"', first.text
            read = await cell(run, "tool('read', {path: 'notes.txt'}).text", language="javascript")
            assert read.text == '"alpha\\n"', read.text
            net = await cell(
                run,
                "await fetch('http://192.0.2.1/').catch((e) => 'failed')",
                language="javascript",
            )
            assert net.text == '"failed"', net.text
            busy = await cell(run, "while (true) {}", language="javascript")
            assert busy.data["status"] == "interrupted", busy.text
            assert (await cell(run, "x + 1", language="javascript")).text == "6"
            pids = marked(token)
        assert_gone(pids, within=10)


class Absent:
    """Kernels whose program exists on the host's PATH check but not inside the sandbox."""

    @hookimpl
    def livetools_eval_kernels(self, run: object) -> list[KernelSpec]:
        argv = ["/nonexistent/kernel", "{connection_file}"]
        return [
            KernelSpec("python", "absent-ipc", argv, transport="ipc"),
            KernelSpec("javascript", "absent-tcp", argv, transport="tcp"),
        ]


async def test_a_kernel_missing_inside_is_a_clear_error(tmp_path: Path) -> None:
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(
            tmp_path, host_=host(("absent", Absent())), ports=Ports(sandbox=sandbox)
        ) as run:
            status = (await run.resource("eval").status())["kernels"]
            assert status["python"]["usable"] is False
            assert status["python"]["reason"] == (
                "/nonexistent/kernel not found inside sandbox bwrap"
            )
            direct = await cell(run, "1")
            assert direct.is_error and "could not start the python kernel" in direct.text
            assert "/nonexistent/kernel" in direct.text, direct.text  # bwrap's own words
            relayed = await cell(run, "1", language="javascript")
            assert relayed.is_error and "cannot start the kernel" in relayed.text, relayed.text


async def test_interrupt_as_a_message_when_the_kernel_is_not_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A container's kernel is no process of ours: its interrupt goes as an interrupt_request."""
    from livetools_eval import kernel as kernel_module

    monkeypatch.setattr(kernel_module, "inside_pid", lambda launcher, program: None)
    with bwrap_sandbox(tmp_path) as sandbox:
        async with open_run(tmp_path, ports=Ports(sandbox=sandbox), eval_idle_timeout=1.0) as run:
            await cell(run, "x = 7")
            busy = await cell(run, "while True:\n    pass")
            assert busy.data["status"] == "interrupted", busy.text
            assert (await cell(run, "x")).text == "7"
