"""The nbformat side of a notebook: reading and checking a file, addressing its cells as the
agent does (1-based numbers like lines, `a-b` ranges, cell ids), edits, and a cell's kernel
messages turned into the outputs Jupyter would save (clear_output, display updates by id)."""

from __future__ import annotations

import json
import re
import uuid
import warnings
from typing import Any

from livetools import ToolError, cap_text

MARKDOWN = "%%markdown"  # first line of a `code` that makes (or keeps) a markdown cell
MAX_STREAM = 1_000_000  # characters of one stream output kept in the file (head and tail)
_RANGE = re.compile(r"^(\d*)\s*-\s*(\d*)$")


def load(raw: bytes, rel: str) -> Any:
    """The notebook in `raw` as an nbformat 4 NotebookNode (version 3 converted), or a
    ToolError saying what is wrong with the file and what to do."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"notebook: {rel} is not UTF-8 text (bad byte at offset {exc.start}); an .ipynb is "
            "JSON in UTF-8: restore the file (e.g. from git) and call again"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"notebook: {rel} is not valid JSON ({exc.msg} at line {exc.lineno}, column "
            f"{exc.colno}); fix or restore the file (e.g. from git), then call again"
        ) from None
    except ValueError as exc:  # e.g. a number too long to convert
        raise ToolError(f"notebook: {rel} is not valid JSON ({exc})") from None
    major = data.get("nbformat") if isinstance(data, dict) else None
    if major not in (3, 4):
        what = "no nbformat field" if major is None else f"nbformat {major!r}"
        raise ToolError(
            f"notebook: {rel} is JSON but not a notebook this can open ({what}; nbformat 4, "
            "or 3 converted, expected)"
        )
    import nbformat

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nb = nbformat.reads(text, as_version=4, capture_validation_error={})
        except Exception as exc:  # a v3 file too broken to convert
            raise ToolError(f"notebook: {rel} cannot be read as a notebook: {exc}") from None
    problem = invalid(nb)
    if problem:
        raise ToolError(
            f"notebook: {rel} is not a valid nbformat 4 notebook: {problem}. Fix the file (or "
            "restore it, e.g. from git) and call again; nothing was changed"
        )
    return nb


def invalid(nb: Any) -> str | None:
    """What nbformat's schema says is wrong (the first error, where), or None."""
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        message = str(getattr(exc, "message", exc)).splitlines()[0]
        path = "/".join(str(p) for p in getattr(exc, "absolute_path", ()) or ())
        return cap_text(message, 300) + (f" (at {path})" if path else "")
    return None


