"""Applying a code action: `lsp code_actions` lists what the server offers, each with a short id;
`lsp_rename apply=ID` resolves it (`codeAction/resolve` where the server wants that) and writes
its WorkspaceEdit through the same staged, compare-and-swap, all-or-nothing write as a rename,
with the write's new diagnostics. An action that is a command (gopls' fill struct, clangd's
tweaks) runs with the server's `workspace/applyEdit` requests captured, and those edits go
through the same write; a command the server does not declare is not run, and one that changes
files on disk by itself is reported as such. `apply` also takes a kind
(`source.organizeImports`, `quickfix`): the file's preferred action of that kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import CallContext, Result, ToolError, relpath
from livetools.approvals import confirm
from livetools.files import EditConflict

from .server import LanguageServer
from .subprojects import SKIP_DIRS

if TYPE_CHECKING:
    from .supervisor import Supervisor

KEPT = 200  # offered actions remembered per run (the latest listings)
DIFF_LINES = 60


@dataclass
class Offered:
    server: LanguageServer
    action: dict[str, Any]
    path: Path
    version: int | None  # the document's version when listed


class OfferedActions:
    """The code actions listed in this run, by id (`a1`, `a2`, …)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Offered] = OrderedDict()
        self._count = 0

    def add(self, server: LanguageServer, action: dict[str, Any], path: Path) -> str:
        self._count += 1
        ident = f"a{self._count}"
        doc = next((d for d in server.documents.values() if d.path == path), None)
        self._items[ident] = Offered(server, action, path, doc.version if doc else None)
        while len(self._items) > KEPT:
            self._items.popitem(last=False)
        return ident

    def get(self, ident: str) -> Offered:
        found = self._items.get(ident.strip())
        if found is None:
            known = ", ".join(list(self._items)[-10:]) or "none"
            raise ToolError(
                f"apply {ident!r}: no such code action in this run (latest ids: {known}); list "
                "them with lsp action=code_actions at the line, then pass one of its ids"
            )
        return found


async def apply_action(ctx: CallContext, sup: Supervisor, ident: str) -> Result:
    from .rename import Workspace

    offered = sup.offered.get(ident)
    server, action = offered.server, offered.action
    if not server.alive:
        raise ToolError(f"{server.spec.id} restarted since {ident} was listed; list them again")
    doc = next((d for d in server.documents.values() if d.path == offered.path), None)
    await server.refresh()
    if doc is not None and offered.version is not None and doc.version != offered.version:
        raise ToolError(
            f"{relpath(sup.root, offered.path)} changed since {ident} was listed; nothing was "
            "written. List the code actions again"
        )
    title = str(action.get("title", ident))
    if "edit" not in action and _resolvable(server):
        resolved = await server.request("codeAction/resolve", action, what="code action")
        if isinstance(resolved, dict):
            action = resolved
    edit = action.get("edit")
    edits = [edit] if isinstance(edit, dict) and _changes(edit) else []
    command = action.get("command") if isinstance(action.get("command"), dict) else None
    if command is None and isinstance(action.get("command"), str):
        command = action  # a bare Command
    if not edits and command is not None:
        edits = await _run_command(sup, server, command, title)
    if not edits:
        raise ToolError(f'"{title}" carries no edit; nothing was written')
    work = Workspace(sup, server)
    for one in edits:
        work.apply_edit(one)
    staged = work.stage("action", "List the code actions again.")
    if not staged.changes:
        raise ToolError(f'"{title}" changes nothing; nothing was written')
    edited = {relpath(sup.root, p): n for p, n in work.edits.items() if n}
    await confirm(ctx, f'apply "{title}": ' + ", ".join(f"{f} ({n})" for f, n in edited.items()))
    diff = staged.diff(DIFF_LINES)
    try:
        notes = await staged.apply(ctx.run)
    except EditConflict as exc:
        raise ToolError(str(exc)) from None
    head = f'applied "{title}": {sum(edited.values())} edits in {len(edited)} files'
    return Result(
        "\n".join([head, diff, *notes]), {"files": staged.files(), "edits": edited, "notes": notes}
    )


