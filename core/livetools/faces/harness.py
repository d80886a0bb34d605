"""`write` and `edit`: the file tools a minimal harness offers. The session and serve faces act as
that harness, so whoever drives them gets write wrapping (diagnostics on write) like any harness
that calls `run.writing` around its own writes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..approvals import card_by
from ..files import (
    EditConflict,
    FileChange,
    PathError,
    StagedEdit,
    read_bytes,
    relpath,
    resolve_path,
)
from ..files.edits import MAX_FILE_BYTES
from ..hooks import hookimpl
from ..results import Result
from ..tiers import Tier
from ..tools import CallContext, Tool

PLUGIN_NAME = "harness"


class WriteArgs(BaseModel):
    path: str = Field(description="File path relative to the project root.")
    content: str = Field(description="The complete new content of the file.")


class EditArgs(BaseModel):
    path: str = Field(description="File path relative to the project root.")
    old: str = Field(description="Exact text to replace; must occur exactly once.")
    new: str = Field(description="Replacement text.")


def _report(ctx: CallContext, verb: str, rel: str, notes: list[str]) -> Result:
    text = f"{verb} {rel}" + "".join(f"\n{note}" for note in notes)
    return Result(text=text, data={"path": rel, "notes": notes})


CARD_LINES = 8


def _lines(prefix: str, text: str) -> list[str]:
    rows = text.splitlines()
    out = [f"{prefix}{row}" for row in rows[:CARD_LINES]]
    if len(rows) > CARD_LINES:
        out.append(f"  … {len(rows) - CARD_LINES} more lines")
    return out


def write_card(ctx: CallContext, args: WriteArgs) -> str:
    """Path and size, whether it creates or replaces, and the first lines."""
    size = len(args.content.encode("utf-8"))
    lines = len(args.content.splitlines())
    try:
        path = resolve_path(ctx.run.root, args.path)
        old = path.stat().st_size if path.is_file() else None
    except (PathError, OSError):
        old = None
    what = "create" if old is None else f"replace ({old} bytes now) with"
    return "\n".join(
        [f"write {args.path}: {what} {size} bytes, {lines} lines", *_lines("  ", args.content)]
    )


def edit_card(ctx: CallContext, args: EditArgs) -> str:
    """Path and the replacement as a small diff."""
    return "\n".join(
        [
            f"edit {args.path}: replace one occurrence",
            *_lines("- ", args.old),
            *_lines("+ ", args.new),
        ]
    )


@card_by(write_card)
async def write(ctx: CallContext, args: WriteArgs) -> Result:
    root = ctx.run.root
    try:
        path = resolve_path(root, args.path)
        edit = await StagedEdit.astage(root, {path: args.content})
    except PathError as exc:
        return Result.error(_what_to_do(str(exc), "write"))
    existed = edit.changes[0].original is not None
    try:
        notes = await edit.apply(ctx.run)
    except EditConflict as exc:
        return Result.error(str(exc))
    return _report(ctx, "updated" if existed else "created", relpath(root, path), notes)


@card_by(edit_card)
async def edit(ctx: CallContext, args: EditArgs) -> Result:
    root = ctx.run.root
    try:
        path = resolve_path(root, args.path, must_exist=True)
        data = await read_bytes(path, root, limit=MAX_FILE_BYTES)
    except PathError as exc:
        return Result.error(_what_to_do(str(exc), "edit"))
    rel = relpath(root, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Result.error(f"path: {rel} is not UTF-8 text; edit works on text files only")
    count = text.count(args.old) if args.old else 0
    if count != 1:
        what = "empty" if not args.old else ("not found" if count == 0 else f"found {count} times")
        return Result.error(
            f"old: text {what} in {rel}; pass text that occurs exactly once "
            "(include surrounding lines to make it unique)"
        )
    # Staged against the bytes the match was found in: a change since then refuses the edit.
    new = text.replace(args.old, args.new, 1).encode("utf-8")
    staged = StagedEdit(root, [FileChange(path, data, new)])
    try:
        notes = await staged.apply(ctx.run)
    except EditConflict as exc:
        return Result.error(str(exc))
    return _report(ctx, "edited", rel, notes)


def _what_to_do(message: str, tool: str) -> str:
    """A refusal of a directory or special file says what `tool` takes instead."""
    if "pass a regular file" in message:
        message = message.replace("pass a regular file", f"{tool} takes the path of a file")
    return message if message.startswith("path:") else f"path: {message}"


@hookimpl
def livetools_register_tools(register):  # type: ignore[no-untyped-def]
    register(Tool("write", Tier.WRITE, WriteArgs, write, "Write a whole file (creates it)."))
    register(Tool("edit", Tier.WRITE, EditArgs, edit, "Replace one exact occurrence in a file."))
