"""The `lsp` tool: one read-tier entry point for every language-server query."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from livetools import CallContext, Result, ToolError, cap_items, cap_text, relpath, resolve_path
from livetools.files import check_regular

from .checker import run_checkers
from .jsonrpc import RpcTimeout
from .ledger import SEVERITY, significant, to_item
from .positions import encode_column, locate, split_lines, symbol_name
from .render import (
    Lines,
    call_rows,
    document_symbols,
    hover_text,
    location_rows,
    locations,
    quote_rows,
    workspace_symbols,
)
from .server import LanguageServer, ServerGone, path_uri
from .supervisor import Supervisor

REFERENCES_CAP = 50
WORKSPACE_SYMBOLS_CAP = 100
DOCUMENT_SYMBOLS_CAP = 200
DIAGNOSTICS_CAP = 100
CODE_ACTIONS_CAP = 30
HOVER_CAP = 3000
WARM_DIAGNOSTICS = 3.0
READY_WAIT = 12.0  # how long an empty answer from a warming server is retried
CALLS_CAP = 50
T = TypeVar("T")

Action = Literal[
    "diagnostics",
    "definition",
    "type_definition",
    "implementation",
    "references",
    "hover",
    "symbols",
    "code_actions",
    "callers",
    "callees",
    "status",
    "reload",
]

# action -> (method, static capability, what the model called it)
NAVIGATION = {
    "definition": ("textDocument/definition", "definitionProvider"),
    "type_definition": ("textDocument/typeDefinition", "typeDefinitionProvider"),
    "implementation": ("textDocument/implementation", "implementationProvider"),
    "references": ("textDocument/references", "referencesProvider"),
    "hover": ("textDocument/hover", "hoverProvider"),
}


PAGED = ("references", "implementation", "symbols", "callers", "callees")
DECLARATION_WAIT = 5.0  # seconds the definition asked to order references may take


class LspArgs(BaseModel):
    action: Action
    file: str = Field("", description="Path from the root.")
    line: int = Field(0, ge=0, description="1-based line.")
    symbol: str = Field("", description="name#2 = its 2nd match on the line.")
    query: str = ""
    path: str = Field("", description="references|symbols|calls: only under this folder/file.")
    offset: int = Field(0, ge=0, description="Skip this many results (next page).")


DESCRIPTION = (
    "Language-server queries. Point with line + symbol (text on that line), never a column. "
    "definition|type_definition|implementation|references|hover|code_actions|callers|callees: "
    "file+line+symbol. "
    'diagnostics: file, or "*" = project checker. symbols: file = outline, query = workspace '
    "search. status; reload = restart servers."
)


async def lsp(ctx: CallContext, args: LspArgs) -> Result:
    sup: Supervisor = ctx.resource
    if args.action == "status":
        return await status(sup)
    if args.action == "reload":
        stopped = await sup.reload()
        text = "stopped " + ", ".join(stopped) if stopped else "no server was running"
        return Result(f"{text}; servers start again at their next call", {"stopped": stopped})
    if args.action == "diagnostics":
        if args.file == "*":
            return await run_checkers(sup)
        return await diagnostics(sup, _file(sup, args))
    if (args.path or args.offset) and args.action not in PAGED:
        raise ToolError(f"path and offset page {', '.join(PAGED)}; {args.action} takes neither")
    if args.action == "symbols":
        return await symbols(sup, args)
    path = _file(sup, args)
    if not args.line:
        raise ToolError(f"{args.action} needs line (1-based) and symbol (text on that line)")
    if not args.symbol:
        raise ToolError(
            f"{args.action} needs symbol: the name on line {args.line} to point at "
            "(a column is never guessed)"
        )
    if args.action == "code_actions":
        return await code_actions(sup, path, args)
    if args.action in ("callers", "callees"):
        return await calls(sup, path, args)
    return await navigate(sup, path, args)


def _file(sup: Supervisor, args: LspArgs) -> Path:
    return _file_path(sup, args.file, args.action)


def _file_path(sup: Supervisor, file: str, action: str) -> Path:
    if not file:
        raise ToolError(f"{action} needs file (a path relative to the project root)")
    path = resolve_path(sup.root, file, must_exist=True)
    if path.is_dir():
        raise ToolError(f"{file} is a directory; pass a file")
    check_regular(path, sup.root)
    return path


async def _position(
    server: LanguageServer, path: Path, line: int, symbol: str, rel: str
) -> tuple[dict[str, Any], Any]:
    await server.refresh()
    doc, _ = await server.sync(path)
    spot = locate(doc.text, line, symbol, rel)
    lines = split_lines(doc.text)
    column = encode_column(lines[spot.line], spot.index, server.encoding)
    position = {"line": spot.line, "character": column}
    params = {"textDocument": {"uri": doc.uri}, "position": position}
    return params, spot


async def _until_ready(server: LanguageServer, method: str, params: Any, what: str) -> Any:
    """An empty answer from a server that is still starting or indexing means "not ready", not
    "nothing": retry it until the server settles, within a bound."""
    await server.loaded()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_WAIT
    while True:
        result = await server.request(method, params, what=what)
        if result or server.busy() is None:
            return result
        remaining = deadline - loop.time()
        if remaining <= 0:
            return result
        await server.wait_change(min(0.3, remaining))


async def _whole_project(
    sup: Supervisor, server: LanguageServer, ask: Callable[[], Awaitable[T]]
) -> tuple[T, str | None]:
    """A cross-file question (references, implementation, workspace symbols, calls): asked once
    the server has loaded its project (bounded by the run option `ready_timeout`), and asked
    again when loading moved on while it ran. Returns the answer and, when the bound ran out
    first, why it may be incomplete — a partial answer is never presented as whole."""
    bound = sup.ready_timeout
    if server.readiness.waited_out and server.loading():
        bound = min(bound, 1.0)  # it ran out once already (an hours-long index): do not stall
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    pending = await server.ready(bound)
    sent = time.monotonic()
    result = await ask()
    for _ in range(2):  # loading moved on while it ran: the answer may predate the load
        if not server.readiness.settled_since(sent):
            break
        pending = await server.ready(max(0.0, deadline - loop.time()))
        sent = time.monotonic()
        result = await ask()
    if pending is None:
        return result, None
    server.readiness.waited_out = True
    if "error" in pending.lower():  # gopls's "Error loading workspace" never ends: not loading
        return result, (
            f"may be incomplete: {server.spec.id} could not load its project ({pending}: "
            "missing dependencies?); fix that, then ask again"
        )
    return result, (
        f"may be incomplete: {server.spec.id} was {pending} after {bound:g}s "
        "(its project is still loading); ask again shortly"
    )


def _scope(sup: Supervisor, args: LspArgs) -> str:
    """The `path` filter as a root-relative folder or file ("" = everything)."""
    if not args.path.strip():
        return ""
    try:
        target = resolve_path(sup.root, args.path.strip(), must_exist=True)
    except ToolError as exc:
        raise ToolError(f"path: {exc}; pass a folder or file relative to the root") from None
    rel = relpath(sup.root, target)
    return "" if rel == "." else rel


def _inside(where: str, scope: str) -> bool:
    return not scope or where == scope or where.startswith(scope.rstrip("/") + "/")


def _page(rows: list[T], offset: int, cap: int, noun: str) -> tuple[list[T], str, str | None]:
    """One page of `rows`: the rows, "51-100 of 778" when paged (else ""), and the note on
    how to get the next page. Shown + skipped + truncated always add up to the total."""
    total = len(rows)
    if offset and offset >= total:
        raise ToolError(
            f"offset {offset} is past the end: {total} {noun} in all; use offset < {total}"
        )
    shown = rows[offset : offset + cap]
    rest = total - offset - len(shown)
    span = f"{offset + 1}-{offset + len(shown)} of {total}" if offset or rest else ""
    note = (
        f"truncated: {rest} more {noun}; next page: offset={offset + len(shown)}" if rest else None
    )
    return shown, span, note


async def navigate(sup: Supervisor, path: Path, args: LspArgs) -> Result:
    method, provider = NAVIGATION[args.action]
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    if not server.supports(provider, method):
        raise ToolError(f"{server.spec.id} does not support {args.action}")
    params, spot = await _position(server, path, args.line, args.symbol, rel)
    if args.action == "references":
        params["context"] = {"includeDeclaration": True}
    scope = _scope(sup, args)
    incomplete = None
    if args.action in ("references", "implementation"):
        result, incomplete = await _whole_project(
            sup, server, lambda: _until_ready(server, method, params, args.action)
        )
    else:
        result = await _until_ready(server, method, params, args.action)
    name = symbol_name(args.symbol)
    head = f'{args.action} of "{name}" at {rel}:{args.line}'
    notes = [spot.note] if spot.note else []
    if incomplete:
        notes.append(incomplete)
    if args.action == "hover":
        text = cap_text(hover_text(result), HOVER_CAP)
        if not text:
            return Result(_empty(server, f"no hover information for {args.symbol}", notes))
        return Result("\n".join([head, *notes, text]), {"hover": text})
    pairs = locations(result)
    if not pairs:
        return Result(_empty(server, f"no {args.action.replace('_', ' ')} found", notes, head))
    lines = Lines(sup.root, {u: d.text for u, d in server.documents.items()})
    rows = location_rows(pairs, lines)
    if args.action in ("references", "implementation"):
        # The same order on every call (servers answer in the order their threads finish, and
        # pages must be the same on the next call): the declaration first, then the project's
        # own files in path order.
        rows.sort(key=lambda r: (bool(r.get("outside_root")), r["path"], r["line"]))
        if args.action == "references":
            declared = await _declaration(server, params)
            rows.sort(key=lambda r: (r["abs"], r["line"] - 1) not in declared)
    if args.action in ("references", "implementation") and (
        scope or args.offset or len(rows) > REFERENCES_CAP
    ):
        rows = [r for r in rows if _inside(r["path"], scope)]
        if not rows:
            where = f"under {scope}" if scope else ""
            return Result(_empty(server, f"no {args.action} {where}".strip(), notes, head))
        distinct = len(rows)
        count = sum(r["count"] for r in rows)
        rows, span, cut = _page(rows, args.offset, REFERENCES_CAP, "lines")
        if cut:
            notes.append(cut)
    else:
        count, distinct, span = len(pairs), len(rows), ""
    text_lines, data = quote_rows(rows, lines)
    if args.action == "references":
        on = f" on {distinct} lines" if distinct != count else ""
        where = f" under {scope}" if scope else ""
        head = f'{count} references to "{name}"{where}{on} ({rel}:{args.line})'
        if span:
            head += f", lines {span}"
    out: dict[str, Any] = {"locations": data}
    if incomplete:
        out["complete"] = False
    return Result("\n".join([head + ":", *text_lines, *notes]), out)


async def _declaration(server: LanguageServer, params: dict[str, Any]) -> set[tuple[Path, int]]:
    """Where the symbol is declared (file, 0-based line), to list it first; nothing when the
    server has no definitions or does not answer in time."""
    if not server.supports("definitionProvider", "textDocument/definition"):
        return set()
    position = {k: v for k, v in params.items() if k != "context"}
    try:
        method, bound = "textDocument/definition", DECLARATION_WAIT
        result = await server.request(method, position, bound=bound, what="definition", soft=True)
    except (RpcTimeout, ToolError):
        return set()
    return set(locations(result))


def _empty(server: LanguageServer, what: str, notes: list[str], head: str = "") -> str:
    busy = server.busy()
    text = f"{head}: {what}" if head else what
    if busy:
        text += f" — {server.spec.id} may not be ready yet ({busy}); try again shortly"
    return "\n".join([text, *notes])


async def diagnostics(sup: Supervisor, path: Path) -> Result:
    """The navigating server's diagnostics and every linter's beside it (ruff beside
    basedpyright), each item labelled with its server when there are several."""
    rel = relpath(sup.root, path)
    servers: list[LanguageServer] = []
    notes: list[str] = []
    if sup.candidates(path) or not sup.linter_specs(path):
        try:
            servers.append(await sup.server_for(path))
        except ToolError as exc:
            if not sup.linter_specs(path):
                raise
            notes.append(str(exc))
    linters, problems = await sup.linters_for(path)
    servers += linters
    notes += [f"not linted: {p}" for p in problems]
    if not servers:
        raise ToolError(f"no server checks {rel}: " + "; ".join(notes))
    answers = await asyncio.gather(*(_published(sup, s, path) for s in servers))
    items: list[tuple[str, Any]] = []
    counted: list[str] = []
    doc_text = ""
    for server, (doc, raw, bound) in zip(servers, answers, strict=True):
        doc_text = doc.text
        source = server.spec.id
        if raw is None:
            busy = server.busy()
            notes.append(
                f"diagnostics not ready for {rel}: {source} sent none within {bound:g}s"
                + (f" ({busy})" if busy else "")
                + "; try again"
            )
            continue
        sup.ledger.seed(path, significant(raw, server.spec.linter), source)
        mine = [to_item(d) for d in raw if int(d.get("severity") or 1) <= 3]
        items += [(source, i) for i in mine]
        counts = {v: sum(1 for i in mine if i.severity == v) for v in SEVERITY.values()}
        summary = ", ".join(f"{n} {v}{'s' if n > 1 else ''}" for v, n in counts.items() if n)
        counted.append(f"{summary or 'no diagnostics'} ({source})")
    if not counted:
        return Result("\n".join(notes), {"ready": False})
    tail = [f"note: {n}" for n in notes]
    if not items:
        names = ", ".join(c.removeprefix("no diagnostics (")[:-1] for c in counted)
        text = "\n".join([f"{rel}: no diagnostics ({names})", *tail])
        return Result(text, {"diagnostics": []})
    items.sort(key=lambda pair: (pair[1].line, pair[1].severity))
    labelled = len({source for source, _ in items}) > 1
    lines = Lines(sup.root, {path_uri(path): doc_text})
    _, cut = cap_items(items, DIAGNOSTICS_CAP)
    shown = _shares(items, DIAGNOSTICS_CAP)
    out = [f"{rel}: {'; '.join(counted)}"]
    data = []
    for source, item in shown:
        code = f" [{item.code}]" if item.code else ""
        whose = f" ({source})" if labelled else ""
        out.append(f"{item.line}: {item.severity}{code}{whose}: {item.message}")
        quoted = lines.text(path, item.line - 1)
        if quoted:
            out.append(f"    {quoted}")
        entry = {"line": item.line, "severity": item.severity, "code": item.code}
        data.append(entry | {"message": item.message, "source": source})
    if cut:
        out.append(cut)
    return Result("\n".join(out + tail), {"diagnostics": data})


def _shares(items: list[tuple[str, Any]], cap: int) -> list[tuple[str, Any]]:
    """At most `cap` items, each server keeping an equal share first (ruff's 13 warnings are
    not pushed out by basedpyright's 444), then the rest in order; shown by line."""
    if len(items) <= cap:
        return items
    sources = list(dict.fromkeys(source for source, _ in items))
    share = cap // len(sources)
    kept: list[int] = []
    for source in sources:
        kept += [i for i, (s, _) in enumerate(items) if s == source][:share]
    chosen = set(kept)
    kept += [i for i in range(len(items)) if i not in chosen][: cap - len(kept)]
    return [items[i] for i in sorted(kept)]


async def _published(
    sup: Supervisor, server: LanguageServer, path: Path
) -> tuple[Any, list[dict[str, Any]] | None, float]:
    first = path_uri(path) not in server.documents
    await server.refresh()
    doc, _ = await server.sync(path)
    bound = server.spec.first_diagnostics if first else max(WARM_DIAGNOSTICS, 5.0)
    return doc, await server.diagnostics(doc, bound), bound


async def symbols(sup: Supervisor, args: LspArgs) -> Result:
    if args.query.strip():
        return await workspace_search(sup, args)
    if not args.file:
        raise ToolError("symbols needs file (outline of one file) or query (workspace search)")
    if args.path:
        raise ToolError("path filters a workspace search (query); an outline is one file already")
    path = _file(sup, args)
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    method = "textDocument/documentSymbol"
    if not server.supports("documentSymbolProvider", method):
        raise ToolError(f"{server.spec.id} does not support document symbols")
    await server.refresh()
    doc, _ = await server.sync(path)
    result = await _until_ready(server, method, {"textDocument": {"uri": doc.uri}}, "symbols")
    lines = Lines(sup.root, {doc.uri: doc.text})
    rows = document_symbols(result, lines, path)
    if not rows:
        return Result(_empty(server, f"no symbols in {rel}", []), {"symbols": []})
    kept, span, cut = _page(rows, args.offset, DOCUMENT_SYMBOLS_CAP, "symbols")
    head = f"{len(rows)} symbols in {rel}" + (f", {span}" if span else "")
    text = [f"{head} (line: kind name):", *(r[0] for r in kept)]
    if cut:
        text.append(cut)
    return Result("\n".join(text), {"symbols": [r[1] for r in kept]})


async def workspace_search(sup: Supervisor, args: LspArgs) -> Result:
    query = args.query.strip()
    scope = _scope(sup, args)
    servers: list[LanguageServer] = []
    if args.file:
        servers.append(await sup.server_for(_file(sup, args)))
    else:
        servers = await sup.project_servers()
    if not servers:
        raise ToolError(
            "no language server is usable in this checkout for a workspace search; "
            "see lsp status, or pass file to pick the server"
        )
    rows: list[tuple[str, dict]] = []
    unsupported = []
    notes: list[str] = []
    asked: list[LanguageServer] = []
    for server in servers:
        if not server.supports("workspaceSymbolProvider", "workspace/symbol"):
            unsupported.append(server.spec.id)
            continue
        asked.append(server)
        await server.refresh()
        result, incomplete = await _whole_project(
            sup,
            server,
            lambda server=server: _until_ready(
                server, "workspace/symbol", {"query": query}, "symbols"
            ),
        )
        if incomplete:
            notes.append(incomplete)
        found = workspace_symbols(result, Lines(sup.root))
        limit = server.spec.symbol_limit
        if limit and len(found) >= limit:
            notes.append(
                f"{server.spec.id} cut its answer at {limit} symbols (its own limit, and which "
                "ones it keeps can change between calls): narrow the query"
            )
        rows += found
    if unsupported and not rows and len(unsupported) == len(servers):
        raise ToolError(
            f"{', '.join(unsupported)} does not support workspace symbol search; "
            "use symbols with file for one file's outline"
        )
    answered = ", ".join(_serves(s) for s in asked)
    if not args.file:
        notes.append(f"searched by {answered}; pass file to ask the server of another language")
    rows = [r for r in rows if _inside(r[1]["path"], scope)]
    where = f" under {scope}" if scope else ""
    if not rows:
        return Result("\n".join([f'no symbols matching "{query}"{where}', *notes]), {"symbols": []})
    # Servers match fuzzily and include libraries: the project's own, literal matches first.
    needle = query.lower()
    rows.sort(
        key=lambda r: (
            r[1]["path"].startswith("/"),
            needle not in r[1]["name"].lower(),
            r[1]["path"],
            r[1]["line"] or 0,
        )
    )
    kept, span, cut = _page(rows, args.offset, WORKSPACE_SYMBOLS_CAP, "symbols")
    head = f'{len(rows)} symbols matching "{query}"{where}' + (f", {span}" if span else "")
    text = [f"{head}:", *(r[0] for r in kept)]
    if cut:
        text.append(cut)
    data: dict[str, Any] = {"symbols": [r[1] for r in kept]}
    if any(n.startswith("may be incomplete") for n in notes):
        data["complete"] = False
    return Result("\n".join([*text, *notes]), data)


def _serves(server: LanguageServer) -> str:
    return f"{server.spec.id} ({' '.join(list(server.spec.extensions)[:3])})"


async def calls(sup: Supervisor, path: Path, args: LspArgs) -> Result:
    """callers (incoming) or callees (outgoing) of the function at line + symbol."""
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    if not server.supports("callHierarchyProvider", "textDocument/prepareCallHierarchy"):
        raise ToolError(
            f"{server.spec.id} does not support call hierarchy ({args.action}); "
            "use references instead"
        )
    scope = _scope(sup, args)
    params, spot = await _position(server, path, args.line, args.symbol, rel)
    incoming = args.action == "callers"
    method = "callHierarchy/incomingCalls" if incoming else "callHierarchy/outgoingCalls"

    async def ask() -> tuple[list[Any], list[Any]]:
        items = await _until_ready(server, "textDocument/prepareCallHierarchy", params, args.action)
        items = [i for i in items or [] if isinstance(i, dict)]
        found: list[Any] = []
        for item in items[:3]:
            answer = await _until_ready(server, method, {"item": item}, args.action)
            found += [c for c in answer or [] if isinstance(c, dict)]
        return items, found

    (items, found), incomplete = await _whole_project(sup, server, ask)
    notes = [spot.note] if spot.note else []
    if incomplete:
        notes.append(incomplete)
    head = f'{args.action} of "{args.symbol}" ({rel}:{args.line})'
    if not items:
        return Result(
            _empty(
                server,
                "no function or method there (the server prepared no call item)",
                notes,
                head,
            ),
            {"calls": []},
        )
    lines = Lines(sup.root, {u: d.text for u, d in server.documents.items()})
    rows = [r for r in call_rows(found, incoming, lines) if _inside(r[1]["path"], scope)]
    where = f" under {scope}" if scope else ""
    if not rows:
        what = "no callers" if incoming else "no calls"
        return Result(_empty(server, f"{what} found{where}", notes, head), {"calls": []})
    kept, span, cut = _page(rows, args.offset, CALLS_CAP, args.action)
    noun = ("caller" if incoming else "callee") + ("s" if len(rows) != 1 else "")
    title = f'{len(rows)} {noun} of "{args.symbol}"{where} ({rel}:{args.line})'
    title += f", {span}" if span else ""
    sites = "call sites: lines in that file" if incoming else f"call sites: lines in {rel}"
    text = [f"{title} ({sites}):", *(r[0] for r in kept), *([cut] if cut else []), *notes]
    data: dict[str, Any] = {"calls": [r[1] for r in kept]}
    if incomplete:
        data["complete"] = False
    return Result("\n".join(text), data)


async def code_actions(sup: Supervisor, path: Path, args: LspArgs) -> Result:
    """What the navigating server offers at the symbol, and every linter beside it (ruff's
    "Remove unused import"), each labelled with its server when there are several."""
    rel = relpath(sup.root, path)
    method = "textDocument/codeAction"
    servers: list[LanguageServer] = []
    if sup.candidates(path) or not sup.linter_specs(path):
        try:
            servers.append(await sup.server_for(path))
        except ToolError:
            if not sup.linter_specs(path):
                raise
    servers += (await sup.linters_for(path))[0]
    offering = [s for s in servers if s.supports("codeActionProvider", method)]
    if not offering:
        names = ", ".join(s.spec.id for s in servers) or "no server"
        raise ToolError(f"{names} does not support code actions ({rel})")
    head = f'code actions at "{args.symbol}" ({rel}:{args.line})'
    rows = []
    for server in offering:
        whose = f" [{server.spec.id}]" if len(offering) > 1 else ""
        for action in await _offered(server, path, args, rel):
            kind = action.get("kind") or ("command" if "command" in action else "")
            mark = ", preferred" if action.get("isPreferred") else ""
            ident = sup.offered.add(server, action, path)
            title = action.get("title")
            line = f"- {ident}: {title} ({kind or 'action'}{mark}){whose}"
            rows.append((line, {"id": ident, "title": title, "server": server.spec.id}))
    if not rows:
        names = ", ".join(s.spec.id for s in offering)
        return Result(f"{head}: none offered by {names}", {"actions": []})
    kept, cut = cap_items(rows, CODE_ACTIONS_CAP)
    text = [f"{head} (apply one: lsp_rename apply=ID):", *(r[0] for r in kept)]
    if cut:
        text.append(cut)
    return Result("\n".join(text), {"actions": [r[1] for r in kept]})


async def _offered(
    server: LanguageServer, path: Path, args: LspArgs, rel: str
) -> list[dict[str, Any]]:
    return await _offered_range(server, path, rel, args.line, args.symbol)


async def _offered_range(
    server: LanguageServer,
    path: Path,
    rel: str,
    line: int | None,
    symbol: str | None,
    only: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The server's code actions at `symbol` on `line`, or for the whole file (no line), with
    the diagnostics there as context; `only`: of these kinds."""
    first = path_uri(path) not in server.documents
    if line and symbol:
        params, spot = await _position(server, path, line, symbol, rel)
        doc = server.documents[params["textDocument"]["uri"]]
        line_text = split_lines(doc.text)[spot.line]
        start = params["position"]
        end = {
            "line": spot.line,
            "character": encode_column(line_text, spot.index + spot.length, server.encoding),
        }
        rows = (spot.line, spot.line)
    else:
        await server.refresh()
        doc, _ = await server.sync(path)
        lines = split_lines(doc.text)
        params = {"textDocument": {"uri": doc.uri}}
        start = {"line": 0, "character": 0}
        last = max(len(lines) - 1, 0)
        end = {
            "line": last,
            "character": encode_column(lines[last], len(lines[last]), server.encoding)
            if lines
            else 0,
        }
        rows = (0, last)
    on_line = []
    try:
        # Quick fixes are offered for the line's diagnostics: a file just opened waits for its
        # first ones (typescript-language-server offered no "Add import" without them).
        bound = server.spec.first_diagnostics if first else WARM_DIAGNOSTICS
        raw = await server.diagnostics(doc, bound)
    except ServerGone:
        raise
    except ToolError:
        raw = None
    for diag in raw or []:
        rng = diag.get("range") or {}
        low, high = rng.get("start", {}).get("line", -1), rng.get("end", {}).get("line", -1)
        if low <= rows[1] and rows[0] <= high:
            on_line.append(diag)
    context: dict[str, Any] = {"diagnostics": on_line, "triggerKind": 1}
    if only:
        context["only"] = only
    request = {"textDocument": params["textDocument"], "range": {"start": start, "end": end}}
    request["context"] = context
    result = await server.request("textDocument/codeAction", request, what="code_actions")
    return [a for a in result or [] if isinstance(a, dict)]


async def status(sup: Supervisor) -> Result:
    info = await sup.status()
    out = []
    if info.get("sandbox"):
        out.append(f"sandbox: {info['sandbox']}: servers and checkers run inside it")
    for row in info["running"]:
        ready = "ready" if row["ready"] else "warming up"
        if row.get("failing"):  # it answers, but with errors: not "ready"
            ready = f"failing requests (last: {row['failing']})"
        out.append(
            f"running: {row['server']} root={row['root']} pid={row['pid']} "
            f"up {row['uptime_s']}s, {ready if row['state'] == 'running' else row['state']}"
            + (f"; {row['python']}" if row.get("python") else "")
            + (f"; disk changes: {row['watch']}" if row.get("watch") != "inotify" else "")
        )
    running = {r["server"] for r in info["running"]}
    for row in info["servers"]:
        role = ""
        if row.get("answers"):
            role = f"answers {' '.join(row['answers'])}"
        elif row.get("standby"):
            role = "stands by (another usable server answers its files; lsp.prefer reorders)"
        elif row.get("lints"):
            role = f"lints {' '.join(row['lints'])} (diagnostics only, beside the one answering)"
        if row["server"] in running:
            if role:
                out.append(f"{row['server']} {role}")
            continue
        if row["usable"]:
            out.append(f"usable: {row['server']} (root {row['root']}; starts at first use); {role}")
        else:
            out.append(f"not usable: {row['server']}: {row['reason']}")
    for spec_id, reason in sup.crash_log():
        out.append(f"last crash: {spec_id}: {reason}")
    return Result("\n".join(out) or "no language servers are configured", info)
