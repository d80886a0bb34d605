"""`eval` through a Jupyter Kernel Gateway next to the same call on a local kernel.

Starts `jupyter-kernelgateway` (the eval test extra) on a loopback port with a token, then opens
two runs: one whose python kernel is on the gateway (REST + websocket), one with the host's own
ipykernel (unix sockets). Interleaved, N times each: `run.call("eval", {"code": "1+1"})`. Then
the bridge: one cell per run makes M `tool("echo", ...)` calls, timed inside the kernel (the
request and its answer both cross the gateway's websocket relay).

    uv run python bench/eval_gateway.py [--repeats 200] [--bridge 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "plugins"
sys.path.insert(0, str(TESTS))

import livetools_eval  # noqa: E402
import livetools_testkit  # noqa: E402
from livetools import Host, Run  # noqa: E402

DESC = "add one and one for the benchmark"
TOKEN = "bench-token"
BRIDGE_CELL = (
    "import time, statistics\nts = []\n"
    "for i in range({n}):\n"
    "    t = time.perf_counter(); tool('echo', {{'text': 'x'}})\n"
    "    ts.append(time.perf_counter() - t)\n"
    "print(statistics.median(ts), statistics.quantiles(ts, n=10)[-1], min(ts))"
)


def start_gateway(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("jupyter-kernelgateway", path=str(Path(sys.executable).parent))
    if binary is None:
        sys.exit("jupyter-kernelgateway is missing: uv sync (the eval test extra has it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            binary,
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={port}",
            f"--KernelGatewayApp.auth_token={TOKEN}",
        ],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    t0 = time.monotonic()
    while time.monotonic() - t0 < 90:
        request = urllib.request.Request(
            url + "/api/kernelspecs", headers={"Authorization": f"token {TOKEN}"}
        )
        with contextlib.suppress(OSError):
            urllib.request.urlopen(request, timeout=2).close()
            print(f"gateway up in {time.monotonic() - t0:.1f}s at {url}")
            return proc, url
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    sys.exit("the gateway did not answer within 90s")


def ms(values: list[float]) -> str:
    qs = statistics.quantiles(values, n=10)
    return f"median {statistics.median(values) * 1e3:6.2f} ms  p90 {qs[-1] * 1e3:6.2f} ms"


async def one_plus_one(run: Run) -> float:
    t0 = time.perf_counter()
    result = await run.call("eval", {"code": "1+1", "description": DESC})
    elapsed = time.perf_counter() - t0
    assert result.text == "2", result.text
    return elapsed


async def raw_socket(url: str) -> tuple[Any, str]:
    """A kernel of its own on the gateway and one websocket to it: the minimal client, the
    anchor (a second socket on eval's kernel would get eval's iopub traffic too)."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {TOKEN}"}
    http = AsyncHTTPClient(force_instance=True)
    started = await http.fetch(
        url + "/api/kernels", method="POST", headers=headers, body='{"name": "python3"}'
    )
    http.close()
    kernel_id = json.loads(started.body)["id"]
    ws_url = f"ws{url[4:]}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4().hex}"
    return await websocket_connect(HTTPRequest(ws_url, headers=headers)), kernel_id


async def delete_kernel(url: str, kernel_id: str) -> None:
    from tornado.httpclient import AsyncHTTPClient

    http = AsyncHTTPClient(force_instance=True)
    headers = {"Authorization": f"token {TOKEN}"}
    await http.fetch(f"{url}/api/kernels/{kernel_id}", method="DELETE", headers=headers)
    http.close()


async def raw_round_trip(ws: Any, quickack: bool = True) -> float:
    """execute_request `1+1`, then read until its execute_reply and its idle status."""
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "bench"}
    header.update(session="raw", date=datetime.now(UTC).isoformat(), version="5.3")
    content = {"code": "1+1", "silent": False, "store_history": True, "user_expressions": {}}
    content.update(allow_stdin=False, stop_on_error=False)
    msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
    sock = ws.protocol.stream.socket
    t0 = time.perf_counter()
    await ws.write_message(json.dumps({**msg, "channel": "shell", "buffers": []}))
    replied = idle = False
    while not (replied and idle):
        raw = await ws.read_message()
        if quickack:  # ack each frame at once, as eval's client does (see gateway._quickack)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        got = json.loads(raw)
        if got["parent_header"].get("msg_id") != msg_id:
            continue
        kind = got["header"]["msg_type"]
        replied = replied or kind == "execute_reply"
        idle = idle or (kind == "status" and got["content"]["execution_state"] == "idle")
    return time.perf_counter() - t0


async def bridge(run: Run, n: int) -> tuple[float, float, float]:
    out = await run.call("eval", {"code": BRIDGE_CELL.format(n=n), "description": DESC})
    median, p90, low = (float(v) for v in out.text.split()[-3:])
    return median, p90, low


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--bridge", type=int, default=200)
    args = parser.parse_args()
    host = Host(
        plugins=[("testkit", livetools_testkit), ("eval", livetools_eval)], entry_points=False
    )
    with tempfile.TemporaryDirectory() as root:
        proc, url = start_gateway(Path(root))
        try:
            gateway_options = {"eval_gateway": url, "eval_gateway_token": TOKEN}
            async with (
                host.open_run(root, options=gateway_options) as remote,
                host.open_run(root) as local,
            ):
                for name, run in (("gateway", remote), ("host", local)):
                    t0 = time.perf_counter()
                    await one_plus_one(run)
                    first = time.perf_counter() - t0
                    print(f"first cell on the {name} (kernel start + helpers): {first:.2f}s")
                ws, raw_kernel = await raw_socket(url)
                for _ in range(20):  # warm every path
                    await one_plus_one(remote)
                    await raw_round_trip(ws)
                    await one_plus_one(local)
                gw_times: list[float] = []
                raw_times: list[float] = []
                naive_times: list[float] = []
                local_times: list[float] = []
                for _ in range(args.repeats):
                    gw_times.append(await one_plus_one(remote))
                    raw_times.append(await raw_round_trip(ws))
                    naive_times.append(await raw_round_trip(ws, quickack=False))
                    local_times.append(await one_plus_one(local))
                ws.close()
                await delete_kernel(url, raw_kernel)
                median = statistics.median
                print(f"[python] 1+1, {args.repeats} interleaved")
                print(f"  eval, gateway kernel      : {ms(gw_times)}")
                print(f"  raw websocket, own kernel : {ms(raw_times)}")
                print(f"  same, delayed ACKs (naive): {ms(naive_times)}")
                print(f"  eval, local kernel        : {ms(local_times)}")
                print(
                    f"  ratio gateway eval / raw websocket: "
                    f"{median(gw_times) / median(raw_times):.2f}x;  gateway eval / local eval: "
                    f"{median(gw_times) / median(local_times):.2f}x"
                )
                for name, run in (("gateway", remote), ("local", local)):
                    median, p90, low = await bridge(run, args.bridge)
                    print(
                        f"  bridge {name:7} ({args.bridge} tool('echo') in one cell, in-kernel): "
                        f"median {median * 1e3:6.2f} ms  p90 {p90 * 1e3:6.2f} ms  "
                        f"min {low * 1e3:6.2f} ms"
                    )
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":
    asyncio.run(main())
