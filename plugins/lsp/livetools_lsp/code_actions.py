"""Applying a code action: `lsp code_actions` lists what the server offers, each with a short id;
`lsp_rename apply=ID` resolves it (`codeAction/resolve` where the server wants that) and writes
its WorkspaceEdit through the same staged, compare-and-swap, all-or-nothing write as a rename,
with the write's new diagnostics. An action that is only a command (the server would change files
by itself, outside that write) is refused, saying so.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import CallContext, Result, ToolError, relpath
from livetools.approvals import confirm
from livetools.files import EditConflict

from .server import LanguageServer

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
    if not isinstance(edit, dict) or not (edit.get("changes") or edit.get("documentChanges")):
        if action.get("command") or "arguments" in action:
            raise ToolError(
                f'"{title}" is a command {server.spec.id} runs itself, changing files outside '
                "livetools' checked write; not applied. Make the change with edit or lsp_rename"
            )
        raise ToolError(f'"{title}" carries no edit; nothing was written')
    work = Workspace(sup, server)
    work.apply_edit(edit)
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


def _resolvable(server: LanguageServer) -> bool:
    provider = server.capabilities.get("codeActionProvider")
    return isinstance(provider, dict) and bool(provider.get("resolveProvider"))
