"""Latency of the `debug` tool against a raw DAP script on the same adapter, same process.

For each adapter usable here (debugpy, lldb, delve), a small loop program is debugged both ways,
interleaved: launch -> stopped at a breakpoint with the top frame known, then N step_over round
trips, each to the next `stopped` with the top frame known. The raw script is the anchor: the
minimal correct DAP client (same request order, same launch arguments and exception filters,
same framing layer and transport, no tool machinery).

    uv run python bench/debug_latency.py [--repeats 5] [--steps 20] [--adapters debugpy,lldb,delve]
        [--sandbox bwrap]

With `--sandbox bwrap` the tool also runs with a bubblewrap sandbox (the adapter and debuggee
inside, the root at /workspace; delve's with the host network, its dial-in is TCP), next to the
tool on the host: the cost of the sandbox, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livetools import Host
from livetools.detection import which_any
from livetools.ports import Ports
from livetools.procs import ChildProcess
from livetools.sandbox import BwrapSandbox
from livetools.wire import FramedReader, FramedWriter
from livetools_debug.adapters import DEBUGPY, DELVE, LLDB, LaunchInfo, lldb_names

PY = """\
def main():
    total = 0
    for i in range(100000):
        total += i  # loop
    return total


main()
"""

C = """\
int main(void) {
    volatile long total = 0;
    for (long i = 0; i < 100000; i++) {
        total += i; /* loop */
    }
    return 0;
}
"""

GO = """\
package main

