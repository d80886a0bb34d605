"""The differential harness: on corpus projects nobody here wrote, our `lsp` answers are compared
with the same request sent raw (a minimal JSON-RPC client, independent of the plugin) to a second
process of the same server. test_realworld_differential.py and tests/lsp/breadth/ use it: a `Case`
names the server, the project and the actions to compare; `differential` returns the agreement.

Positions are identifiers that occur once on their line (so line + symbol is unambiguous), sampled
deterministically; `symbols` compares a whole file's outline (name and line of every symbol)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from tests.corpus import SCALE_ENV, corpus_copy, sample
from tests.lsp.conftest import lsp_run
from tests.support import REQUIRE_ENV

THRESHOLD = 0.9  # of the comparisons per server; see docs/lsp.md for what differed and why
POSITIONS = 6  # sampled identifier positions per project (x each position action)
RAW_READY = 60.0
RAW_WARM = 10.0  # seconds after its start in which an empty raw answer is asked again
STALLED = 8.0  # Case.progress_stalls: seconds of silence after which a counting progress is over
MAX_PAGES = 8  # of 50 references (or 200 symbols) each
POSITION_ACTIONS = ("definition", "references", "hover")
# Positions per case in an ordinary run (CI's time); LIVETOOLS_CORPUS_SCALE >= 2 takes the
# case's own count (docs/lsp.md's figures are from such runs).
QUICK_POSITIONS = 4


def _scale() -> float:
    return float(os.environ.get(SCALE_ENV) or 1)


# -- a raw LSP client: framing, requests, answers to the server's own requests ----------------


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


def _document(path: Path, language: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return {"uri": uri_of(path), "languageId": language, "version": 1, "text": text}


class RawClient:
    """Just enough LSP to ask one server process questions, independent of the plugin."""

    def __init__(
        self, proc: asyncio.subprocess.Process, settings: dict[str, Any] | None = None
    ) -> None:
        self.proc = proc
        self.settings = settings or {}
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self.next_id = 0
        self.answered = False  # a cross-file request got a non-empty answer: it has loaded
        self.started = asyncio.get_running_loop().time()
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.progress_ended = asyncio.Event()
        self.active: set[str] = set()
        self.progress_at = 0.0  # loop time of the last `$/progress`
        self.stalled: float | None = None  # see idle(); set for servers whose progress stalls
        self.reported: set[str] = set()  # tokens that have sent a `report`
        self.changed = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(
        cls,
        argv: list[str],
        root: Path,
        *,
        init_options: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> RawClient:
        """`settings` answer `workspace/configuration` by section (None for the rest), as the
        plugin does with a spec's `settings`."""
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=root,
            env={**os.environ, **(env or {})},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        client = cls(proc, settings)
        uri = uri_of(root)
        await client.request(
            "initialize",
            {
                **({"initializationOptions": init_options} if init_options else {}),
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": root.name}],
                "capabilities": {
                    "window": {"workDoneProgress": True},
                    "workspace": {"configuration": True, "workspaceFolders": True},
                    "textDocument": {
                        "definition": {"linkSupport": True},
                        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                        "publishDiagnostics": {"relatedInformation": True},
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
        `bound`: as a careful client would before a cross-file question. With `stalled` set, a
        progress that was counting (it sent reports) and then fell silent that long counts as
        over: ccls sometimes never ends its "index" token (35 of 36 files reported), which cost
        60 s a case. Other servers' progress is waited for (a big file's index may be silent)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + bound
        while self.active and (left := end - loop.time()) > 0:
            silent = loop.time() - self.progress_at
            if self.stalled is not None and self.active <= self.reported and silent > self.stalled:
                return
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
                    items = message["params"]["items"]
                    result = [self._section(item.get("section")) for item in items]
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
            elif message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                self.diagnostics[params["uri"]] = params.get("diagnostics") or []
                self.changed.set()
            elif message.get("method") == "$/progress":
                token = str(message["params"].get("token"))
                kind = (message["params"].get("value") or {}).get("kind")
                self.progress_at = asyncio.get_running_loop().time()
                if kind == "report":
                    self.reported.add(token)
                # Only `begin` starts a progress, as the plugin's own readiness counts it.
                if kind == "end":
                    self.active.discard(token)
                    self.progress_ended.set()
                elif kind == "begin":
                    self.active.add(token)
                self.changed.set()

    def _section(self, section: str | None) -> Any:
        if not section:
            return self.settings or None
        value: Any = self.settings
        for part in section.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

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
        key = f"{uri}{json.dumps(rng, sort_keys=True)}"  # a range's key order varies
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


def normal(text: str) -> str:
    text = "\n".join(line for line in text.splitlines() if not line.startswith("```"))
    return " ".join(text.split())[:2000]


def next_offset(result: Any) -> int:
    match = re.search(r"next page: offset=(\d+)", result.text)
    return int(match.group(1)) if match else 0


def binary(name: str, package: str = "") -> str:
    """`name` on PATH (or beside this interpreter); else skip, or fail under CI."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found:
        return found
    message = f"{name} not installed (needed for the {name} differential)"
    if package:
        message += f"; install {package}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(message)
    pytest.skip(message)


@dataclass(frozen=True)
class Case:
    """One server on one corpus project.

    `suffixes`: the files sampled (under `under`, names not containing `exclude`); `language`:
    their languageId for the raw client; `actions`: what is compared (POSITION_ACTIONS at sampled
    positions, "symbols" = each sampled file's outline); `server_root`: where the raw server is
    started, relative to the project (default: the project); `settings` / `init_options`: given to
    the raw server as the spec gives them to ours; `setup` prepares the copy (a config file the
    project would have in its repository but not in its package)."""

    project: str
    server: str
    argv: tuple[str, ...]
    language: str
    suffixes: tuple[str, ...]
    under: str = ""
    setup: Callable[[Path], None] | None = None
    exclude: str = "test"
    actions: tuple[str, ...] = POSITION_ACTIONS
    server_root: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    init_options: dict[str, Any] | None = None
    env: dict[str, str] = field(default_factory=dict)
    files: int = 4  # sampled files
    positions: int = POSITIONS
    package: str = ""  # how to install the server, for the skip message
    wait_progress: bool = False  # the raw client waits for the first $/progress end
    progress_stalls: bool = False  # its counting progress may never end (ccls): STALLED


@dataclass
class Outcome:
    agreed: int = 0
    total: int = 0
    nonempty: int = 0
    differences: list[str] = field(default_factory=list)

    def report(self, case: Case) -> str:
        lines = [
            f"{case.server} on {case.project}: {self.agreed}/{self.total} agree "
            f"({self.nonempty} non-empty answers)"
        ]
        return "\n".join(lines + [f"  differs: {d}" for d in self.differences])


def sampled_files(root: Path, case: Case) -> list[Path]:
    base = root / case.under if case.under else root
    files = sorted(
        p
        for suffix in case.suffixes
        for p in base.rglob(f"*{suffix}")
        if case.exclude not in p.name and p.is_file() and "node_modules" not in p.parts
    )
    return sample(files, case.files, seed=3)


async def differential(case: Case, tmp_path: Path) -> Outcome:
    """Ours against a raw client of the same server on `case`'s project; see `Outcome.report`."""
    argv = [binary(case.argv[0], case.package), *case.argv[1:]]
    root = corpus_copy(case.project, tmp_path)
    if case.setup:
        case.setup(root)
    files = sampled_files(root, case)
    assert files, f"no {case.suffixes} files in {case.project}/{case.under}"
    count = case.positions if _scale() >= 2 else min(case.positions, QUICK_POSITIONS)
    spots = positions(root, files, count) if set(case.actions) - {"symbols"} else []
    server_root = root / case.server_root if case.server_root else root
    raw_start = asyncio.get_running_loop().create_task(
        RawClient.start(
            argv,
            server_root,
            init_options=case.init_options,
            settings=case.settings,
            env=case.env,
        )
    )
    outcome = Outcome()
    async with lsp_run(root, [case.server]) as run:
        raw = await raw_start
        raw.stalled = STALLED if case.progress_stalls else None
        try:
            opened = sorted(
                {s.rel for s in spots} | {f.relative_to(root).as_posix() for f in files}
            )
            for rel in opened:
                await raw.open(root / rel, case.language)
            if case.wait_progress:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(raw.progress_ended.wait(), RAW_READY)
            if "symbols" in case.actions:
                for path in files:
                    rel = path.relative_to(root).as_posix()
                    same, detail, empty = await compare_symbols(run, raw, root, rel)
                    outcome.total += 1
                    outcome.nonempty += not empty
                    if same:
                        outcome.agreed += 1
                    else:
                        outcome.differences.append(f"symbols {rel}: {detail}")
            for spot in spots:
                for action in case.actions:
                    if action == "symbols":
                        continue
                    pages = await our_pages(run, action, spot)
                    same, detail, empty = await compare(root, raw, spot, action, pages)
                    outcome.total += 1
                    outcome.nonempty += not empty
                    if same:
                        outcome.agreed += 1
                    else:
                        outcome.differences.append(
                            f"{action} {spot.rel}:{spot.line} {spot.symbol}: {detail}"
                        )
        finally:
            await raw.close()
    return outcome


def check(outcome: Outcome, case: Case, threshold: float = THRESHOLD) -> None:
    print("\n" + outcome.report(case))
    assert outcome.total, f"nothing compared for {case.server} on {case.project}"
    assert outcome.nonempty, f"every answer was empty for {case.server} on {case.project}"
    assert outcome.agreed >= threshold * outcome.total, outcome.differences


async def our_pages(run: Any, action: str, spot: Position) -> list[Any]:
    args = {"action": action, "file": spot.rel, "line": spot.line, "symbol": spot.symbol}
    pages = [await run.call("lsp", args)]
    while action == "references" and next_offset(pages[-1]) and len(pages) < MAX_PAGES:
        pages.append(await run.call("lsp", args | {"offset": next_offset(pages[-1])}))
    return pages


async def raw_request(raw: RawClient, method: str, params: dict[str, Any]) -> Any:
    """An empty answer is asked again (up to three times, a second apart) while the raw server
    is fresh (RAW_WARM) and has not yet answered a cross-file question: it may be loading.
    After that an empty answer is its answer (the retries cost 2 s at each empty position)."""
    answer: Any = None
    await raw.idle(RAW_READY)
    fresh = asyncio.get_running_loop().time() - raw.started < RAW_WARM
    tries = 3 if fresh and not raw.answered else 1
    for attempt in range(tries):
        try:
            answer = await raw.request(method, params)
        except (RuntimeError, TimeoutError) as exc:
            answer = f"error: {exc}"
        cross_file = method in ("textDocument/references", "textDocument/definition")
        if cross_file and answer not in (None, [], "") and not isinstance(answer, str):
            raw.answered = True
        if answer not in (None, [], "") or attempt == tries - 1:
            break
        await asyncio.sleep(1.0)
    return answer


async def compare(
    root: Path, raw: RawClient, spot: Position, action: str, pages: list[Any]
) -> tuple[bool, str, bool]:
    ours = pages[0]
    params: dict[str, Any] = {
        "textDocument": {"uri": uri_of(root / spot.rel)},
        "position": {"line": spot.line - 1, "character": spot.column},
    }
    if action == "references":
        params["context"] = {"includeDeclaration": True}
    answer = await raw_request(raw, f"textDocument/{action}", params)
    if action == "hover":
        theirs = normal(raw_hover(answer)) if not isinstance(answer, str) else ""
        mine = normal((ours.data or {}).get("hover", "")) if not ours.is_error else ""
        same = mine == theirs or (bool(mine) and bool(theirs) and theirs[:1500] in mine)
        return same, f"ours {mine[:160]!r} raw {theirs[:160]!r}", not (mine or theirs)
    theirs_list = raw_locations(root, answer) if not isinstance(answer, str) else []
    theirs_set = set(theirs_list)
    mine_set: set[tuple[str, int]] = set()
    for page in pages:
        mine_set |= our_locations(root, page.data if not page.is_error else None)
    # Past MAX_PAGES the listed lines are a part: they must all be the raw answer's.
    partial = next_offset(pages[-1]) > 0
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


def raw_symbols(result: Any) -> list[tuple[str, int]]:
    """(name, 1-based line) of every symbol, nested DocumentSymbols flattened."""
    out: list[tuple[str, int]] = []

    def walk(items: Sequence[Any]) -> None:
        for sym in items:
            if not isinstance(sym, dict):
                continue
            rng = sym.get("selectionRange") or sym.get("range")
            rng = rng or (sym.get("location") or {}).get("range") or {}
            out.append((str(sym.get("name")), int(rng.get("start", {}).get("line", 0)) + 1))
            walk(sym.get("children") or [])

    walk(result if isinstance(result, list) else [])
    return out


async def compare_symbols(run: Any, raw: RawClient, root: Path, rel: str) -> tuple[bool, str, bool]:
    mine: list[tuple[str, int]] = []
    page = await run.call("lsp", {"action": "symbols", "file": rel})
    for _ in range(MAX_PAGES):
        mine += [(s["name"], s["line"]) for s in (page.data or {}).get("symbols", [])]
        if not next_offset(page):
            break
        offset = next_offset(page)
        page = await run.call("lsp", {"action": "symbols", "file": rel, "offset": offset})
    answer = await raw_request(
        raw, "textDocument/documentSymbol", {"textDocument": {"uri": uri_of(root / rel)}}
    )
    theirs = raw_symbols(answer) if not isinstance(answer, str) else []
    same = sorted(mine) == sorted(theirs)
    only_ours = sorted(set(mine) - set(theirs))[:4]
    only_raw = sorted(set(theirs) - set(mine))[:4]
    detail = f"ours {len(mine)}, raw {len(theirs)}; only ours {only_ours} only raw {only_raw}"
    if isinstance(answer, str) or page.is_error:
        detail += f" | ours: {page.text[:200]!r} raw: {str(answer)[:200]!r}"
    return same, detail, not (mine or theirs)


async def our_diagnostics(run: Any, rel: str) -> list[dict[str, Any]]:
    """Our `lsp diagnostics` items for one file (line, severity, code, message, source)."""
    result = await run.call("lsp", {"action": "diagnostics", "file": rel})
    assert not result.is_error, result.text
    return list((result.data or {}).get("diagnostics", []))
