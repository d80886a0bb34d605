"""The real-world differential: on corpus projects nobody here wrote, `lsp definition`, `references`
and `hover` at sampled identifier positions are compared with the same request sent raw — by a
minimal JSON-RPC client in this file, to a second process of the same server started with no
settings — and our `diagnostics` of unmodified files with the server's own CLI.

Each case prints its agreement count; the assertion is agreement >= THRESHOLD of the comparisons,
and every difference is printed with both answers. The differences seen and why are in
docs/lsp.md ("Real-world differential")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from livetools_lsp.pyenv import find_interpreter
from tests.corpus import corpus_copy, realworld, sample
from tests.lsp.conftest import lsp_run
from tests.support import REQUIRE_ENV

THRESHOLD = 0.9  # of the comparisons per server; see docs/lsp.md for what differed and why
POSITIONS = 6  # sampled identifier positions per project (x3 actions)
RAW_READY = 60.0
MAX_PAGES = 8  # of 50 references each


# -- a raw LSP client: framing, requests, answers to the server's own requests ----------------


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


def _document(path: Path, language: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return {"uri": _uri(path), "languageId": language, "version": 1, "text": text}


def _ended(params: dict[str, Any]) -> bool:
    return (params.get("value") or {}).get("kind") == "end"


class RawClient:
    """Just enough LSP to ask one server process questions, independent of the plugin."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.progress_ended = asyncio.Event()
        self.active: set[str] = set()
        self.changed = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, argv: list[str], root: Path) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=root,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        client = cls(proc)
        uri = _uri(root)
        await client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": root.name}],
                "capabilities": {
                    "window": {"workDoneProgress": True},
                    "workspace": {"configuration": True, "workspaceFolders": True},
                    "textDocument": {
                        "definition": {"linkSupport": True},
                        "hover": {"contentFormat": ["markdown", "plaintext"]},
                        "synchronization": {"didSave": True},
                    },
                },
            },
            bound=60.0,
        )
        await client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return client

    async def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any, bound: float = 30.0) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await asyncio.wait_for(future, bound)

    async def open(self, path: Path, language: str) -> None:
        doc = _document(path, language)
        await self.send(
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": doc}}
        )

    async def idle(self, bound: float) -> None:
        """Until no `$/progress` runs (clangd's background index, gopls loading), at most
        `bound`: as a careful client would before a cross-file question."""
        loop = asyncio.get_running_loop()
        end = loop.time() + bound
        while self.active and (left := end - loop.time()) > 0:
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = 0
            while (line := await stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            message = json.loads(await stdout.readexactly(length))
            if "method" in message and "id" in message:  # the server asks us
                result: Any = None
                if message["method"] == "workspace/configuration":
                    result = [None for _ in message["params"]["items"]]
                elif message["method"] == "workspace/workspaceFolders":
                    result = []
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "id" in message:
                future = self.pending.pop(message["id"], None)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(RuntimeError(str(message["error"])))
                    else:
                        future.set_result(message.get("result"))
            elif message.get("method") == "$/progress":
                token = str(message["params"].get("token"))
                if _ended(message["params"]):
                    self.active.discard(token)
                    self.progress_ended.set()
                else:
                    self.active.add(token)
                self.changed.set()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, bound=3.0)
            await self.send({"jsonrpc": "2.0", "method": "exit"})
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, 9)
        await self.proc.wait()
        self.reader.cancel()


# -- positions ---------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_]\w*")
_WORDS = (
    "False None True and any as assert async await bool boolean break byte case chan char class "
    "const continue def default defer del double elif else enum error except export extends "
    "extern false finally float for from func function global go if implements import in inline "
    "instanceof int interface is lambda let long map new nil nonlocal not null number or "
    "package pass private protected public raise range readonly register return select self "
    "short size_t sizeof static static_cast string struct switch this true try type typeof "
    "uint32_t uint8_t undefined unsigned var void volatile while with yield "
)
_KEYWORDS = frozenset(_WORDS.split())
_COMMENT = ("#", "//", "/*", "*", '"""', "'''")


@dataclass(frozen=True)
class Position:
    rel: str
    line: int  # 1-based
    symbol: str
    column: int  # UTF-16 code units


