"""The eval tool with its kernels on a real Jupyter Kernel Gateway (PyPI `jupyter-kernel-gateway`,
the eval `test` extra), started here on a loopback port with a token: state, rich output, the
bridge over the relayed stdin channel, interrupt, idle budget, restart, death, a gateway that
goes away mid-cell and comes back, configuration errors, and no kernel left on the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from livetools.procs import process_state
from livetools_eval.gateway_config import ENV_TOKEN, ENV_URL, GatewaySettings, load
from tests.eval.support import cell, open_run

TOKEN = "lt-test-token"


def gateway_binary() -> str:
    found = shutil.which("jupyter-kernelgateway", path=str(Path(sys.executable).parent))
    if found is None:
        if os.environ.get("LIVETOOLS_REQUIRE_SERVERS") == "1":
            pytest.fail("jupyter-kernelgateway is missing: uv sync (eval's test extra)")
        pytest.skip("jupyter-kernelgateway is missing: uv sync (the eval test extra has it)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gateway:
    """A jupyter-kernelgateway process in its own session (its kernels get their own sessions
    too and exit when it dies)."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 90.0) -> Gateway:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "gateway.log", "ab")  # noqa: SIM115 - the process keeps it
        self.proc = subprocess.Popen(
            [
                gateway_binary(),
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={self.port}",
                f"--KernelGatewayApp.auth_token={TOKEN}",
                "--JupyterWebsocketPersonality.list_kernels=True",
                "--KernelGatewayApp.port_retries=0",
            ],
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the gateway exited: {(self.folder / 'gateway.log').read_text()}")
            with contextlib.suppress(OSError):
                self.get("/api/kernelspecs")
                return self
            time.sleep(0.2)
        pytest.fail(f"the gateway did not answer in {wait}s")

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            self.url + path, headers={"Authorization": f"token {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def kernels(self) -> list[dict[str, Any]]:
        return list(self.get("/api/kernels"))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        self.proc = None


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = Gateway(tmp_path_factory.mktemp("gateway")).start()
    try:
        yield gw
    finally:
        gw.stop()


def options(gw: Gateway, **more: Any) -> dict[str, Any]:
    return {"eval_gateway": gw.url, "eval_gateway_token": TOKEN, **more}


async def until(check: Any, limit: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} not reached within {limit}s")


def gone(pid: int) -> bool:
    return process_state(pid) in (None, "Z", "X")


async def test_state_rich_output_bridge_and_nothing_left(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Configured the way a project would: URL in pyproject.toml, token in the environment.
    (tmp_path / "pyproject.toml").write_text(f'[tool.livetools.eval]\ngateway = "{gateway.url}"\n')
    monkeypatch.setenv(ENV_TOKEN, TOKEN)
    (tmp_path / "notes.txt").write_text("from the host\n")
    before = {k["id"] for k in gateway.kernels()}
    async with open_run(tmp_path) as run:
        first = await cell(run, "import os\nx = 41\nx + 1")
        assert (first.text, first.is_error) == ("42", False), first.text
        second = await cell(run, "print('x is', x)\nx * 2")
        assert second.text == "x is 41\n82"
        assert second.data["execution_count"] == 2
        pool = run.resource("eval")
        kernel = pool.live["python"]
        assert kernel.kernel_id in {k["id"] for k in gateway.kernels()}
        # status probes the gateway with a short bound; on a loaded machine, ask again.
        status: dict[str, Any] = {}
        for _ in range(10):
            status = (await pool.status())["kernels"]["python"]
            if status["usable"]:
                break
        assert status["gateway"] == gateway.url and status["usable"] and status["running"], status

        table = await cell(
            run,
            "import pandas as pd\ndf = pd.DataFrame({'name': ['ada', 'bob'], 'n': [3, 4]})\ndf",
        )
        assert table.text.splitlines()[0].split() == ["name", "n"], table.text
        assert any("<table" in r.get("text/html", "") for r in table.data["rich"])
        plot = await cell(run, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
        assert len(plot.images) == 1 and plot.images[0][:4] == b"\x89PNG", plot.text

        bridged = await cell(run, "r = tool('read', {'path': 'notes.txt'})\nprint(r.text, r.ok)")
        assert bridged.text == "from the host\n True", bridged.text
        batch = await cell(
            run,
            "rs = tools([('read', {'path': 'notes.txt'}), ('read', {'path': 'nope'})])\n"
            "[r.ok for r in rs]",
        )
        assert batch.text == "[True, False]", batch.text
        refused = await cell(run, "tool('read', {'path': 'nope'})")
        assert refused.is_error and "ToolError" in refused.text
        typed = await cell(run, "input('name? ')")
        assert typed.is_error and "EOFError" in typed.text
        mine = kernel.kernel_id
    # run.aclose() deleted the kernel on the gateway.
    await until(lambda: mine not in {k["id"] for k in gateway.kernels()}, what="kernel deleted")
    assert {k["id"] for k in gateway.kernels()} <= before


async def test_interrupt_keeps_state_idle_budget_restarts(gateway: Gateway, tmp_path: Path) -> None:
    async with open_run(
        tmp_path, **options(gateway, eval_idle_timeout=1.5, eval_interrupt_grace=5)
    ) as run:
        await cell(run, "x = 7")
        slept = await cell(run, "import time\nprint('going', flush=True)\ntime.sleep(120)")
        assert slept.data["status"] == "interrupted", slept.text
        assert "going" in slept.text and "KeyboardInterrupt" in slept.text
        assert (await cell(run, "x")).text == "7"  # state kept
        old = run.resource("eval").live["python"].kernel_id

        stubborn = await cell(
            run,
            "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(120)",
        )
        assert stubborn.data["status"] == "restarted", stubborn.text
        assert "state" in stubborn.text and "lost" in stubborn.text
        await until(lambda: old not in {k["id"] for k in gateway.kernels()}, what="old deleted")
        fresh = await cell(run, "'x' in dir()")
        assert fresh.text.endswith("False") and "fresh python kernel" in fresh.text, fresh.text


async def test_reset_and_a_kernel_that_dies(gateway: Gateway, tmp_path: Path) -> None:
    async with open_run(tmp_path, **options(gateway)) as run:
        await cell(run, "x = 1")
        old = run.resource("eval").live["python"].kernel_id
        reset = await cell(run, "'x' in dir()", reset=True)
        assert "reset" in reset.text and reset.text.endswith("False"), reset.text
        await until(lambda: old not in {k["id"] for k in gateway.kernels()}, what="reset deleted")

        await cell(run, "y = 2")
        died = await cell(run, "import os\nos._exit(3)")
        assert died.is_error and died.data["status"] == "died", died.text
        assert "died" in died.text and "next call starts a fresh kernel" in died.text
        after = await cell(run, "'y' in dir()")
        assert after.text.endswith("False") and "fresh python kernel" in after.text, after.text


async def test_configuration_errors_name_the_setting(gateway: Gateway, tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_gateway=gateway.url, eval_gateway_token="wrong") as run:
        wrong = await cell(run, "1+1")
        assert wrong.is_error and ("HTTP 403" in wrong.text or "HTTP 401" in wrong.text), wrong.text
        assert "eval_gateway_token" in wrong.text and ENV_TOKEN in wrong.text
        assert "the token from eval_gateway_token" in wrong.text
        status = (await run.resource("eval").status())["kernels"]["python"]
        assert not status["usable"] and "refused" in status["reason"]
    async with open_run(tmp_path, eval_gateway=gateway.url) as run:
        missing = await cell(run, "1+1")
        assert missing.is_error and "refused no token" in missing.text, missing.text
    async with open_run(
        tmp_path, **options(gateway, eval_gateway_kernels={"python": "nope"})
    ) as run:
        nope = await cell(run, "1+1")
        assert nope.is_error and "no kernelspec 'nope'" in nope.text, nope.text
        assert "python3" in nope.text and "eval_gateway_kernels" in nope.text
    closed = f"http://127.0.0.1:{free_port()}"
    async with open_run(tmp_path, eval_gateway=closed, eval_gateway_token=TOKEN) as run:
        away = await cell(run, "1+1")
        assert away.is_error and f"cannot reach the Jupyter gateway at {closed}" in away.text
        assert "eval_gateway" in away.text
    async with open_run(tmp_path, eval_gateway="localhost:8888") as run:
        bad = await cell(run, "1+1")
        assert bad.is_error and "not an http(s) URL" in bad.text, bad.text
    async with open_run(tmp_path, eval_gateway=False) as run:
        assert run.resource("eval").live == {} and not hasattr(
            run.resource("eval").specs["python"], "url"
        )


async def test_a_dropped_socket_mid_cell_is_reattached(gateway: Gateway, tmp_path: Path) -> None:
    """The network drops our websocket while a cell runs: the kernel lives on, we reconnect
    with the same session id and the gateway replays what the cell printed meanwhile."""
    async with open_run(tmp_path, **options(gateway)) as run:
        await cell(run, "x = 5")
        kernel = run.resource("eval").live["python"]

        async def drop_when_busy() -> None:
            def busy() -> bool:
                state = gateway.get(f"/api/kernels/{kernel.kernel_id}")["execution_state"]
                return state == "busy"

            await until(busy, what="cell running")
            kernel._ws.close()

        dropper = asyncio.ensure_future(drop_when_busy())
        code = "import time\nprint('a', flush=True)\ntime.sleep(1.5)\nprint('b')\nx + 1"
        result = await cell(run, code)
        await dropper
        assert (result.text, result.data["status"]) == ("a\nb\n6", "ok"), result.text
        assert (await cell(run, "x")).text == "5"


async def test_a_hung_gateway_that_recovers_keeps_the_kernel(
    gateway: Gateway, tmp_path: Path
) -> None:
    """The gateway stops answering (SIGSTOP) and our socket drops: the call after it says the
    connection is gone; once the gateway answers again, the next call reconnects, state kept."""
    assert gateway.proc is not None
    async with open_run(tmp_path, **options(gateway)) as run:
        await cell(run, "x = 5")
        kernel = run.resource("eval").live["python"]
        os.kill(gateway.proc.pid, signal.SIGSTOP)
        try:
            kernel._ws.close()
            await until(lambda: not kernel.alive and kernel._attached.is_set(), what="given up")
        finally:
            os.kill(gateway.proc.pid, signal.SIGCONT)
        back = await cell(run, "x + 1")
        assert back.text.endswith("6") and "reconnected" in back.text, back.text
        assert "state (variables, imports) is kept" in back.text and not back.is_error


async def test_gateway_that_goes_away_mid_cell(tmp_path: Path) -> None:
    gw = Gateway(tmp_path / "gw").start()
    try:
        async with open_run(tmp_path, **options(gw)) as run:
            pid = int((await cell(run, "import os\nos.getpid()")).text)
            kernel_id = run.resource("eval").live["python"].kernel_id

            async def kill_when_busy() -> None:
                def busy() -> bool:
                    with contextlib.suppress(OSError, ValueError):
                        return gw.get(f"/api/kernels/{kernel_id}")["execution_state"] == "busy"
                    return False

                await until(busy, what="cell running")
                gw.stop(signal.SIGKILL)

            killer = asyncio.ensure_future(kill_when_busy())
            t0 = time.monotonic()
            lost = await cell(run, "import time\ntime.sleep(60)")
            await killer
            assert time.monotonic() - t0 < 40
            assert lost.is_error and lost.data["status"] == "disconnected", lost.text
            assert f"Jupyter gateway at {gw.url}" in lost.text and "next call" in lost.text
            # Its kernels notice their parent is gone and exit.
            await until(lambda: gone(pid), what="orphaned kernel exit")

            down = await cell(run, "1+1")
            assert down.is_error and f"cannot reach the Jupyter gateway at {gw.url}" in down.text
            assert "start it" in down.text

            gw.start()  # back on the same port, without the old kernel
            again = await cell(run, "1+1")
            assert again.text.endswith("2") and not again.is_error, again.text
            assert "fresh python kernel" in again.text and "no longer has it" in again.text
            last = run.resource("eval").live["python"].kernel_id
        assert last not in {k["id"] for k in gw.kernels()}
    finally:
        gw.stop()


def test_settings_sources_and_precedence(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.livetools.eval]\ngateway = "http://a:1"\ngateway_token = "p"\n'
        'gateway_kernels = {python = "py_k8s", r = "ir"}\ngateway_tokn = 1\n'
    )
    (tmp_path / ".livetools.toml").write_text('[eval]\ngateway = "http://b:2"\n')
    got = load(tmp_path, {}, {})
    assert any("gateway_tokn" in p for p in got.problems)
    assert (got.url, got.token, got.kernels) == ("http://b:2", "p", {"python": "py_k8s", "r": "ir"})
    assert got.url_from == "gateway in .livetools.toml [eval]"
    env = {ENV_URL: "http://c:3", ENV_TOKEN: "e", "LIVETOOLS_EVAL_GATEWAY_KERNELS": "python=x"}
    got = load(tmp_path, {}, env)
    assert (got.url, got.token, got.kernels, got.token_from) == (
        "http://c:3",
        "e",
        {"python": "x"},
        ENV_TOKEN,
    )
    got = load(tmp_path, {"eval_gateway": "http://d:4", "eval_gateway_token": "o"}, env)
    assert (got.url, got.token, got.url_from) == ("http://d:4", "o", "eval_gateway")
    assert load(tmp_path, {"eval_gateway": False}, env) == GatewaySettings()
    bad = load(tmp_path, {"eval_gateway_kernels": "python"}, {})
    assert any("eval_gateway_kernels" in p for p in bad.problems)