def dump(nb: Any) -> bytes:
    """The file Jupyter would write (nbformat's layout, a final newline); ToolError if the
    notebook no longer validates, so an invalid file is never written."""
    import nbformat

    problem = invalid(nb)
    if problem:
        raise ToolError(f"notebook: not saved, the result would not be valid nbformat: {problem}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = nbformat.writes(nb)
    text = text if text.endswith("\n") else text + "\n"
    return text.encode("utf-8", "replace")  # a lone surrogate from a kernel becomes "?"


def new_notebook(kernelspec: dict[str, str]) -> Any:
    from nbformat import v4

    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = kernelspec
    return nb


# -- addressing -------------------------------------------------------------------------------


def select(nb: Any, spec: str | None) -> list[int]:
    """0-based indices of the cells `spec` names: a 1-based number, a range `a-b` (either end
    may be left out), a cell id, or nothing / "all" for every cell. A number in range wins over
    an id spelled the same."""
    count = len(nb.cells)
    text = (spec or "").strip()
    if text.lower() in ("", "all", "*"):
        return list(range(count))
    if not count:
        raise ToolError("cell: the notebook has no cells yet; add one with op=insert")
    if text.isdigit() and 1 <= int(text) <= count:
        return [int(text) - 1]
    for index, cell in enumerate(nb.cells):
        if cell.get("id") == text:
            return [index]
    if text.isdigit():
        return [_number(text, count) - 1]
    match = _RANGE.match(text)
    if match and (match[1] or match[2]):
        first = _number(match[1], count) if match[1] else 1
        last = _number(match[2], count) if match[2] else count
        if first > last:
            raise ToolError(
                f"cell: range {text} runs backwards; write it low-high, e.g. {last}-{first}"
            )
        return list(range(first - 1, last))
    raise ToolError(
        f"cell: no cell numbered or with id {text!r}; give a number 1-{count} (1-based), a "
        "range like 2-5, or an id (op=read lists them)"
    )


def insert_at(nb: Any, spec: str | None) -> int:
    """The 0-based position a new cell takes: `spec` is the number it will have (1 to count+1)
    or the id of the cell it goes before; nothing: the end."""
    count = len(nb.cells)
    text = (spec or "").strip()
    if not text:
        return count
    if text.isdigit() and 1 <= int(text) <= count + 1:
        return int(text) - 1
    for index, cell in enumerate(nb.cells):
        if cell.get("id") == text:
            return index
    if text.isdigit():
        return _number(text, count + 1) - 1
    raise ToolError(
        f"cell: op=insert takes the number the new cell will have (1-{count + 1}) or the id of "
        f"the cell it goes before, not {text!r}"
    )


def _number(text: str, count: int) -> int:
    number = int(text)
    if not 1 <= number <= count:
        raise ToolError(
            f"cell: {number} is outside 1-{count} (cells are numbered from 1, like lines)"
        )
    return number


def span(indices: list[int]) -> str:
    """'3' or '3-5' (1-based) for contiguous indices; a list otherwise."""
    if not indices:
        return "none"
    if indices == list(range(indices[0], indices[-1] + 1)):
        first, last = indices[0] + 1, indices[-1] + 1
        return str(first) if first == last else f"{first}-{last}"
    return ", ".join(str(i + 1) for i in indices)


# -- edits ------------------------------------------------------------------------------------


def split_markdown(code: str) -> tuple[str, bool]:
    """The source without a first `%%markdown` line, and whether it was there."""
    first, _, rest = code.partition("\n")
    if first.strip() == MARKDOWN:
        return rest, True
    return code, False


def make_cell(nb: Any, code: str) -> Any:
    from nbformat import v4

    source, markdown = split_markdown(code)
    cell = v4.new_markdown_cell(source) if markdown else v4.new_code_cell(source)
    if nb.nbformat_minor < 5:  # ids came with 4.5; an older file's schema refuses them
        cell.pop("id", None)
    else:
        while cell.id.isdigit():  # would read as a cell number
            cell.id = uuid.uuid4().hex[:8]  # as nbformat makes them
    return cell


def replace_source(nb: Any, index: int, code: str) -> Any:
    """Set a cell's source; a code cell's outputs and count are cleared (they no longer match).
    A markdown cell stays markdown; `%%markdown` turns a code cell into one."""
    cell = nb.cells[index]
    source, markdown = split_markdown(code)
    if markdown and cell.cell_type != "markdown":
        fresh = make_cell(nb, code)
        if "id" in cell and "id" in fresh:
            fresh["id"] = cell["id"]
        fresh.metadata = cell.get("metadata", {})
        nb.cells[index] = fresh
        return fresh
    cell.source = source
    if cell.cell_type == "code":
        cell.outputs = []
        cell.execution_count = None
    return cell


def move(nb: Any, indices: list[int], to: int) -> int:
    """Move contiguous cells so the first has number `to` (1-based, after the move)."""
    block = nb.cells[indices[0] : indices[-1] + 1]
    rest = [c for i, c in enumerate(nb.cells) if i < indices[0] or i > indices[-1]]
    last = len(rest) + 1
    if not 1 <= to <= last:
        raise ToolError(
            f"to: {to} is outside 1-{last}: the number the first moved cell will have (1-based)"
        )
    nb.cells = [*rest[: to - 1], *block, *rest[to - 1 :]]
    return to - 1


# -- outputs ----------------------------------------------------------------------------------


class Recorder:
    """One notebook's outputs as Jupyter saves them: each iopub message of the cell being run
    becomes an output, `clear_output` empties the cell (at once, or at its next output when it
    says wait), and an update of a display id rewrites every output showing it, in any cell."""

    def __init__(self) -> None:
        self._shown: dict[str, list[tuple[Any, int]]] = {}
        self._cell: Any = None
        self._clear_pending = False

    def begin(self, cell: Any) -> None:
        cell.outputs = []
        cell.execution_count = None
        self._forget(cell)
        self._cell = cell
        self._clear_pending = False

    def forget_all(self) -> None:
        """After the file was read again: its cells are new objects."""
        self._shown.clear()

    def add(self, msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg.get("content") or {}
        cell = self._cell
        if cell is None:
            return
        if kind == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
            else:
                self._clear()
            return
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id and kind in ("display_data", "execute_result", "update_display_data"):
            self._update(display_id, content)
        if kind not in ("stream", "display_data", "execute_result", "error"):
            return
        output = _output(kind, content)
        if self._clear_pending:
            self._clear()
        outputs = cell.outputs
        last = outputs[-1] if outputs else None
        if (
            kind == "stream"
            and last is not None
            and last.output_type == "stream"
            and last.name == output.name
        ):
            last.text += output.text
            return
        if display_id:
            self._shown.setdefault(display_id, []).append((cell, len(outputs)))
        outputs.append(output)

    def end(self) -> None:
        """Bound what a flooding cell leaves in the file: each stream keeps its head and tail."""
        for output in self._cell.outputs if self._cell is not None else []:
            if output.output_type == "stream" and len(output.text) > MAX_STREAM:
                output.text = cap_text(output.text, MAX_STREAM, tail=MAX_STREAM // 4) + "\n"
        self._cell = None

    def _clear(self) -> None:
        self._cell.outputs = []
        self._forget(self._cell)
        self._clear_pending = False

    def _forget(self, cell: Any) -> None:
        for places in self._shown.values():
            places[:] = [(c, i) for c, i in places if c is not cell]

    def _update(self, display_id: str, content: dict[str, Any]) -> None:
        fresh = _output("display_data", content)
        for cell, index in self._shown.get(display_id, []):
            if index < len(cell.outputs):
                cell.outputs[index]["data"] = fresh["data"]
                cell.outputs[index]["metadata"] = fresh["metadata"]


def _output(kind: str, content: dict[str, Any]) -> Any:
    from nbformat.v4 import new_output

    if kind == "stream":
        return new_output(
            "stream", name=content.get("name", "stdout"), text=content.get("text", "")
        )
    if kind == "error":
        return new_output(
            "error",
            ename=str(content.get("ename", "")),
            evalue=str(content.get("evalue", "")),
            traceback=[str(line) for line in content.get("traceback") or []],
        )
    fields: dict[str, Any] = {
        "data": content.get("data") or {},
        "metadata": content.get("metadata") or {},
    }
    if kind == "execute_result":
        fields["execution_count"] = content.get("execution_count")
    return new_output(kind, **fields)


def as_messages(outputs: list[Any]) -> list[dict[str, Any]]:
    """Saved outputs in the shape of the kernel messages they came from, for eval's renderer."""
    messages = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            content = {"name": output.get("name", "stdout"), "text": output.get("text", "")}
        elif kind in ("display_data", "execute_result"):
            content = {"data": dict(output.get("data") or {}), "metadata": {}}
        elif kind == "error":
            content = {k: output.get(k) for k in ("ename", "evalue", "traceback")}
        else:
            continue
        messages.append({"msg_type": kind, "content": content})
    return messages


def text_message(text: str) -> dict[str, Any]:
    return {"msg_type": "display_data", "content": {"data": {"text/plain": text}}}