def positions(root: Path, files: list[Path], count: int) -> list[Position]:
    """Identifiers that occur once on their line and inside no other identifier there (so
    line + symbol is unambiguous), outside comments and string quotes."""
    pool: list[Position] = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        for number, content in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            stripped = content.strip()
            if not stripped or stripped.startswith(_COMMENT) or len(content) > 160:
                continue
            names = [m for m in _IDENT.finditer(content)]
            for m in names:
                name = m.group()
                if name in _KEYWORDS or len(name) < 3 or content.count(name) != 1:
                    continue
                before = content[: m.start()]
                if before.count('"') % 2 or before.count("'") % 2 or before.count("`") % 2:
                    continue
                column = len(before.encode("utf-16-le")) // 2
                pool.append(Position(rel, number, name, column))
    return sample(pool, count, seed=12)


# -- comparison --------------------------------------------------------------------------------


def _where(root: Path, uri: str, line: int) -> tuple[str, int]:
    path = os.path.realpath(unquote(urlparse(uri).path))
    real = os.path.realpath(root)
    if path.startswith(real + os.sep):
        path = os.path.relpath(path, real).replace(os.sep, "/")
    return path, line + 1


def raw_locations(root: Path, result: Any) -> list[tuple[str, int]]:
    items = result if isinstance(result, list) else ([result] if result else [])
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    for item in items:
        uri = item.get("targetUri") or item.get("uri")
        rng = item.get("targetSelectionRange") or item.get("range")
        key = f"{uri}{rng}"
        if key not in seen:
            seen.add(key)
            out.append(_where(root, uri, rng["start"]["line"]))
    return out


def our_locations(root: Path, data: dict[str, Any] | None) -> set[tuple[str, int]]:
    out = set()
    for loc in (data or {}).get("locations") or []:
        path = loc["path"]
        if os.path.isabs(path):
            path = os.path.realpath(path)
        out.add((path, loc["line"]))
    return out


