"""`lsp_rename file=… move_to=…`: move a file and update what imports it, as an editor does.

The server is asked `workspace/willRenameFiles` (typescript-language-server, basedpyright offer
it; gopls does not, and the move is then refused naming the server). Its WorkspaceEdit (the
importers' module specifiers, the moved file's own relative imports) and the move itself become
one staged change, written all-or-nothing through the host's write wrapping, then the server
hears `didRenameFiles`. An edit may only change a module path: one that covers other text was
computed on an out-of-date copy, and the whole move is refused."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Any

from livetools import CallContext, EditConflict, PathError, Result, ToolError, relpath, resolve_path
from livetools.approvals import confirm

from .completeness import MAX_SECONDS
from .importers import importers
from .jsonrpc import RpcTimeout
from .server import LanguageServer, path_uri
from .supervisor import Supervisor
from .watching import glob_regex

MOVE_BOUND = 60.0  # seconds the server may take to compute the importers' edits
# What an import's module path may hold: an edit covering anything else is not a path edit.
_PATH_TEXT = re.compile(r"[\w.$@/\\~+-]*")


def _offered(server: LanguageServer, path: Path, what: str) -> bool:
    """Whether the server registered `what` (willRename / didRename) for this file."""
    ops = (server.capabilities.get("workspace") or {}).get("fileOperations") or {}
    options = ops.get(what)
    if not isinstance(options, dict):
        return False
    rel = path.relative_to(server.root).as_posix() if path.is_relative_to(server.root) else ""
    for item in options.get("filters") or []:
        pattern = (item or {}).get("pattern") or {}
        if pattern.get("matches", "file") != "file":
            continue
        glob = str(pattern.get("glob") or "")
        if glob and (glob_regex(glob).fullmatch(rel) or glob_regex(glob).fullmatch(path.name)):
            return True
    return False


def _target(sup: Supervisor, path: Path, move_to: str) -> Path:
    try:
        target = resolve_path(sup.root, move_to)
    except PathError as exc:
        raise ToolError(f"move_to: {exc}") from None
    if move_to.endswith("/") or target.is_dir():
        target = target / path.name
    if target.exists() or target.is_symlink():
        raise ToolError(
            f"move_to: {relpath(sup.root, target)} exists; nothing was moved. Pick a new path"
        )
    if target == path:
        raise ToolError("move_to names the file itself; nothing to move")
    return target


async def move_file(
    ctx: CallContext, sup: Supervisor, path: Path, move_to: str, preview: bool = False
) -> Result:
    from .rename import DIFF_LINES, Workspace, stage_for_resolve  # rename.py imports this module

    target = _target(sup, path, move_to)
    rel, new_rel = relpath(sup.root, path), relpath(sup.root, target)
    server = await sup.server_for(path)
    if not _offered(server, path, "willRename"):
        raise ToolError(
            f"{server.spec.id} cannot update the importers of a moved {path.suffix} file (it "
            "offers no workspace/willRenameFiles); nothing was moved. Move it with the shell "
            "and fix its importers (lsp references on its exports lists them)"
        )
    await server.refresh()
    # Open first: the server answers for files of a project it has loaded, and some load a
    # project only once one of its files is open.
    await server.sync(path)
    pending = await server.ready(sup.ready_timeout)
    if pending is not None:
        raise ToolError(
            f"{server.spec.id} was {pending} after {sup.ready_timeout:g}s (its project is still "
            "loading), so a move now could miss importers; nothing was moved. Ask again shortly"
        )
    files = [{"oldUri": path_uri(path), "newUri": target.resolve().as_uri()}]
    try:
        edit = await server.request(
            "workspace/willRenameFiles", {"files": files}, bound=MOVE_BOUND, what="move"
        )
    except RpcTimeout:
        raise ToolError(
            f"{server.spec.id} did not compute the importers' edits in {MOVE_BOUND:g}s; "
            "nothing was moved"
        ) from None
    work = Workspace(sup, server)
    if isinstance(edit, dict):
        work.apply_edit(edit)
    _check_paths(sup, work)
    changed = {p for p, n in work.edits.items() if n}  # an empty edit list changes nothing
    left, _ = await asyncio.to_thread(importers, sup.root, server, path, changed, MAX_SECONDS)
    if left:
        shown = "; ".join(f"{relpath(sup.root, p)}:{n}: {t}" for p, n, t in left[:8])
        more = f" (and {len(left) - 8} more)" if len(left) > 8 else ""
        raise ToolError(
            f"refused the move: {server.spec.id}'s edit leaves imports of {rel} unchanged: "
            f"{shown}{more}; nothing was moved. Move it with the shell and fix these imports"
        )
    work.operation({"kind": "rename", "oldUri": files[0]["oldUri"], "newUri": files[0]["newUri"]})
    staged = work.stage("move", "Move again.")
    diff = staged.diff(DIFF_LINES, work.moved_to)
    edited = {relpath(sup.root, p): n for p, n in work.edits.items() if n}
    summary = f"move {rel} → {new_rel}; {sum(edited.values())} import edits in {len(edited)} files"
    if edited:
        summary += ": " + ", ".join(f"{f} ({n})" for f, n in edited.items())
    if preview:
        proposal = f"(proposed) {summary}"
        return stage_for_resolve(ctx, staged, edited, proposal, diff, contextlib.nullcontext)
    await confirm(ctx, summary)
    try:
        notes = await staged.apply(ctx.run)
    except EditConflict as exc:
        raise ToolError(str(exc)) from None
    await server.close(path)
    if _offered(server, path, "didRename"):
        with contextlib.suppress(ToolError):
            await server.notify("workspace/didRenameFiles", {"files": files})
    head = f"moved {rel} → {new_rel}; {sum(edited.values())} import edits"
    head += f" in {len(edited)} files: " + ", ".join(f"{f} ({n})" for f, n in edited.items())
    if not edited:
        head = f"moved {rel} → {new_rel}; {server.spec.id} found no imports to update"
    data: dict[str, Any] = {"moved": [rel, new_rel], "edits": edited, "notes": notes}
    return Result("\n".join([head, diff, *notes]), data)


def _check_paths(sup: Supervisor, work: Any) -> None:
    """Every text edit of a move replaces a module path with a module path; anything else means
    the server's copy was out of date (or it rewrote code), so nothing is written."""
    for path, pairs in work.replaced.items():
        for covered, replacement in pairs:
            if not (_PATH_TEXT.fullmatch(covered) and _PATH_TEXT.fullmatch(replacement)):
                raise ToolError(
                    f"refused the whole move: an edit for {relpath(sup.root, path)} replaces "
                    f"{covered[:80]!r} with {replacement[:80]!r}, which is not a module path; "
                    "nothing was changed. Run lsp reload and move again."
                )
