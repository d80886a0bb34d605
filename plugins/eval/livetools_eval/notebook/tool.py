"""`eval` with `notebook=`: the ops on an .ipynb (read, run, insert, replace, move, delete).

Every op that changes the notebook saves it at once through the run's staged compare-and-swap
write, against the bytes this run last read or wrote: a save by anyone else since then (Jupyter,
an editor, the harness's own write tool) is never overwritten. The op is refused instead, and
`op=read` loads the file as it is now. A run whose save is refused still shows its outputs."""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from livetools import CallContext, Result, ToolError
from livetools.files import EditConflict, FileChange, StagedEdit, read_bytes_sync
from livetools.files.edits import MAX_FILE_BYTES
from livetools.files.paths import relpath, resolve_path

from . import cells
from .runner import Ran, Session, choose, drop, run_cells, wanted

NEEDS_CELL = ("replace", "move", "delete")
KERNELSPECS = {  # what a new notebook records for the built-in kernels (Jupyter's own names)
    "python": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
    "javascript": {"name": "deno", "display_name": "Deno", "language": "typescript"},
}

_open: WeakKeyDictionary[Any, dict[Path, Session]] = WeakKeyDictionary()


async def run_notebook(ctx: CallContext, args: Any) -> Result:
    pool = ctx.resource
    root: Path = ctx.run.root
    op: str = args.op or "run"
    path = resolve_path(root, args.notebook, arg="notebook")
    rel = relpath(root, path)
    if path.suffix.lower() != ".ipynb":
        raise ToolError(
            f"notebook: {rel} is not an .ipynb file; pass a notebook, or leave notebook out to "
            "run the code as a plain eval cell"
        )
    _check(op, args)
    session = await _session(pool, path, rel, op, args, root)
    notes: list[str] = []
    if args.reset:
        had = session.kernel is not None
        await drop(session)
        session.lost = ""
        notes.append(
            f"reset: {'the kernel of ' + rel + ' was stopped' if had else 'no kernel was running'}"
            + ("; this run starts a fresh one." if op == "run" else ".")
        )
    if op == "read":
        return _read(session, pool, args.cell, notes, _limit(ctx))
    # The op works on a copy: unless it is saved, the notebook stays what the file holds.
    original, before = session.nb, session.snapshot
    session.nb = copy.deepcopy(original)
    try:
        if op == "run":
            return await _run(ctx, session, args, notes)
        return await _edit(ctx, session, op, args, notes)
    finally:
        if session.snapshot is before:
            session.nb = original


def _check(op: str, args: Any) -> None:
    if args.to is not None and op != "move":
        raise ToolError("to: only op=move takes it (the number the moved cell will have)")
    if op == "move" and args.to is None:
        raise ToolError("to: op=move needs it: the number the (first) moved cell will have")
    if args.code and op in ("read", "move", "delete"):
        raise ToolError(f"code: op={op} takes none; op=insert/replace/run take a cell's source")
    if op in NEEDS_CELL and not (args.cell or "").strip():
        raise ToolError(f"cell: op={op} needs it: a number (1-based), a range like 2-5, or an id")


async def _session(pool: Any, path: Path, rel: str, op: str, args: Any, root: Path) -> Session:
    """The open notebook, (re)read from disk for op=read or at first use; refused when the
    file moved on since this run last read or wrote it."""
    sessions = _open.setdefault(pool, {})
    session = sessions.get(path)
    disk = await asyncio.to_thread(_disk, path, rel, root)
    if session is not None and op != "read":
        if disk != session.snapshot:
            what = "was deleted" if disk is None else "changed on disk"
            raise ToolError(
                f"notebook: {rel} {what} since this run last read or wrote it (another editor "
                "saved it); nothing was done. Call op=read to load it as it is now, then repeat"
            )
        return session
    if disk is None:
        if op == "insert" or (op == "run" and args.code.strip()):
            nb = cells.new_notebook(_kernelspec(pool, args.language))
        else:
            raise ToolError(
                f"notebook: {rel} does not exist; check the path, or create it with op=insert "
                "(its kernel: the language argument)"
            )
    else:
        nb = await asyncio.to_thread(cells.load, disk, rel)
    if session is None:
        session = sessions[path] = Session(path, rel, disk, nb)
    else:  # read again: the kernel and its state stay, the cells are the file's
        session.snapshot, session.nb = disk, nb
        session.recorder.forget_all()
    return session


def _disk(path: Path, rel: str, root: Path) -> bytes | None:
    if not path.exists():
        return None
    try:
        return read_bytes_sync(path, root, limit=MAX_FILE_BYTES)
    except OSError as exc:
        raise ToolError(f"notebook: {rel} cannot be read: {exc}") from None


