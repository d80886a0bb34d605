"""Server answers as the model reads them: relative path, 1-based line and the line's text, so the
next call can address the same place the same way. No columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from livetools import cap_value, relpath
from livetools.files import PathError, read_text_sync

from .ledger import SEVERITY, Item
from .positions import split_lines
from .server import uri_path

SYMBOL_KINDS = {
    1: "file",
    2: "module",
    3: "namespace",
    4: "package",
    5: "class",
    6: "method",
    7: "property",
    8: "field",
    9: "constructor",
    10: "enum",
    11: "interface",
    12: "function",
    13: "variable",
    14: "constant",
    15: "string",
    16: "number",
    17: "boolean",
    18: "array",
    19: "object",
    20: "key",
    21: "null",
    22: "enum member",
    23: "struct",
    24: "event",
    25: "operator",
    26: "type parameter",
}
LINE_CAP = 160


class Lines:
    """Reads each file once per call to quote lines."""

    def __init__(self, root: Path, open_texts: dict[str, str] | None = None) -> None:
        self.root = root
        self._cache: dict[Path, list[str] | None] = {}
        self._where: dict[Path, str] = {}  # relpath resolves every component: once per file
        self._open = open_texts or {}

    def text(self, path: Path, line: int) -> str:
        if path not in self._cache:
            text = self._open.get(path.resolve().as_uri())
            if text is None:
                try:  # a quoted line is a courtesy: a FIFO or vanished file quotes nothing
                    text = read_text_sync(path, self.root)
                except PathError:
                    text = None
            self._cache[path] = split_lines(text) if text is not None else None
        lines = self._cache[path]
        if lines is None or not 0 <= line < len(lines):
            return ""
        return cap_value(lines[line].strip(), LINE_CAP)

    def where(self, path: Path) -> str:
        where = self._where.get(path)
        if where is None:
            where = self._where[path] = relpath(self.root, path)
        return where


def locations(result: Any) -> list[tuple[Path, int]]:
    """Location | Location[] | LocationLink[] | null as (path, 0-based line) pairs, in order."""
    if result is None:
        return []
    items = result if isinstance(result, list) else [result]
    out = []
    seen: set[tuple[str, tuple[int, ...]]] = set()  # one location listed twice counts once
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("targetUri") or item.get("uri")
        rng = item.get("targetSelectionRange") or item.get("targetRange") or item.get("range")
        path = uri_path(str(uri)) if uri else None
        if path is None:
            continue
        key = (str(uri), _span(rng))  # by value: a range's key order varies (Perl::LS)
        if key in seen:
            continue
        seen.add(key)
        line = int(((rng or {}).get("start") or {}).get("line", 0))
        out.append((path, line))
    return out


def location_rows(pairs: list[tuple[Path, int]], lines: Lines) -> list[dict[str, Any]]:
    """One row per distinct (file, line) with how many hits share it; not quoted yet, so a
    page of a long answer reads only its own files."""
    counts: dict[tuple[Path, int], int] = {}
    for pair in pairs:
        counts[pair] = counts.get(pair, 0) + 1
    rows = []
    for (path, line), count in counts.items():
        where = lines.where(path)
        row: dict[str, Any] = {"path": where, "line": line + 1, "count": count, "abs": path}
        # An absolute path means the answer lies outside the checkout (an installed copy, a stub).
        if Path(where).is_absolute():
            row["outside_root"] = True
        rows.append(row)
    return rows


def quote_rows(rows: list[dict[str, Any]], lines: Lines) -> tuple[list[str], list[dict]]:
    """`path:line: text` per row (with the count when several hits share the line)."""
    text, data = [], []
    for row in rows:
        quoted = lines.text(row["abs"], row["line"] - 1)
        extra = f" ({row['count']} on this line)" if row["count"] > 1 else ""
        mark = " [outside the checkout]" if row.get("outside_root") else ""
        text.append(f"{row['path']}:{row['line']}: {quoted}{extra}{mark}")
        out = {"path": row["path"], "line": row["line"], "text": quoted}
        if row.get("outside_root"):
            out["outside_root"] = True
        data.append(out)
    return text, data


def hover_text(result: Any) -> str:
    """MarkupContent | MarkedString | MarkedString[] as plain text."""
    if not isinstance(result, dict):
        return ""
    contents = result.get("contents")
    parts: list[str] = []
    for item in contents if isinstance(contents, list) else [contents]:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and "value" in item:
            lang = item.get("language")
            value = str(item["value"])
            parts.append(f"```{lang}\n{value}\n```" if lang else value)
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def document_symbols(result: Any, lines: Lines, path: Path) -> list[tuple[str, dict]]:
    """DocumentSymbol trees (indented by depth) or flat SymbolInformation lists."""
    out: list[tuple[str, dict]] = []

    def walk(symbols: list[Any], depth: int) -> None:
        for sym in symbols:
            if not isinstance(sym, dict):
                continue
            rng = sym.get("selectionRange") or sym.get("range")
            if rng is None:
                rng = (sym.get("location") or {}).get("range")
            line = int(((rng or {}).get("start") or {}).get("line", 0)) + 1
            kind = SYMBOL_KINDS.get(int(sym.get("kind") or 0), "symbol")
            name = str(sym.get("name"))
            container = sym.get("containerName")
            suffix = f" (in {container})" if container and "children" not in sym else ""
            out.append(
                (
                    f"{'  ' * depth}{line}: {kind} {name}{suffix}",
                    {"name": name, "kind": kind, "line": line, "depth": depth},
                )
            )
            walk(sym.get("children") or [], depth + 1)

    walk(result if isinstance(result, list) else [], 0)
    return out


def workspace_symbols(result: Any, lines: Lines) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    for sym in result if isinstance(result, list) else []:
        if not isinstance(sym, dict):
            continue
        loc = sym.get("location") or {}
        path = uri_path(str(loc.get("uri", "")))
        if path is None:
            continue
        rng = loc.get("range")
        line = int((rng or {}).get("start", {}).get("line", 0)) + 1 if rng else None
        kind = SYMBOL_KINDS.get(int(sym.get("kind") or 0), "symbol")
        name = str(sym.get("name"))
        container = sym.get("containerName")
        where = lines.where(path) + (f":{line}" if line else "")
        suffix = f" (in {container})" if container else ""
        out.append(
            (
                f"{where}: {kind} {name}{suffix}",
                {"path": lines.where(path), "line": line, "kind": kind, "name": name},
            )
        )
    return out


def call_rows(calls: list[dict[str, Any]], incoming: bool, lines: Lines) -> list[tuple[str, dict]]:
    """CallHierarchyIncomingCall / OutgoingCall lists: one row per caller (or callee) with its
    kind, name and definition line, and the lines of the call sites (in the caller's file for
    callers, in the asked file for callees). The project's own first, then by path and line."""
    merged: dict[tuple[str, int, str], dict[str, Any]] = {}
    for call in calls:
        item = call.get("from" if incoming else "to")
        if not isinstance(item, dict):
            continue
        path = uri_path(str(item.get("uri", "")))
        if path is None:
            continue
        rng = item.get("selectionRange") or item.get("range") or {}
        line = int((rng.get("start") or {}).get("line", 0)) + 1
        where = lines.where(path)
        name = str(item.get("name"))
        row = merged.setdefault(
            (where, line, name),
            {
                "path": where,
                "line": line,
                "kind": SYMBOL_KINDS.get(int(item.get("kind") or 0), "symbol"),
                "name": name,
                "at": [],
            },
        )
        for site in call.get("fromRanges") or []:
            row["at"].append(int((site.get("start") or {}).get("line", 0)) + 1)
    out = []
    for row in sorted(
        merged.values(), key=lambda r: (r["path"].startswith("/"), r["path"], r["line"])
    ):
        row["at"] = sorted(set(row["at"]))
        sites = f"; at {', '.join(map(str, row['at'][:10]))}" if row["at"] else ""
        if len(row["at"]) > 10:
            sites += f" (+{len(row['at']) - 10})"
        outside = Path(row["path"]).is_absolute()
        if outside:
            row["outside_root"] = True
        mark = " [outside the checkout]" if outside else ""
        out.append((f"{row['path']}:{row['line']}: {row['kind']} {row['name']}{sites}{mark}", row))
    return out


def diagnostic_line(item: Item) -> str:
    code = f" [{item.code}]" if item.code else ""
    return f"{item.line}: {item.severity}{code}: {item.message}"


def severity_name(raw: dict[str, Any]) -> str:
    return SEVERITY.get(int(raw.get("severity") or 1), "error")


def _span(rng: Any) -> tuple[int, ...]:
    """A range as numbers: start line, character, end line, character."""
    rng = rng if isinstance(rng, dict) else {}
    start, end = rng.get("start") or {}, rng.get("end") or {}
    values = (start.get("line"), start.get("character"), end.get("line"), end.get("character"))
    return tuple(int(v) if isinstance(v, int) else -1 for v in values)
