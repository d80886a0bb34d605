"""The `lsp` tool: one read-tier entry point for every language-server query."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from livetools import CallContext, Result, ToolError, cap_items, cap_text, relpath, resolve_path
from livetools.files import check_regular

from .checker import run_checkers
from .ledger import SEVERITY, significant, to_item
from .positions import encode_column, locate, split_lines
from .render import (
    Lines,
    document_symbols,
    hover_text,
    location_lines,
    locations,
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

Action = Literal[
    "diagnostics",
    "definition",
    "type_definition",
    "implementation",
    "references",
    "hover",
    "symbols",
    "code_actions",
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


class LspArgs(BaseModel):
    action: Action
    file: str = Field("", description='Path from the root; "*" with diagnostics = project check.')
    line: int = Field(0, ge=0, description="1-based line.")
    symbol: str = Field("", description="Text on that line to point at; name#2 = 2nd match.")
    query: str = Field("", description="symbols: workspace search.")


DESCRIPTION = (
    "Language-server queries. Point with line + symbol (text on that line), never a column. "
    "definition|type_definition|implementation|references|hover|code_actions: file+line+symbol. "
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


async def navigate(sup: Supervisor, path: Path, args: LspArgs) -> Result:
    method, provider = NAVIGATION[args.action]
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    if not server.supports(provider, method):
        raise ToolError(f"{server.spec.id} does not support {args.action}")
    params, spot = await _position(server, path, args.line, args.symbol, rel)
    if args.action == "references":
        params["context"] = {"includeDeclaration": True}
    result = await _until_ready(server, method, params, args.action)
    head = f'{args.action} of "{args.symbol}" at {rel}:{args.line}'
    notes = [spot.note] if spot.note else []
    if args.action == "hover":
        text = cap_text(hover_text(result), HOVER_CAP)
        if not text:
            return Result(_empty(server, f"no hover information for {args.symbol}", notes))
        return Result("\n".join([head, *notes, text]), {"hover": text})
    pairs = locations(result)
    if not pairs:
        return Result(_empty(server, f"no {args.action.replace('_', ' ')} found", notes, head))
    lines = Lines(sup.root, {u: d.text for u, d in server.documents.items()})
    text_lines, data = location_lines(pairs, lines)
    if args.action == "references":
        text_lines, cut = cap_items(text_lines, REFERENCES_CAP)
        data = data[:REFERENCES_CAP]
        if cut:
            notes.append(cut)
        head = f'{len(pairs)} references to "{args.symbol}" ({rel}:{args.line})'
    return Result("\n".join([head + ":", *text_lines, *notes]), {"locations": data})


def _empty(server: LanguageServer, what: str, notes: list[str], head: str = "") -> str:
    busy = server.busy()
    text = f"{head}: {what}" if head else what
    if busy:
        text += f" — {server.spec.id} may not be ready yet ({busy}); try again shortly"
    return "\n".join([text, *notes])


async def diagnostics(sup: Supervisor, path: Path) -> Result:
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    first = path_uri(path) not in server.documents
    await server.refresh()
    doc, _ = await server.sync(path)
    bound = server.spec.first_diagnostics if first else max(WARM_DIAGNOSTICS, 5.0)
    raw = await server.diagnostics(doc, bound)
    if raw is None:
        busy = server.busy()
        return Result(
            f"diagnostics not ready for {rel}: {server.spec.id} sent none within {bound:g}s"
            + (f" ({busy})" if busy else "")
            + "; try again",
            {"ready": False},
        )
    sup.ledger.seed(path, significant(raw))
    items = sorted(
        (to_item(d) for d in raw if int(d.get("severity") or 1) <= 3),
        key=lambda i: (i.line, i.severity),
    )
    if not items:
        return Result(f"{rel}: no diagnostics ({server.spec.id})", {"diagnostics": []})
    lines = Lines(sup.root, {doc.uri: doc.text})
    shown, cut = cap_items(items, DIAGNOSTICS_CAP)
    counts = {s: sum(1 for i in items if i.severity == s) for s in SEVERITY.values()}
    summary = ", ".join(f"{n} {s}{'s' if n > 1 else ''}" for s, n in counts.items() if n)
    out = [f"{rel}: {summary} ({server.spec.id})"]
    for item in shown:
        code = f" [{item.code}]" if item.code else ""
        out.append(f"{item.line}: {item.severity}{code}: {item.message}")
        quoted = lines.text(path, item.line - 1)
        if quoted:
            out.append(f"    {quoted}")
    if cut:
        out.append(cut)
    data = [
        {"line": i.line, "severity": i.severity, "code": i.code, "message": i.message}
        for i in shown
    ]
    return Result("\n".join(out), {"diagnostics": data})


async def symbols(sup: Supervisor, args: LspArgs) -> Result:
    if args.query.strip():
        return await workspace_search(sup, args)
    if not args.file:
        raise ToolError("symbols needs file (outline of one file) or query (workspace search)")
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
    kept, cut = cap_items(rows, DOCUMENT_SYMBOLS_CAP)
    text = [f"{len(rows)} symbols in {rel} (line: kind name):", *(r[0] for r in kept)]
    if cut:
        text.append(cut)
    return Result("\n".join(text), {"symbols": [r[1] for r in kept]})


async def workspace_search(sup: Supervisor, args: LspArgs) -> Result:
    query = args.query.strip()
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
    for server in servers:
        if not server.supports("workspaceSymbolProvider", "workspace/symbol"):
            unsupported.append(server.spec.id)
            continue
        await server.refresh()
        result = await _until_ready(server, "workspace/symbol", {"query": query}, "symbols")
        rows += workspace_symbols(result, Lines(sup.root))
    if unsupported and not rows and len(unsupported) == len(servers):
        raise ToolError(
            f"{', '.join(unsupported)} does not support workspace symbol search; "
            "use symbols with file for one file's outline"
        )
    if not rows:
        return Result(f'no symbols matching "{query}"', {"symbols": []})
    # Servers match fuzzily and include libraries: the project's own, literal matches first.
    needle = query.lower()
    rows.sort(key=lambda r: (r[1]["path"].startswith("/"), needle not in r[1]["name"].lower()))
    kept, cut = cap_items(rows, WORKSPACE_SYMBOLS_CAP)
    text = [f'{len(rows)} symbols matching "{query}":', *(r[0] for r in kept)]
    if cut:
        text.append(cut)
    return Result("\n".join(text), {"symbols": [r[1] for r in kept]})


async def code_actions(sup: Supervisor, path: Path, args: LspArgs) -> Result:
    rel = relpath(sup.root, path)
    server = await sup.server_for(path)
    method = "textDocument/codeAction"
    if not server.supports("codeActionProvider", method):
        raise ToolError(f"{server.spec.id} does not support code actions")
    params, spot = await _position(server, path, args.line, args.symbol, rel)
    doc = server.documents[params["textDocument"]["uri"]]
    line_text = split_lines(doc.text)[spot.line]
    start = params["position"]
    end = {
        "line": spot.line,
        "character": encode_column(line_text, spot.index + spot.length, server.encoding),
    }
    on_line = []
    try:
        raw = await server.diagnostics(doc, WARM_DIAGNOSTICS)
    except ServerGone:
        raise
    except ToolError:
        raw = None
    for diag in raw or []:
        rng = diag.get("range") or {}
        if rng.get("start", {}).get("line", -1) <= spot.line <= rng.get("end", {}).get("line", -1):
            on_line.append(diag)
    request = {
        "textDocument": params["textDocument"],
        "range": {"start": start, "end": end},
        "context": {"diagnostics": on_line, "triggerKind": 1},
    }
    result = await server.request(method, request, what="code_actions")
    items = [a for a in result or [] if isinstance(a, dict)]
    head = f'code actions at "{args.symbol}" ({rel}:{args.line})'
    if not items:
        return Result(f"{head}: none offered by {server.spec.id}", {"actions": []})
    rows = []
    for action in items:
        kind = action.get("kind") or ("command" if "command" in action else "")
        mark = ", preferred" if action.get("isPreferred") else ""
        rows.append((f"- {action.get('title')} ({kind or 'action'}{mark})", action.get("title")))
    kept, cut = cap_items(rows, CODE_ACTIONS_CAP)
    text = [f"{head} (listed, not applied):", *(r[0] for r in kept)]
    if cut:
        text.append(cut)
    return Result("\n".join(text), {"actions": [r[1] for r in kept]})


async def status(sup: Supervisor) -> Result:
    info = await sup.status()
    out = []
    for row in info["running"]:
        ready = "ready" if row["ready"] else "warming up"
        out.append(
            f"running: {row['server']} root={row['root']} pid={row['pid']} "
            f"up {row['uptime_s']}s, {ready if row['state'] == 'running' else row['state']}"
            + (f"; {row['python']}" if row.get("python") else "")
        )
    running = {r["server"] for r in info["running"]}
    for row in info["servers"]:
        if row["server"] in running:
            continue
        if row["usable"]:
            out.append(f"usable: {row['server']} (root {row['root']}; starts at first use)")
        else:
            out.append(f"not usable: {row['server']}: {row['reason']}")
    for spec_id, reason in sup.crash_log():
        out.append(f"last crash: {spec_id}: {reason}")
    return Result("\n".join(out) or "no language servers are configured", info)
