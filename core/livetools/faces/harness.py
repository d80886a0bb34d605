"""`write` and `edit`: the file tools a minimal harness offers. The session and serve faces act as
that harness, so whoever drives them gets write wrapping (diagnostics on write) like any harness
that calls `run.writing` around its own writes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..files import EditConflict, PathError, StagedEdit, relpath, resolve_path
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


async def write(ctx: CallContext, args: WriteArgs) -> Result:
    try:
        path = resolve_path(ctx.run.root, args.path)
    except PathError as exc:
        return Result.error(str(exc))
    if path.is_dir():
        return Result.error(f"{args.path} is a directory; pass a file path")
    existed = path.exists()
    edit = StagedEdit.stage(ctx.run.root, {path: args.content})
    try:
        notes = await edit.apply(ctx.run)
    except EditConflict as exc:
        return Result.error(str(exc))
    rel = relpath(ctx.run.root, path)
    return _report(ctx, "updated" if existed else "created", rel, notes)


async def edit(ctx: CallContext, args: EditArgs) -> Result:
    try:
        path = resolve_path(ctx.run.root, args.path, must_exist=True)
        text = path.read_text(encoding="utf-8")
    except PathError as exc:
        return Result.error(str(exc))
    except UnicodeDecodeError:
        return Result.error(f"{args.path} is not UTF-8 text; edit works on text files only")
    rel = relpath(ctx.run.root, path)
    count = text.count(args.old) if args.old else 0
    if count != 1:
        what = "empty" if not args.old else ("not found" if count == 0 else f"found {count} times")
        return Result.error(
            f"old text {what} in {rel}; pass text that occurs exactly once "
            "(include surrounding lines to make it unique)"
        )
    staged = StagedEdit.stage(ctx.run.root, {path: text.replace(args.old, args.new, 1)})
    try:
        notes = await staged.apply(ctx.run)
    except EditConflict as exc:
        return Result.error(str(exc))
    return _report(ctx, "edited", rel, notes)


@hookimpl
def livetools_register_tools(register):  # type: ignore[no-untyped-def]
    register(Tool("write", Tier.WRITE, WriteArgs, write, "Write a whole file (creates it)."))
    register(Tool("edit", Tier.WRITE, EditArgs, edit, "Replace one exact occurrence in a file."))
