"""Latency of the `eval` tool against a raw jupyter_client round trip on the same kernel.

Per language (python = ipykernel, javascript = Deno), one run starts the kernel through `eval`;
a second, bare AsyncKernelClient connects to that same kernel. Interleaved, N times each:
  eval: `run.call("eval", {"code": "1+1", ...})` — validation, idle budget, bridge wiring,
        output rendering, result;
  raw:  `execute("1+1")`, then read until the execute_reply and the idle status of that request
        (the minimal correct client; it skips Deno's short settle after idle).
Then the bridge: one cell makes M `tool("echo", ...)` calls, timed inside the kernel per call,
next to M direct `run.call("echo", ...)` from the host (what the call itself costs).

    uv run python bench/eval_latency.py [--repeats 200] [--bridge 200]
        [--languages python,javascript]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "plugins"
sys.path.insert(0, str(TESTS))

import livetools_eval  # noqa: E402
import livetools_testkit  # noqa: E402
from livetools import Host, Run  # noqa: E402

DESC = "add one and one for the benchmark"


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


async def raw_client(run: Run, language: str) -> Any:
    from jupyter_client.asynchronous.client import AsyncKernelClient

    kernel = run.resource("eval").live[language]
    info = read_json(kernel._workdir / "kernel.json")
    info.pop("kernel_name", None)
    client = AsyncKernelClient()
    client.load_connection_info(info)
    client.start_channels(hb=False)
    await client.wait_for_ready(timeout=30)
    return client


async def raw_round_trip(client: Any, code: str) -> float:
    """Shell and iopub read concurrently, as a minimal correct client does."""
    t0 = time.perf_counter()
    msg_id = client.execute(code, allow_stdin=False, stop_on_error=False)

    async def shell() -> None:
        while True:
            reply = await client.get_shell_msg()
            if reply["parent_header"].get("msg_id") == msg_id:
                return

    async def iopub() -> None:
        while True:
            msg = await client.get_iopub_msg()
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
            ):
                return

    await asyncio.gather(shell(), iopub())
    return time.perf_counter() - t0


def ms(values: list[float]) -> str:
    qs = statistics.quantiles(values, n=10)
    return f"median {statistics.median(values) * 1e3:6.2f} ms  p90 {qs[-1] * 1e3:6.2f} ms"


async def bench_language(language: str, repeats: int, bridge: int) -> None:
    host = Host(
        plugins=[("testkit", livetools_testkit), ("eval", livetools_eval)], entry_points=False
    )
    with tempfile.TemporaryDirectory() as root:
        async with host.open_run(root) as run:
            first = await run.call(
                "eval", {"code": "1+1", "description": DESC, "language": language}
            )
            assert first.text == "2", first.text
            client = await raw_client(run, language)
            tool_times: list[float] = []
            raw_times: list[float] = []
            for _ in range(20):  # warm both paths
                await run.call("eval", {"code": "1+1", "description": DESC, "language": language})
                await raw_round_trip(client, "1+1")
            for _ in range(repeats):
                t0 = time.perf_counter()
                result = await run.call(
                    "eval", {"code": "1+1", "description": DESC, "language": language}
                )
                tool_times.append(time.perf_counter() - t0)
                assert result.text == "2", result.text
                raw_times.append(await raw_round_trip(client, "1+1"))
            client.stop_channels()
            ratio = statistics.median(tool_times) / statistics.median(raw_times)
            print(f"[{language}] 1+1 round trip, {repeats} interleaved")
            print(f"  eval tool : {ms(tool_times)}")
            print(f"  raw client: {ms(raw_times)}")
            print(f"  ratio (median eval / median raw): {ratio:.2f}x")

            if language == "python":
                cell = (
                    "import time, statistics\nts = []\n"
                    f"for i in range({bridge}):\n"
                    "    t = time.perf_counter(); tool('echo', {'text': 'x'}); "
                    "ts.append(time.perf_counter() - t)\n"
                    "print(statistics.median(ts), statistics.quantiles(ts, n=10)[-1], min(ts))"
                )
            else:
                cell = (
                    "const ts = [];\n"
                    f"for (let i = 0; i < {bridge}; i++) {{\n"
                    "  const t = performance.now(); tool('echo', {text: 'x'}); "
                    "ts.push((performance.now() - t) / 1000);\n}\n"
                    "ts.sort((a, b) => a - b);\n"
                    "console.log(ts[ts.length >> 1], ts[Math.floor(ts.length * 0.9)], ts[0])"
                )
            out = await run.call("eval", {"code": cell, "description": DESC, "language": language})
            median, p90, low = (float(v) for v in out.text.split())
            direct: list[float] = []
            for _ in range(bridge):
                t0 = time.perf_counter()
                await run.call("echo", {"text": "x"})
                direct.append(time.perf_counter() - t0)
            print(
                f"[{language}] bridge: {bridge} tool('echo') calls from one cell, timed in-kernel"
            )
            print(
                f"  bridge call: median {median * 1e3:6.2f} ms  p90 {p90 * 1e3:6.2f} ms  "
                f"min {low * 1e3:6.2f} ms"
            )
            print(f"  direct run.call('echo') on the host: {ms(direct)}")
            overhead = (median - statistics.median(direct)) * 1e3
            print(f"  bridge overhead over a direct call: {overhead:.2f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--bridge", type=int, default=200)
    parser.add_argument("--languages", default="python,javascript")
    args = parser.parse_args()
    for language in args.languages.split(","):
        await bench_language(language.strip(), args.repeats, args.bridge)


if __name__ == "__main__":
    asyncio.run(main())
