"""lsp overhead, measured against its anchor in the same process-pair.

1. The same definition / references / hover requests through the `lsp` tool (run.call: argument
   validation, line+symbol resolution, document sync check, rendering) and as raw JSON-RPC
   requests on the very same server connection: median per call and the overhead.
2. Diagnostics on write (fixture only): the time from an `edit` call to its result carrying the
   new diagnostic, next to the server's own latency for the same change.
3. Cold start (`--project`, a corpus project): time from run open to the first *complete*
   references answer through `lsp`, next to the server's own readiness: a raw client on a fresh
   server that asks back-to-back from launch, timed to its first answer with the complete count
   (the best any client can do), and the time of the server's own loaded signal.

Usage: uv run python bench/lsp_overhead.py [--server basedpyright|pylsp] [--rounds 100]
       uv run python bench/lsp_overhead.py --project click|rxjs|cobra [--cold 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from livetools import Host
from livetools.faces import harness
from livetools_lsp.positions import encode_column, locate, split_lines
from livetools_lsp.server import LanguageServer


def corpus_dir() -> Path:
    """Where scripts/corpus.py fetched the corpus (as tests/corpus.py reads it)."""
    env = os.environ.get("LIVETOOLS_CORPUS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "livetools" / "corpus"


FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "projects" / "lsp" / "py"
QUERIES = [
    ("definition", "textDocument/definition", "app.py", 3, "Square", 2, 7),
    ("references", "textDocument/references", "shapes.py", 22, "total_area", 21, 4),
    ("hover", "textDocument/hover", "app.py", 5, "total_area", 4, 6),
]


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def _rxjs(root: Path) -> None:
    (root / "src" / "tsconfig.json").write_text(
        '{"extends": "./tsconfig.base.json", "include": ["./**/*.ts"]}'
    )


def _cobra(root: Path) -> None:
    (root / "go.mod").write_text("module github.com/spf13/cobra\n\ngo 1.15\n")
    (root / "go.sum").unlink()
    os.environ.update(GOPROXY="off", GOFLAGS="-mod=mod")


# corpus project -> (server, prepare, file, line, symbol) of the references question
PROJECTS = {
    "click": ("basedpyright", None, "src/click/utils.py", 219, "echo"),
    "rxjs": ("typescript-language-server", _rxjs, "src/internal/Observable.ts", 15, "Observable"),
    "cobra": ("gopls", _cobra, "command.go", 48, "Command"),
}


def position(root: Path, file: str, line: int, symbol: str, encoding: str) -> tuple[int, int]:
    text = (root / file).read_text()
    spot = locate(text, line, symbol, file)
    return spot.line, encode_column(split_lines(text)[spot.line], spot.index, encoding)


def corpus_queries(project: str, root: Path) -> list[tuple]:
    _, _, file, line, symbol = PROJECTS[project]
    zline, col = position(root, file, line, symbol, "utf-16")
    return [
        (action, method, file, line, symbol, zline, col)
        for action, method in (
            ("definition", "textDocument/definition"),
            ("references", "textDocument/references"),
            ("hover", "textDocument/hover"),
        )
    ]


async def overhead(run, root: Path, rounds: int, queries: list[tuple] = QUERIES) -> None:
    sup = run.resource("lsp")
    for action, _method, file, line, symbol, _, _ in queries:  # warm up: server + documents
        r = await run.call("lsp", {"action": action, "file": file, "line": line, "symbol": symbol})
        assert not r.is_error, r.text
    server = sup.running_for(root / queries[0][2])
    version = str(server.server_info.get("version", ""))
    print(f"server: {server.spec.id} {version if len(version) < 40 else ''}".rstrip())
    print(f"{'request':<12} {'raw ms':>8} {'lsp ms':>8} {'overhead ms':>12} {'ratio':>6}")
    for action, method, file, line, symbol, zline, col in queries:
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


def fresh_copy(project: str, tmp: Path, n: int) -> Path:
    root = Path(tmp) / f"{project}-{n}"
    shutil.copytree(corpus_dir() / project, root, symlinks=True)
    prepare = PROJECTS[project][1]
    if prepare:
        prepare(root)
    return root


async def cold_lsp(project: str, root: Path) -> tuple[float, int, bool]:
    """Run open -> first references answer through `lsp`: seconds, count, complete."""
    spec_id, _, file, line, symbol = PROJECTS[project]
    host = Host(plugins=[("harness", harness)])
    t = time.perf_counter()
    async with host.open_run(root, options={"lsp": {"prefer": [spec_id]}}) as run:
        args = {"action": "references", "file": file, "line": line, "symbol": symbol}
        r = await run.call("lsp", args)
        took = time.perf_counter() - t
        assert not r.is_error, r.text
        count = int(r.text.split()[0])
        return took, count, "may be incomplete" not in r.text


async def cold_raw(project: str, root: Path, complete: int) -> tuple[float, float | None]:
    """A raw client on a fresh server (launched as livetools would, no lsp tool): didOpen, then
    references back-to-back until the answer has `complete` items. Returns the seconds to that
    answer and to the server's own loaded signal (progress end / ready log), if it gave one."""
    spec_id, _, file, line, symbol = PROJECTS[project]
    host = Host(plugins=[("harness", harness)])
    async with host.open_run(root, options={"lsp": {"prefer": [spec_id]}}) as run:
        sup = run.resource("lsp")
        path = root / file
        spec = next(s for s in sup.candidates(path) if s.id == spec_id)
        verdict = await sup.verdict(spec, path)
        t = time.perf_counter()
        server = await LanguageServer.launch(
            spec, verdict.root, verdict.binary, request_timeout=120.0, init_timeout=60.0
        )
        try:
            text = path.read_text()
            uri = path.resolve().as_uri()
            await server.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": spec.language_id(path.suffix),
                        "version": 1,
                        "text": text,
                    }
                },
            )
            zline, col = position(root, file, line, symbol, server.encoding)
            params = {
                "textDocument": {"uri": uri},
                "position": {"line": zline, "character": col},
                "context": {"includeDeclaration": True},
            }
            while True:
                answer = await server.request("textDocument/references", params)
                if len({f"{a['uri']}{a['range']}" for a in answer or []}) >= complete:
                    took = time.perf_counter() - t
                    break
            # The loaded signal: the ready log line, else the end of the first progress.
            spans = server.readiness.spans
            mark = server.readiness.logged_ready or (spans[0][1] if spans else 0.0)
            start = time.monotonic() - (time.perf_counter() - t)
            signal = mark - start if mark else None
            return took, signal
        finally:
            await server.aclose()


