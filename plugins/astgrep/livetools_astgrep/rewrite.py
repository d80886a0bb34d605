"""Render a rewrite template for one match, re-indenting multi-line captures.

A capture's later lines are taken relative to the indentation of the line the capture starts on,
and put relative to the indentation of the template line that names it; then every template line
after the first gets the indentation of the line the match starts on. Lines that start inside a
multi-line string literal are copied verbatim at both steps: indenting them would change the
string's value.
"""

from __future__ import annotations

import textwrap
from typing import Any

from .matcher import trimmed_end
from .metavars import TEMPLATE
from .pattern import Pattern

Line = tuple[str, bool]  # text, verbatim


def normalize_template(template: str) -> str:
    return textwrap.dedent(template).strip("\n")


def line_indent(data: bytes, offset: int) -> str:
    """The leading whitespace of the line holding byte `offset`."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = start
    while end < offset and data[end : end + 1] in (b" ", b"\t"):
        end += 1
    return data[start:end].decode("utf-8", "replace")


def _verbatim_ranges(nodes: tuple[Any, ...]) -> list[tuple[int, int]]:
    """Byte ranges of multi-line tokens and string literals inside the captured nodes."""
    out: list[tuple[int, int]] = []
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n.start_point[0] == n.end_point[0]:
            continue
        kind = n.type
        if n.child_count == 0 or "string" in kind or "heredoc" in kind:
            out.append((n.start_byte, n.end_byte))
            continue
        stack.extend(n.children)
    return out


def _capture_lines(data: bytes, nodes: tuple[Any, ...]) -> list[Line]:
    if not nodes:
        return [("", False)]
    start, end = nodes[0].start_byte, nodes[-1].end_byte
    base = line_indent(data, start)
    verbatim = _verbatim_ranges(nodes)
    lines: list[Line] = []
    pos = start
    for i, raw in enumerate(data[start:end].split(b"\n")):
        text = raw.decode("utf-8", "replace")
        if i == 0:
            lines.append((text, False))
        elif any(a < pos < b for a, b in verbatim):
            lines.append((text, True))
        else:
            lines.append((_dedent(text, base), False))
        pos += len(raw) + 1
    return lines


def _dedent(text: str, base: str) -> str:
    if text.startswith(base):
        return text[len(base) :]
    stripped = text.lstrip(" \t")
    return stripped if len(text) - len(stripped) <= len(base) else text[len(base) :]


def render(template: str, env: dict[str, tuple[Any, ...]], data: bytes, at: int) -> str:
    """The replacement text for a match starting at byte `at` with bindings `env`."""
    lines: list[Line] = [("", False)]
    pos = 0

    def literal(chunk: str) -> None:
        parts = chunk.split("\n")
        text, verb = lines[-1]
        lines[-1] = (text + parts[0], verb)
        lines.extend((part, False) for part in parts[1:])

    for m in TEMPLATE.finditer(template):
        literal(template[pos : m.start()])
        pos = m.end()
        name = m.group(0).lstrip("$")
        nodes = env.get(name, ())
        line_start = template.rfind("\n", 0, m.start()) + 1
        indent = template[line_start : m.start()]
        indent = indent[: len(indent) - len(indent.lstrip(" \t"))]
        captured = _capture_lines(data, nodes)
        text, verb = lines[-1]
        lines[-1] = (text + captured[0][0], verb)
        for text, verbatim in captured[1:]:
            lines.append((text, True) if verbatim else ((indent + text) if text else "", False))
    literal(template[pos:])
    base = line_indent(data, at)
    out = [lines[0][0]]
    for text, verbatim in lines[1:]:
        out.append(text if verbatim or not text.strip() else base + text)
    return "\n".join(out)


def range_problem(pattern: Pattern, start: int, end: int, first: Any) -> str:
    """Why [start, end) is not exactly the code nodes the pattern matched, or "" (checked
    before a rewrite replaces it: a wrong range would delete or keep code the pattern never
    named). The range must start at the node the pattern's first node matched, of its kind, and
    end at the end of a whole sibling (the single node itself, or before its implicit `;`)."""
    head = pattern.nodes[0]
    where = f"at line {first.start_point[0] + 1}"
    if start != first.start_byte:
        return f"{where}: the match starts at byte {start}, its first node at {first.start_byte}"
    if head.meta is None and first.kind_id != head.kind_id:
        return f"{where}: the match starts with a {first.type}, the pattern with a {head.kind}"
    if not pattern.is_sequence:
        ends = {trimmed_end(pattern.root, first)}
        if end not in ends:
            return f"{where}: the match ends at byte {end}, not where its {first.type} ends"
        return ""
    node = first
    while node is not None and node.end_byte < end:
        node = node.next_sibling
    if node is None or node.end_byte != end:
        return f"{where}: the match does not end at the end of a whole node"
    last = pattern.nodes[-1]
    if last.meta is None and not last.implicit and node.kind_id != last.kind_id:
        return f"{where}: the match ends with a {node.type}, the pattern with a {last.kind}"
    return ""