func main() {
	total := 0
	for i := 0; i < 100000; i++ {
		total += i // loop
	}
	println(total)
}
"""


@dataclass
class Case:
    adapter: str
    root: Path
    program: Path
    source: Path
    line: int
    argv: list[str]  # the raw script's adapter command
    config: dict[str, Any]  # the raw script's launch arguments: the same the tool sends
    filters: tuple[str, ...] = ()
    tcp: bool = False
    first_stop: str | None = None  # the adapter's once-per-session expression (debugpy: NODELAY)


def prepare(work: Path, names: list[str]) -> list[Case]:
    cases = []
    if "debugpy" in names:
        root = work / "py"
        root.mkdir()
        (root / "pyproject.toml").write_text("[project]\nname='b'\nversion='0'\n")
        (root / "loop.py").write_text(PY)
        cases.append(
            Case(
                "debugpy",
                root,
                root / "loop.py",
                root / "loop.py",
                4,
                [sys.executable, "-m", "debugpy.adapter"],
                DEBUGPY.launch_config(LaunchInfo(root / "loop.py", [], root, root)),
                DEBUGPY.exception_filters,
                first_stop=DEBUGPY.first_stop,
            )
        )
    lldb = which_any(lldb_names())
    if "lldb" in names and lldb and shutil.which("cc"):
        root = work / "c"
        root.mkdir()
        (root / "CMakeLists.txt").write_text("project(b C)\n")
        (root / "loop.c").write_text(C)
        subprocess.run(
            ["cc", "-g", "-O0", "-o", str(root / "loop"), str(root / "loop.c")], check=True
        )
        cases.append(
            Case(
                "lldb",
                root,
                root / "loop",
                root / "loop.c",
                4,
                [lldb],
                LLDB.launch_config(LaunchInfo(root / "loop", [], root, root)),
            )
        )
    if "delve" in names and shutil.which("dlv") and shutil.which("go"):
        root = work / "go"
        root.mkdir()
        (root / "go.mod").write_text("module example.com/b\n\ngo 1.19\n")
        (root / "main.go").write_text(GO)
        binary = root / "loop"
        build = ["go", "build", "-gcflags=all=-N -l", "-o", str(binary), "."]
        subprocess.run(build, cwd=root, check=True)
        cases.append(
            Case(
                "delve",
                root,
                binary,  # mode exec on both sides: the build is not what is measured
                root / "main.go",
                6,
                ["dlv", "dap", "--client-addr=127.0.0.1:{port}"],
                DELVE.launch_config(LaunchInfo(binary, [], root, root)),  # mode exec
                tcp=True,
            )
        )
    return cases


class Raw:
    """The anchor: a minimal DAP client written straight on the framing layer."""

    def __init__(self, reader: FramedReader, writer: FramedWriter) -> None:
        self.reader, self.writer = reader, writer
        self.seq = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self.pump())

    async def pump(self) -> None:
        while (message := await self.reader.read()) is not None:
            assert isinstance(message, dict)
            if message.get("type") == "response":
                self.waiting.pop(message["request_seq"]).set_result(message)
            elif message.get("type") == "event":
                self.events.put_nowait(message)

    async def send(self, command: str, args: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        self.seq += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.seq] = future
        await self.writer.write(
            {"seq": self.seq, "type": "request", "command": command, "arguments": args}
        )
        return future

    async def call(self, command: str, args: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.wait_for(await self.send(command, args), 30)

    async def event(self, *names: str) -> dict[str, Any]:
        while True:
            message = await asyncio.wait_for(self.events.get(), 60)
            if message["event"] in names:
                return message

    async def top_frame(self, thread: int) -> dict[str, Any]:
        body = (await self.call("stackTrace", {"threadId": thread, "levels": 1}))["body"]
        return body["stackFrames"][0]


async def raw_run(case: Case, steps: int, tuned: bool = False) -> tuple[float, list[float]]:
    """`tuned`: also send the adapter's `first_stop` expression at the first stop, as the tool
    does (debugpy: TCP_NODELAY on pydevd's socket), so the ratio is the tool's own overhead."""
    started = time.perf_counter()
    dialed: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
        asyncio.get_running_loop().create_future()
    )
    server = await asyncio.start_server(lambda r, w: dialed.set_result((r, w)), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    argv = [a.format(port=port) for a in case.argv]
    child = await ChildProcess.start(argv, cwd=case.root, stdin=not case.tcp, merge_stderr=case.tcp)
    drain: asyncio.Task[bytes] | None = None
    try:
        if case.tcp:  # dlv dials in, as the tool has it do
            r, w = await asyncio.wait_for(dialed, 15)
            reader, writer = FramedReader(r), FramedWriter(w)
            drain = asyncio.get_running_loop().create_task(child.stdout.read())  # type: ignore[union-attr]
        else:
            reader, writer = FramedReader(child.stdout), FramedWriter(child.stdin)  # type: ignore[arg-type]
        dap = Raw(reader, writer)
        hello = {"adapterID": case.adapter, "linesStartAt1": True, "pathFormat": "path"}
        caps = (await dap.call("initialize", hello)).get("body") or {}
        launched = await dap.send("launch", case.config)
        await dap.event("initialized")
        await dap.call(
            "setBreakpoints",
            {"source": {"path": str(case.source)}, "breakpoints": [{"line": case.line}]},
        )
        if caps.get("exceptionBreakpointFilters"):  # the same filters the tool enables
            declared = {f["filter"] for f in caps["exceptionBreakpointFilters"]}
            filters = [f for f in case.filters if f in declared]
            await dap.call("setExceptionBreakpoints", {"filters": filters})
        await dap.call("configurationDone", {})
        await asyncio.wait_for(launched, 30)
        stop = await dap.event("stopped")
        thread = stop["body"]["threadId"]
        if tuned and case.first_stop:
            await dap.call("evaluate", {"expression": case.first_stop, "context": "repl"})
        await dap.top_frame(thread)
        launch = time.perf_counter() - started
        await dap.call("setBreakpoints", {"source": {"path": str(case.source)}, "breakpoints": []})
        step_times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            await dap.call("next", {"threadId": thread})
            await dap.event("stopped")
            await dap.top_frame(thread)
            step_times.append(time.perf_counter() - t0)
        await asyncio.wait_for(dap.call("disconnect", {"terminateDebuggee": True}), 5)
        dap.task.cancel()
        if drain is not None:
            drain.cancel()
        return launch, step_times
    finally:
        server.close()
        await child.aclose(grace=0.5)


async def tool_run(case: Case, steps: int, sandbox: bool = False) -> tuple[float, list[float]]:
    jail = BwrapSandbox(case.root, network=case.tcp) if sandbox else None
    try:
        return await _tool_run(case, steps, jail)
    finally:
        if jail is not None:
            jail.close()


async def _tool_run(case: Case, steps: int, jail: BwrapSandbox | None) -> tuple[float, list[float]]:
    async with Host().open_run(case.root, ports=Ports(sandbox=jail)) as run:
        rel = case.source.relative_to(case.root).as_posix()
        started = time.perf_counter()
        await run.call("debug", {"op": "breakpoints", "file": rel, "lines": [case.line]})
        args: dict[str, Any] = {"op": "launch", "program": case.program.name}
        if case.adapter == "delve":
            args["adapter"] = "delve"
        result = await run.call("debug", args)
        launch = time.perf_counter() - started
        assert not result.is_error and result.data["outcome"] == "stopped", result.text
        await run.call("debug", {"op": "breakpoints", "file": rel, "lines": []})
        step_times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            result = await run.call("debug", {"op": "step_over"})
            step_times.append(time.perf_counter() - t0)
            assert not result.is_error and result.data["outcome"] == "stopped", result.text
        await run.call("debug", {"op": "terminate"})
        return launch, step_times


async def bench(cases: list[Case], repeats: int, steps: int, sandbox: bool = False) -> None:
    for case in cases:
        await raw_run(case, 2)  # warm caches (imports, page cache, dlv)
        await tool_run(case, 2)
        if sandbox:
            await tool_run(case, 2, sandbox=True)
        raw_l, raw_s, tool_l, tool_s, box_l, box_s = [], [], [], [], [], []
        tuned_l: list[float] = []
        tuned_s: list[float] = []
        for _ in range(repeats):
            launch, step = await raw_run(case, steps)
            raw_l.append(launch)
            raw_s += step
            if case.first_stop:
                launch, step = await raw_run(case, steps, tuned=True)
                tuned_l.append(launch)
                tuned_s += step
            launch, step = await tool_run(case, steps)
            tool_l.append(launch)
            tool_s += step
            if sandbox:
                launch, step = await tool_run(case, steps, sandbox=True)
                box_l.append(launch)
                box_s += step
        ml_raw, ml_tool = statistics.median(raw_l), statistics.median(tool_l)
        ms_raw, ms_tool = statistics.median(raw_s), statistics.median(tool_s)
        print(
            f"{case.adapter:8} launch->stopped  raw {ml_raw * 1000:7.1f} ms  "
            f"debug {ml_tool * 1000:7.1f} ms  ratio {ml_tool / ml_raw:4.2f}x"
        )
        print(
            f"{case.adapter:8} step_over        raw {ms_raw * 1000:7.1f} ms  "
            f"debug {ms_tool * 1000:7.1f} ms  ratio {ms_tool / ms_raw:4.2f}x"
        )
        if tuned_s:
            ml_t, ms_t = statistics.median(tuned_l), statistics.median(tuned_s)
            print(
                f"{case.adapter:8} launch->stopped  raw+first_stop {ml_t * 1000:7.1f} ms  "
                f"ratio {ml_tool / ml_t:4.2f}x"
            )
            print(
                f"{case.adapter:8} step_over        raw+first_stop {ms_t * 1000:7.1f} ms  "
                f"ratio {ms_tool / ms_t:4.2f}x"
            )
        if sandbox:
            ml_box, ms_box = statistics.median(box_l), statistics.median(box_s)
            print(
                f"{case.adapter:8} launch->stopped  host {ml_tool * 1000:6.1f} ms  "
                f"bwrap {ml_box * 1000:7.1f} ms  ratio {ml_box / ml_tool:4.2f}x"
            )
            print(
                f"{case.adapter:8} step_over        host {ms_tool * 1000:6.1f} ms  "
                f"bwrap {ms_box * 1000:7.1f} ms  ratio {ms_box / ms_tool:4.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--adapters", default="debugpy,lldb,delve")
    parser.add_argument("--sandbox", choices=["bwrap"], help="also run the tool in a sandbox")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="livetools-bench-") as tmp:
        cases = prepare(Path(os.path.realpath(tmp)), options.adapters.split(","))
        print(f"{options.repeats} repeats x {options.steps} steps, medians")
        asyncio.run(bench(cases, options.repeats, options.steps, options.sandbox == "bwrap"))


if __name__ == "__main__":
    main()