def raw_hover(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    contents = result.get("contents")
    parts = []
    for item in contents if isinstance(contents, list) else [contents]:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and "value" in item:
            parts.append(str(item["value"]))
    return "\n".join(parts)


def _normal(text: str) -> str:
    text = "\n".join(line for line in text.splitlines() if not line.startswith("```"))
    return " ".join(text.split())[:2000]


# -- the cases ---------------------------------------------------------------------------------


def _rxjs(root: Path) -> None:
    config = {
        "compilerOptions": {
            "strict": True,
            "target": "es2017",
            "lib": ["es2018", "dom"],
            "skipLibCheck": True,
            "baseUrl": ".",
            "paths": {"rxjs": ["./"], "rxjs/*": ["./*"]},
        },
        "include": ["./**/*.ts"],
    }
    (root / "src" / "tsconfig.json").write_text(json.dumps(config))


def _cobra(root: Path) -> None:
    """cobra's dependencies are not in the corpus and cannot be downloaded here: without its
    requirements, `go list -e` still gives gopls the package (uses of pflag stay unresolved,
    on both sides alike); with them, gopls 0.5 answers "no package metadata" for every file."""
    (root / "go.mod").write_text("module github.com/spf13/cobra\n\ngo 1.15\n")
    (root / "go.sum").unlink(missing_ok=True)


def _brotli(root: Path) -> None:
    """A compile_commands.json as CMake would write it: every .c with the public headers."""
    real = root.resolve()
    commands = [
        {"directory": str(real), "file": str(f), "arguments": ["cc", "-Ic/include", "-c", str(f)]}
        for f in sorted(real.rglob("*.c"))
    ]
    (root / "compile_commands.json").write_text(json.dumps(commands))


@dataclass(frozen=True)
class Case:
    project: str
    server: str
    argv: tuple[str, ...]
    language: str
    suffix: str
    under: str = ""
    setup: Callable[[Path], None] | None = None
    exclude: str = "test"


CASES = [
    Case("click", "basedpyright", ("basedpyright-langserver", "--stdio"), "python", ".py", "src"),
    Case(
        "rxjs",
        "typescript-language-server",
        ("typescript-language-server", "--stdio"),
        "typescript",
        ".ts",
        "src/internal",
        _rxjs,
    ),
    Case("cobra", "gopls", ("gopls",), "go", ".go", setup=_cobra, exclude="_test"),
    Case("brotli", "clangd", ("clangd", "--log=error"), "c", ".c", "c/dec", _brotli),
]


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found:
        return found
    message = f"{name} not installed (needed for the {name} differential)"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(message)
    pytest.skip(message)


@realworld
@pytest.mark.parametrize("case", CASES, ids=[c.server for c in CASES])
async def test_navigation_agrees_with_a_raw_client(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.server == "gopls":  # no module download is tried (there is no network here)
        monkeypatch.setenv("GOPROXY", "off")
        monkeypatch.setenv("GOFLAGS", "-mod=mod")
    argv = [_binary(case.argv[0]), *case.argv[1:]]
    root = corpus_copy(case.project, tmp_path)
    if case.setup:
        case.setup(root)
    base = root / case.under if case.under else root
    files = sorted(
        p for p in base.rglob(f"*{case.suffix}") if case.exclude not in p.name and p.is_file()
    )
    spots = positions(root, sample(files, 4, seed=3), POSITIONS)
    server_root = root / "src" if case.project == "rxjs" else root
    raw_start = asyncio.get_running_loop().create_task(RawClient.start(argv, server_root))
    agreed, differences, nonempty = 0, [], 0
    async with lsp_run(root, [case.server]) as run:
        raw = await raw_start
        try:
            for path in sorted({s.rel for s in spots}):
                await raw.open(root / path, case.language)
            if case.server == "typescript-language-server":
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(raw.progress_ended.wait(), RAW_READY)
            for spot in spots:
                for action in ("definition", "references", "hover"):
                    ours = await run.call(
                        "lsp",
                        {
                            "action": action,
                            "file": spot.rel,
                            "line": spot.line,
                            "symbol": spot.symbol,
                        },
                    )
                    pages = [ours]
                    while (
                        action == "references"
                        and _next_offset(pages[-1])
                        and len(pages) < MAX_PAGES
                    ):
                        more = {"action": action, "file": spot.rel, "line": spot.line}
                        more |= {"symbol": spot.symbol, "offset": _next_offset(pages[-1])}
                        pages.append(await run.call("lsp", more))
                    same, detail, empty = await _compare(root, raw, spot, action, pages)
                    nonempty += not empty
                    if same:
                        agreed += 1
                    else:
                        differences.append(
                            f"{action} {spot.rel}:{spot.line} {spot.symbol}: {detail}"
                        )
        finally:
            await raw.close()
    total = len(spots) * 3
    print(
        f"\n{case.server} on {case.project}: {agreed}/{total} agree ({nonempty} non-empty answers)"
    )
    for line in differences:
        print("  differs:", line)
    assert total and agreed >= THRESHOLD * total, differences


def _next_offset(result: Any) -> int:
    match = re.search(r"next page: offset=(\d+)", result.text)
    return int(match.group(1)) if match else 0


async def _compare(
    root: Path, raw: RawClient, spot: Position, action: str, pages: list[Any]
) -> tuple[bool, str, bool]:
    ours = pages[0]
    uri = (root / spot.rel).resolve().as_uri()
    params: dict[str, Any] = {
        "textDocument": {"uri": uri},
        "position": {"line": spot.line - 1, "character": spot.column},
    }
    method = {"definition": "definition", "references": "references", "hover": "hover"}[action]
    if action == "references":
        params["context"] = {"includeDeclaration": True}
    answer: Any = None
    await raw.idle(RAW_READY)
    for attempt in range(3):  # a fresh raw server may answer empty while it loads
        try:
            answer = await raw.request(f"textDocument/{method}", params)
        except (RuntimeError, TimeoutError) as exc:
            answer = f"error: {exc}"
        if answer not in (None, [], "") or attempt == 2:
            break
        await asyncio.sleep(1.0)
    if action == "hover":
        theirs = _normal(raw_hover(answer)) if not isinstance(answer, str) else ""
        mine = _normal((ours.data or {}).get("hover", "")) if not ours.is_error else ""
        same = mine == theirs or (bool(mine) and bool(theirs) and theirs[:1500] in mine)
        return same, f"ours {mine[:160]!r} raw {theirs[:160]!r}", not (mine or theirs)
    theirs_list = raw_locations(root, answer) if not isinstance(answer, str) else []
    theirs_set = set(theirs_list)
    mine_set: set[tuple[str, int]] = set()
    for page in pages:
        mine_set |= our_locations(root, page.data if not page.is_error else None)
    # Past MAX_PAGES the listed lines are a part: they must all be the raw answer's.
    partial = _next_offset(pages[-1]) > 0
    same = mine_set <= theirs_set if partial else mine_set == theirs_set
    head = re.match(r"(\d+) references", ours.text)
    if action == "references" and head:  # the count must match too (hits sharing a line)
        same = same and int(head.group(1)) == len(theirs_list)
    detail = f"ours {len(mine_set)} lines, raw {len(theirs_set)}; "
    detail += f"only ours: {sorted(mine_set - theirs_set)[:4]} only raw: "
    detail += f"{sorted(theirs_set - mine_set)[:4]}"
    if head:
        detail += f"; counts ours {head.group(1)} raw {len(theirs_list)}"
    if ours.is_error or isinstance(answer, str):
        detail += f" | ours: {ours.text[:200]!r} raw: {str(answer)[:200]!r}"
    return same, detail, not (mine_set or theirs_set)


# -- diagnostics vs the server's own CLI -------------------------------------------------------

_CYCLES = "reportImportCycles"  # depends on which files were checked (see test_python_env.py)


def _cli_errors(
    report: dict[str, Any], root: Path, files: list[str]
) -> dict[str, list[tuple[int, str | None]]]:
    real = os.path.realpath(root)
    cli: dict[str, list[tuple[int, str | None]]] = {f: [] for f in files}
    for diag in report["generalDiagnostics"]:
        if diag["severity"] == "error" and diag.get("rule") != _CYCLES:
            rel = os.path.relpath(os.path.realpath(diag["file"]), real).replace(os.sep, "/")
            cli[rel].append((diag["range"]["start"]["line"] + 1, diag.get("rule")))
    return cli


@realworld
async def test_click_diagnostics_agree_with_basedpyright_cli(tmp_path: Path) -> None:
    _binary("basedpyright")
    root = corpus_copy("click", tmp_path)
    pool = sorted(p.relative_to(root).as_posix() for p in (root / "src/click").glob("*.py"))
    done = {"src/click/termui.py", "src/click/utils.py", "src/click/_compat.py"}  # python_env
    files = sample([f for f in pool if f not in done], 3, seed=5)
    interpreter, _ = find_interpreter(root)
    argv = [_binary("basedpyright"), "--outputjson"]
    argv += ["--pythonpath", interpreter] if interpreter else []
    proc = await asyncio.create_subprocess_exec(
        *argv, *files, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 180)
    cli = _cli_errors(json.loads(out), root, files)
    counts: dict[str, int] = {}
    shown: dict[str, set[tuple[int, str | None]]] = {}
    async with lsp_run(root, ["basedpyright"]) as run:
        for rel in files:
            r = await run.call("lsp", {"action": "diagnostics", "file": rel})
            assert not r.is_error, r.text
            # The answer lists at most 100 items (errors, warnings, infos by line); the header
            # counts them all.
            head = re.search(r"(\d+) errors?", r.text.splitlines()[0])
            errors = [
                (d["line"], d["code"])
                for d in (r.data or {}).get("diagnostics", [])
                if d["severity"] == "error"
            ]
            cycles = sum(1 for _, code in errors if code == _CYCLES)  # reported at line 1
            counts[rel] = (int(head.group(1)) if head else 0) - cycles
            shown[rel] = {e for e in errors if e[1] != _CYCLES}
    agreed = sum(counts[f] == len(cli[f]) and shown[f] <= set(cli[f]) for f in files)
    print(f"\nbasedpyright diagnostics vs its CLI on {files}: {agreed}/{len(files)} files agree")
    for f in files:
        print(f"  {f}: ours {counts[f]} errors ({len(shown[f])} listed), CLI {len(cli[f])}")
    assert agreed == len(files)