def _kernelspec(pool: Any, language: str) -> dict[str, str]:
    spec = pool.specs.get(language)
    if language in KERNELSPECS and not getattr(spec, "kernel_name", ""):
        return dict(KERNELSPECS[language])
    name = str(getattr(spec, "kernel_name", "") or (spec.name if spec else language))
    return {"name": name, "display_name": name, "language": language}


async def _save(ctx: CallContext, session: Session) -> tuple[bool, list[str]]:
    """Write the notebook through the run's compare-and-swap write; (saved, notes)."""
    new = await asyncio.to_thread(cells.dump, session.nb)
    if new == session.snapshot:
        session.snapshot = new  # a new object: the op is kept (see run_notebook)
        return True, []
    staged = StagedEdit(ctx.run.root, [FileChange(session.path, session.snapshot, new)])
    try:
        notes = await staged.apply(ctx.run)
    except EditConflict as exc:
        said = str(exc).replace("since the edit was staged", "since this run last read it")
        said = said.replace(" Stage the edit again against the current content.", "")
        return False, [f"NOT saved: {said} Call op=read to load it as it is now, then repeat."]
    session.snapshot = new
    return True, [str(n) for n in notes]


# -- read -------------------------------------------------------------------------------------


def _limit(ctx: CallContext) -> int:
    from ..tool import MAX_CHARS

    return int(ctx.run.options.get("eval_max_chars", MAX_CHARS))


