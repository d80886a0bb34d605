"""lsp overhead, measured against its anchor in the same process-pair.

1. The same definition / references / hover requests through the `lsp` tool (run.call: argument
   validation, line+symbol resolution, document sync check, rendering) and as raw JSON-RPC
   requests on the very same server connection: median per call and the overhead.
2. Diagnostics on write: the time from an `edit` call to its result carrying the new
   diagnostic, next to the server's own latency for the same change (raw didChange, then the
   server's pull answer or its publish).

Usage: uv run python bench/lsp_overhead.py [--server basedpyright|pylsp] [--rounds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from livetools import Host
from livetools.faces import harness

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "projects" / "lsp" / "py"
QUERIES = [
    ("definition", "textDocument/definition", "app.py", 3, "Square", 2, 7),
    ("references", "textDocument/references", "shapes.py", 22, "total_area", 21, 4),
    ("hover", "textDocument/hover", "app.py", 5, "total_area", 4, 6),
]


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def overhead(run, root: Path, rounds: int) -> None:
    sup = run.resource("lsp")
    for action, _method, file, line, symbol, _, _ in QUERIES:  # warm up: server + documents
        r = await run.call("lsp", {"action": action, "file": file, "line": line, "symbol": symbol})
        assert not r.is_error, r.text
    server = sup.running_for(root / "app.py")
    print(f"server: {server.spec.id} {server.server_info.get('version', '')}".rstrip())
    print(f"{'request':<12} {'raw ms':>8} {'lsp ms':>8} {'overhead ms':>12} {'ratio':>6}")
    for action, method, file, line, symbol, zline, col in QUERIES:
        params = {
            "textDocument": {"uri": (root / file).as_uri()},
            "position": {"line": zline, "character": col},
        }
        if action == "references":
            params["context"] = {"includeDeclaration": True}
        args = {"action": action, "file": file, "line": line, "symbol": symbol}
        raw, tool = [], []
        for _ in range(rounds):  # interleaved, so drift hits both sides alike
            t = time.perf_counter()
            await server.endpoint.request(method, params, 30.0)
            raw.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = await run.call("lsp", args)
            tool.append(time.perf_counter() - t)
            assert not r.is_error, r.text
        over = ms(tool) - ms(raw)
        print(f"{action:<12} {ms(raw):8.2f} {ms(tool):8.2f} {over:12.2f} {ms(tool) / ms(raw):6.2f}")


async def on_write(run, root: Path, rounds: int) -> None:
    sup = run.resource("lsp")
    server = sup.running_for(root / "app.py")
    good = "big = Square(3.0)\n"
    bad = "big = Square(3.0)\nbroken = undefined_thing\n"
    tool, own = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        r = await run.call("edit", {"path": "app.py", "old": good, "new": bad})
        tool.append(time.perf_counter() - t)
        assert "new diagnostics" in r.text, r.text
        await run.call("edit", {"path": "app.py", "old": bad, "new": good})
    # The server's own latency: the same change sent raw, until its diagnostics for it.
    path = root / "app.py"
    base = path.read_text()
    for i in range(rounds):
        text = base.replace(good, bad) if i % 2 == 0 else base
        t = time.perf_counter()
        doc, _ = await server.sync(path, text)
        await server.diagnostics(doc, 10.0)
        own.append(time.perf_counter() - t)
    await server.sync(path, base)
    mode = "pull" if server.pulls else "push"
    print(f"write -> new diagnostics in the edit result: {ms(tool):.1f} ms median")
    print(f"server's own diagnostics latency ({mode}):  {ms(own):.1f} ms median")
    print(f"ratio: {ms(tool) / ms(own):.2f}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="basedpyright")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--write-rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "py"
        shutil.copytree(FIXTURE, root)
        host = Host(plugins=[("harness", harness)])
        async with host.open_run(root, options={"lsp": {"prefer": [args.server]}}) as run:
            await overhead(run, root, args.rounds)
            await on_write(run, root, args.write_rounds)


if __name__ == "__main__":
    asyncio.run(main())
