"""Line + symbol positions, and the conversion between Python string indices and LSP columns.

A model never gives a column: it names a 1-based line and a substring of it. A wrong column
would silently resolve to another symbol on the same line; a wrong substring is an error that
quotes the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from livetools import ToolError

_OCCURRENCE = re.compile(r"^(.+)#(\d+)$")


@dataclass(frozen=True)
class Spot:
    """Where a line + symbol landed: 0-based line, index into the line, and a note when the
    choice was not the only one."""

    line: int
    index: int
    length: int
    note: str | None
    ident: str = ""  # the whole identifier at the spot ("" when it is punctuation)
    partial: bool = False  # the symbol was only part of `ident`


def split_lines(text: str) -> list[str]:
    """Lines as LSP counts them (\\n, \\r\\n and \\r end a line), without their endings."""
    return re.split(r"\r\n|\r|\n", text)


def _is_ident(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def _whole(line: str, start: int, length: int) -> bool:
    before = line[start - 1] if start > 0 else ""
    after = line[start + length] if start + length < len(line) else ""
    head_ident = _is_ident(line[start])
    tail_ident = _is_ident(line[start + length - 1])
    return not (head_ident and before and _is_ident(before)) and not (
        tail_ident and after and _is_ident(after)
    )


_DOTTED = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$")
_IDENT = re.compile(r"[\w$]+")


def identifier_at(line: str, index: int) -> str:
    """The whole identifier that covers `index` of `line` ("" on punctuation or space)."""
    for match in _IDENT.finditer(line):
        if match.start() <= index < match.end():
            return match.group()
    return ""


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def symbol_name(symbol: str) -> str:
    """The name a `name#N` argument points at, for headers."""
    match = _OCCURRENCE.match(symbol)
    return match.group(1) if match else symbol


def locate(text: str, line: int, symbol: str, rel: str) -> Spot:
    """Resolve a 1-based `line` and a `symbol` substring (optionally `name#N` for the N-th
    occurrence) to a spot. Whole-identifier occurrences are preferred over partial ones."""
    lines = split_lines(text)
    if line < 1 or line > len(lines):
        raise ToolError(f"line {line} is outside {rel}, which has {len(lines)} lines")
    content = lines[line - 1]
    if not symbol:
        raise ToolError(
            f'symbol is empty; pass a name that occurs on line {line} of {rel}: "{content.strip()}"'
        )
    wanted: int | None = None
    match = _OCCURRENCE.match(symbol)
    if match and match.group(1) in content:
        symbol, wanted = match.group(1), int(match.group(2))
    starts = [m.start() for m in re.finditer(f"(?={re.escape(symbol)})", content)]
    if not starts:
        quoted = f'"{content}"'
        raise ToolError(f'symbol "{symbol}" is not on line {line} of {rel}; the line is: {quoted}')
    # A dotted name ("os.path.basename") addresses its last component.
    shift = symbol.rindex(".") + 1 if _DOTTED.match(symbol) else 0
    whole = [s for s in starts if _whole(content, s, len(symbol))]
    pool = whole or starts
    if wanted is not None:
        if not 1 <= wanted <= len(pool):
            raise ToolError(
                f'"{symbol}" occurs {len(pool)} time(s) on line {line} of {rel}; '
                f'#{wanted} does not exist. The line is: "{content}"'
            )
        chosen, note = pool[wanted - 1], None
    else:
        chosen, note = pool[0], None
        if len(pool) > 1:
            note = (
                f'"{symbol}" occurs {len(pool)} times on line {line}; used the 1st; '
                f'pass "{symbol}#2" (etc.) for another'
            )
    index = chosen + shift
    ident = identifier_at(content, index)
    partial = not whole and bool(ident) and ident != symbol[shift:]
    if partial:
        inside = f'matched inside "{ident}" (the answer is for {ident}); identifiers on the line: '
        inside += ", ".join(dict.fromkeys(_IDENT.findall(content)))
        note = f"{note}; {inside}" if note else f'"{symbol}" is not a whole identifier: {inside}'
    return Spot(line - 1, index, len(symbol) - shift, note, ident, partial)


def encode_column(line: str, index: int, encoding: str) -> int:
    """A Python index into `line` as a column in the negotiated position encoding."""
    prefix = line[:index]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-32":
        return len(prefix)
    return len(prefix.encode("utf-16-le")) // 2


def decode_column(line: str, column: int, encoding: str) -> int:
    """An LSP column as a Python index into `line` (clamped to the line, as the spec asks)."""
    if column <= 0:
        return 0
    if encoding == "utf-32":
        return min(column, len(line))
    unit = 1 if encoding == "utf-8" else 2
    codec = "utf-8" if encoding == "utf-8" else "utf-16-le"
    data = line.encode(codec)
    if column * unit >= len(data):
        return len(line)
    return len(data[: column * unit].decode(codec, "ignore"))


class LineIndex:
    """Line starts of one text, so many LSP positions convert in one pass each."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(self, position: dict[str, int], encoding: str) -> int:
        """An LSP position as an index into the text (past the end clamps to the end)."""
        line = max(int(position.get("line", 0)), 0)
        if line >= len(self.lines):
            return len(self.text)
        column = decode_column(self.lines[line], int(position.get("character", 0)), encoding)
        return self.starts[line] + column