KIND = re.compile(r"(?:quickfix|refactor|source)(?:\.[\w.-]+)?")


async def apply_kind(
    ctx: CallContext, sup: Supervisor, path: Path, kind: str, line: int | None, symbol: str | None
) -> Result:
    """`apply="source.organizeImports"` (a kind instead of an id): the action of that kind the
    servers offer for the whole file (or at line + symbol), the preferred one first, applied
    like a listed one."""
    from .actions import _offered_range

    rel = relpath(sup.root, path)
    servers = [await sup.server_for(path)] if sup.candidates(path) else []
    servers += (await sup.linters_for(path))[0]
    method = "textDocument/codeAction"
    for server in [s for s in servers if s.supports("codeActionProvider", method)]:
        actions = await _offered_range(server, path, rel, line, symbol, only=[kind])
        fitting = [
            a
            for a in actions
            if str(a.get("kind") or "") == kind or str(a.get("kind") or "").startswith(kind + ".")
        ]
        fitting.sort(key=lambda a: not a.get("isPreferred"))
        if fitting:
            return await apply_action(ctx, sup, sup.offered.add(server, fitting[0], path))
    where = f"{rel}:{line}" if line else rel
    names = ", ".join(s.spec.id for s in servers) or "no server"
    raise ToolError(
        f"apply {kind!r}: {names} offered no {kind} action for {where}; list what is offered "
        "with lsp action=code_actions at a line"
    )


COMMAND_BOUND = 60.0  # seconds a code action's command may take
STAMP_FILES = 50_000  # files looked at for what a command changed by itself
STAMP_SECONDS = 1.0


async def _run_command(
    sup: Supervisor, server: LanguageServer, command: dict[str, Any], title: str
) -> list[dict[str, Any]]:
    """Run the action's command with the server's `workspace/applyEdit` requests captured (our
    checked write applies them after). A command the server does not declare is not run; one
    that changed files on disk by itself is reported as such, and nothing more is written."""
    name = str(command.get("command"))
    declared = (server.capabilities.get("executeCommandProvider") or {}).get("commands") or []
    if name not in declared:
        raise ToolError(
            f'"{title}" needs {server.spec.id} to run {name!r}, which it does not declare; '
            "not applied. Make the change with edit or lsp_rename"
        )
    before = await asyncio.to_thread(_stamps, server.root)
    server.capturing = []
    try:
        await server.request(
            "workspace/executeCommand",
            {"command": name, "arguments": command.get("arguments") or []},
            bound=COMMAND_BOUND,
            what="code action command",
        )
        edits = server.capturing
    finally:
        server.capturing = None
    after = await asyncio.to_thread(_stamps, server.root)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        shown = ", ".join(relpath(sup.root, p) for p in changed[:8])
        raise ToolError(
            f'"{title}": {server.spec.id}\'s command {name!r} changed {shown} on disk by '
            "itself, outside livetools' checked write; nothing more was written. Check those "
            "files (git diff)"
        )
    return [e for e in edits if _changes(e)]


def _changes(edit: dict[str, Any]) -> bool:
    return bool(edit.get("changes") or edit.get("documentChanges"))


def _stamps(root: Path) -> dict[Path, tuple[int, int]]:
    """(mtime, size) of every file under `root`, bounded like the watched-files walk: what a
    command may have changed by itself."""
    found: dict[Path, tuple[int, int]] = {}
    deadline = time.monotonic() + STAMP_SECONDS
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for name in names:
            if len(found) >= STAMP_FILES or time.monotonic() > deadline:
                return found
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(folder, name))
                found[Path(folder, name)] = (st.st_mtime_ns, st.st_size)
    return found


def _resolvable(server: LanguageServer) -> bool:
    provider = server.capabilities.get("codeActionProvider")
    return isinstance(provider, dict) and bool(provider.get("resolveProvider"))