def _read(session: Session, pool: Any, which: str | None, notes: list[str], limit: int) -> Result:
    from ..outputs import Outputs
    from ..tool import TAIL_CHARS

    nb = session.nb
    indices = cells.select(nb, which)
    out = Outputs()
    for index in indices:
        cell = nb.cells[index]
        out.add(cells.text_message(_header(index, cell, source=True)))
        out.add(cells.text_message(cell.source if cell.source.strip() else "(empty)"))
        if cell.cell_type == "code" and cell.get("outputs"):
            out.add(cells.text_message("── output ──"))
            for msg in cells.as_messages(cell.outputs):
                out.add(msg)
    head = (
        f"{session.rel}: {len(nb.cells)} cells (nbformat 4.{nb.nbformat_minor}), "
        f"{_kernel_line(session, pool)}"
    )
    body = out.render(limit, min(TAIL_CHARS, limit // 3))
    if len(body) >= limit and len(indices) > 1:
        notes.append("(cut: read fewer cells at once, e.g. cell=1-10)")
    text = "\n".join([*notes, head, body] if body else [*notes, head])
    data = {
        "notebook": session.rel,
        "cells": len(nb.cells),
        "shown": cells.span(indices),
        "ids": [nb.cells[i].get("id") for i in indices],
    }
    return Result(text, data=data, images=out.images)


def _header(index: int, cell: Any, source: bool) -> str:
    parts = [f"cell {index + 1}"]
    if source:
        parts.append(cell.cell_type)
    if cell.get("id"):
        parts.append(f"id {cell.id}")
    count = cell.get("execution_count")
    if cell.cell_type == "code" and count is not None:
        parts.append(f"In [{count}]")
    return "── " + " · ".join(parts) + " ──"


def _kernel_line(session: Session, pool: Any) -> str:
    name, language = wanted(session.nb)
    asked = name or language or "none given"
    try:
        lang, spec, _ = choose(session.nb, session.rel, pool)
    except ToolError:
        return f"kernel {asked}: not available in this run (its cells cannot run here)"
    state = "running" if session.kernel is not None and session.kernel.alive else "not started"
    return f"kernel {asked} → {lang} ({spec.name}), {state}"


# -- run --------------------------------------------------------------------------------------


async def _run(ctx: CallContext, session: Session, args: Any, notes: list[str]) -> Result:
    from ..outputs import Outputs
    from ..tool import TAIL_CHARS

    nb = session.nb
    t0 = time.monotonic()
    if args.code.strip():
        if (args.cell or "").strip():
            indices = cells.select(nb, args.cell)
            if len(indices) != 1:
                raise ToolError("cell: with code, name one cell (its source becomes the code)")
            cells.replace_source(nb, indices[0], args.code)
        else:
            nb.cells.append(cells.make_cell(nb, args.code))
            indices = [len(nb.cells) - 1]
    else:
        indices = cells.select(nb, args.cell)
    started: list[int] = []
    ran: list[Ran] = []
    try:
        ran, start_notes = await run_cells(ctx, session, indices, started.append)
        notes.extend(start_notes)
    except ToolError:
        if started:  # what ran is kept, as a run that ends is
            await _save(ctx, session)
        raise
    out = Outputs()
    for item in ran:  # a cell that showed nothing gets no header: the last line lists it
        cell = nb.cells[item.index]
        payloads = item.outcome.reply.get("payload") or []
        if cell.outputs or payloads:
            out.add(cells.text_message(_header(item.index, cell, source=False)))
        for msg in cells.as_messages(cell.outputs):
            out.add(msg)
        out.add_payloads(payloads)
    after = _endings(session, ran, indices)
    saved, save_notes = await _save(ctx, session)
    limit = _limit(ctx)
    body = out.render(limit, min(TAIL_CHARS, limit // 3))
    ran_span = cells.span([r.index for r in ran])
    if not ran:
        body = f"no code cell to run in {cells.span(indices)} (markdown or empty cells only)"
    tail = f"{'saved' if saved else 'ran'} {session.rel} (cells run: {ran_span})" if ran else ""
    if saved and not ran and args.code.strip():
        tail = f"saved {session.rel}"
    text = "\n".join(p for p in (*notes, body, *after, *save_notes, tail) if p)
    statuses = [r.outcome.status for r in ran]
    data: dict[str, Any] = {
        "notebook": session.rel,
        "status": statuses[-1] if statuses else "ok",
        "saved": saved,
        "ran": [
            {
                "cell": r.index + 1,
                "id": nb.cells[r.index].get("id"),
                "execution_count": nb.cells[r.index].get("execution_count"),
                "status": r.outcome.status,
            }
            for r in ran
        ],
        "seconds": round(time.monotonic() - t0, 3),
    }
    if out.rich:
        data["rich"] = out.rich
    failed = any(s != "ok" for s in statuses) or not saved
    return Result(text, data=data, images=out.images, is_error=failed)


def _endings(session: Session, ran: list[Ran], indices: list[int]) -> list[str]:
    """What the model must know after the outputs: a cell that stopped the run, and why."""
    from ..kernel import how_it_ended

    if not ran or ran[-1].outcome.status == "ok":
        return []
    last = ran[-1]
    number = last.index + 1
    status = last.outcome.status
    lines = {
        "error": f"cell {number} raised an error; the run stopped there",
        "interrupted": f"cell {number} was interrupted (no output for the idle budget); the "
        "kernel's state is kept",
        "restarted": f"cell {number} timed out and its kernel did not answer an interrupt; it "
        "was stopped and its state lost (the next run starts a fresh kernel)",
        "died": f"the kernel died{how_it_ended(last.outcome.exit_code)} during cell {number}; "
        "its state is lost (the next run starts a fresh kernel)",
        "disconnected": f"the connection to the gateway was lost during cell {number}",
    }
    said = [lines.get(status, f"cell {number} ended: {status}")]
    rest = [
        i
        for i in indices
        if i > last.index
        and session.nb.cells[i].cell_type == "code"
        and session.nb.cells[i].source.strip()
    ]
    if rest:
        said.append(f"not run: cells {cells.span(rest)}")
    return said


# -- edits ------------------------------------------------------------------------------------


async def _edit(ctx: CallContext, session: Session, op: str, args: Any, notes: list[str]) -> Result:
    nb = session.nb
    if op == "insert":
        index = cells.insert_at(nb, args.cell)
        nb.cells.insert(index, cells.make_cell(nb, args.code))
        done = f"inserted cell {index + 1} ({_kind(nb.cells[index])})"
        touched = [index]
    elif op == "replace":
        indices = cells.select(nb, args.cell)
        if len(indices) != 1:
            raise ToolError("cell: op=replace takes one cell (a number or an id), not a range")
        cell = cells.replace_source(nb, indices[0], args.code)
        cleared = " (its outputs were cleared)" if cell.cell_type == "code" else ""
        done = f"replaced the source of cell {indices[0] + 1} ({_kind(cell)}){cleared}"
        touched = indices
    elif op == "move":
        indices = cells.select(nb, args.cell)
        first = cells.move(nb, indices, int(args.to))
        touched = list(range(first, first + len(indices)))
        plural = "s" if len(indices) > 1 else ""
        done = f"moved cell{plural} {cells.span(indices)} to {cells.span(touched)}"
    else:  # delete
        indices = cells.select(nb, args.cell)
        nb.cells = [c for i, c in enumerate(nb.cells) if i not in set(indices)]
        done = f"deleted cell{'s' if len(indices) > 1 else ''} {cells.span(indices)}"
        touched = []
    saved, save_notes = await _save(ctx, session)
    text = "\n".join(
        [
            *notes,
            f"{done}; {session.rel} now has {len(nb.cells)} cells" + ("; saved." if saved else "."),
            *save_notes,
        ]
    )
    data = {
        "notebook": session.rel,
        "op": op,
        "cells": len(nb.cells),
        "saved": saved,
        "ids": [nb.cells[i].get("id") for i in touched],
    }
    return Result(text, data=data, is_error=not saved)


def _kind(cell: Any) -> str:
    return f"{cell.cell_type}, id {cell.id}" if cell.get("id") else cell.cell_type