async def cold_start(project: str, rounds: int) -> None:
    print(f"cold start on {project} ({PROJECTS[project][0]}), {rounds} rounds, fresh copies")
    ours, raws, signals = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):  # alternated, so load drift hits both sides alike
            took, count, complete = await cold_lsp(project, fresh_copy(project, Path(tmp), 2 * n))
            ours.append(took)
            raw, signal = await cold_raw(project, fresh_copy(project, Path(tmp), 2 * n + 1), count)
            raws.append(raw)
            if signal is not None:
                signals.append(signal)
            state = "complete" if complete else "MARKED INCOMPLETE"
            print(
                f"  round {n + 1}: lsp {took:.2f}s ({count} references, {state}); "
                f"raw first complete {raw:.2f}s; server's loaded signal "
                f"{f'{signal:.2f}s' if signal is not None else 'none'}"
            )
    lsp_s, raw_s = statistics.median(ours), statistics.median(raws)
    print(f"run open -> first complete references (lsp): {lsp_s:.2f}s median")
    print(f"server's own readiness (raw, back-to-back): {raw_s:.2f}s median")
    if signals:
        print(
            f"server's loaded signal after launch:        {statistics.median(signals):.2f}s median"
        )
    print(f"ratio: {lsp_s / raw_s:.2f} (goal <= 1.1)")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="basedpyright")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--write-rounds", type=int, default=15)
    parser.add_argument("--project", choices=sorted(PROJECTS), help="a fetched corpus project")
    parser.add_argument("--cold", type=int, default=3, help="cold-start rounds (--project)")
    args = parser.parse_args()
    if args.project:
        await cold_start(args.project, args.cold)
        with tempfile.TemporaryDirectory() as tmp:
            root = fresh_copy(args.project, Path(tmp), 0)
            host = Host(plugins=[("harness", harness)])
            options = {"lsp": {"prefer": [PROJECTS[args.project][0]]}}
            async with host.open_run(root, options=options) as run:
                await overhead(run, root, args.rounds, corpus_queries(args.project, root))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "py"
        shutil.copytree(FIXTURE, root)
        host = Host(plugins=[("harness", harness)])
        async with host.open_run(root, options={"lsp": {"prefer": [args.server]}}) as run:
            await overhead(run, root, args.rounds)
            await on_write(run, root, args.write_rounds)


if __name__ == "__main__":
    asyncio.run(main())
