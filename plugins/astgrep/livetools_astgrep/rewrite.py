"""Render a rewrite template for one match, re-indenting multi-line captures and keeping the
bytes a capture owns.

A capture's later lines are taken relative to the indentation of the line the capture starts on,
and put relative to the indentation of the template line that names it; then every template line
after the first gets the indentation of the line the match starts on. Lines that start inside a
multi-line string literal are copied verbatim at both steps: indenting them would change the
string's value.

A `$$$` capture owns the comments around its nodes up to the code tokens next to it (the
template writes the tokens, so only the capture can carry those comments), and the code's
whitespace at an edge where the template writes none; comments of the match that no capture
carries go to the end of the replacement's first line, so no rewrite loses a comment silently
where one can be kept (docs/ast-grep.md, "Rewrites").
"""

from __future__ import annotations

import textwrap
from typing import Any, NamedTuple

from .matcher import trimmed_end
from .metavars import TEMPLATE
from .pattern import Pattern

Line = tuple[str, bool]  # text, verbatim


class Around(NamedTuple):
    """Where a `$$$` capture sits: the match [lo, hi) and the template around the metavariable."""

    lo: int
    hi: int
    tight: bool  # the template has no space before it: `f($$$A)`
    after: str  # the template after it
    line_start: bool  # only indentation before it on its template line
    first_line: bool  # on the template's first line, which sits on the match's first line


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


_CLOSERS = ")]}>"


class Taken(NamedTuple):
    """What a `$$$` capture's text is made of."""

    pre: str  # comments for the end of the template's previous line (hoisted)
    lo: int  # the source range all of it comes from: [lo, stop)
    start: int  # where `text` starts
    stop: int
    text: str


def _is_trivia(node: Any) -> bool:
    return node.is_extra or node.end_byte == node.start_byte


def _head(first: Any, lo: int) -> tuple[int, list[int]]:
    """(where the gap before a capture starts, where its comments start, last first): the
    gap runs back over comments to the code token before the capture (up the tree when the
    capture opens its parent, as Python's block after `if x:  # why`), never before `lo`."""
    gap, comments = first.start_byte, []
    node = first
    while True:
        prev = node.prev_sibling
        while prev is None:
            node = node.parent
            if node is None:
                return max(gap, lo), comments
            prev = node.prev_sibling
        if prev.end_byte <= lo or not _is_trivia(prev):
            return max(prev.end_byte, lo), comments
        if prev.is_extra:
            comments.append(prev.start_byte)
        gap = prev.start_byte
        node = prev


def _tail(last: Any, hi: int) -> tuple[int, list[tuple[int, int]], list[tuple[int, int]]]:
    """(where the gap after a capture ends, its comments, the separators skipped in it): the
    gap runs over comments, and over unnamed tokens the pattern does not name (the code's
    trailing comma: only unnamed tokens and comments follow them up to the closing one), to
    the code token after the capture, never past `hi`."""
    comments: list[tuple[int, int]] = []
    seps: list[tuple[int, int]] = []
    node = last
    while True:
        nxt = node.next_sibling
        while nxt is None:
            node = node.parent
            if node is None:
                return hi, comments, seps
            nxt = node.next_sibling
        if nxt.start_byte >= hi:
            return hi, comments, seps
        if nxt.is_extra:
            comments.append((nxt.start_byte, nxt.end_byte))
        elif nxt.end_byte == nxt.start_byte:
            pass
        elif not nxt.is_named and _in_tail(nxt):
            seps.append((nxt.start_byte, nxt.end_byte))
        else:
            return nxt.start_byte, comments, seps
        node = nxt


def _in_tail(token: Any) -> bool:
    """Whether only unnamed tokens and comments follow `token` in its parent, and it is not
    the parent's last (closing) token."""
    nxt = token.next_sibling
    if nxt is None:
        return False
    while nxt is not None:
        if nxt.is_named and not nxt.is_extra:
            return False
        nxt = nxt.next_sibling
    return True


def capture_text(
    data: bytes, nodes: tuple[Any, ...], lo: int, hi: int, tight: bool, after: str, hoist: bool
) -> Taken:
    """What a `$$$` capture inside the match [lo, hi) renders as. It keeps the comments
    between, before and after its nodes up to the code tokens around it; the whitespace at an
    edge where the template puts none (`f($$$A)`: the code's line breaks after `(` and before
    `)`); the code's separators after its last node (a trailing comma) when the template closes
    right after it (`after`, the template's text after the metavariable, goes on with a closing
    bracket or a line break); and the line break after a last comment that ends its line,
    where the template (or the file, after the match) goes on on the same line (so `// last`
    cannot comment out a `}`). With `hoist` (the template puts the capture at the start of a
    line after one of its own), comments on the lines before its first node's line go to the
    end of that template line, where they were (`if x:  # why`)."""
    core_start, core_end = nodes[0].start_byte, nodes[-1].end_byte
    gap_start, heads = _head(nodes[0], lo)
    pre, covered = "", -1
    newline = data.rfind(b"\n", gap_start, core_start)
    if hoist and not tight and heads and heads[-1] < newline:
        pre = data[gap_start:newline].rstrip().decode("utf-8", "replace")
        covered = gap_start
        heads = [c for c in heads if c > newline]
    start = heads[-1] if heads else core_start
    if tight:
        start = gap_start
    gap_end, comments, seps = _tail(nodes[-1], hi)
    line_rest = after.split("\n", 1)[0].strip(" \t")
    closes = not line_rest or line_rest[0] in _CLOSERS
    if after and not after[0].isspace():
        stop = gap_end
    elif comments:
        stop = comments[-1][1]
        newline = data.find(b"\n", stop, gap_end)
        follows = line_rest or (not after and data[hi:].lstrip(b" \t\r")[:1] not in (b"\n", b""))
        if follows and newline >= 0 and not data[stop:newline].strip():
            stop = newline + 1
    else:
        stop = core_end
    drop = [] if closes else [s for s in seps if s[1] <= stop]
    pieces, pos = [], start
    for a, b in drop:
        pieces.append(data[pos:a])
        pos = b
    pieces.append(data[pos:stop])
    text = b"".join(pieces).decode("utf-8", "replace")
    return Taken(pre, start if covered < 0 else covered, start, stop, text)


def _capture_lines(
    data: bytes, nodes: tuple[Any, ...], around: Around | None, hoist: bool = False
) -> tuple[str, tuple[int, int], list[Line]]:
    """The capture's lines, later ones dedented relative to the line the capture starts on.
    For a `$$$` capture (`around` given): relative to its first node's line where the template
    puts it at a line's start (a comment kept before it came from the line above), and to the
    match's first line where the template puts it on its first line (the code before it may
    span lines the template writes as one: `if (a\n    && b) {$$$B}`)."""
    if not nodes:
        return "", (0, 0), [("", False)]
    base_at = nodes[0].start_byte
    pre = ""
    if around is None:
        start, end = base_at, nodes[-1].end_byte
        covered = (start, end)
        raw = data[start:end].decode("utf-8", "replace")
    else:
        a = around
        taken = capture_text(data, nodes, a.lo, a.hi, a.tight, a.after, hoist)
        pre, start, raw = taken.pre, taken.start, taken.text
        covered = (taken.lo, taken.stop)
        if not around.line_start:
            base_at = around.lo if around.first_line else start
    base = line_indent(data, base_at)
    verbatim = _verbatim_ranges(nodes)
    lines: list[Line] = []
    pos = start
    for i, text in enumerate(raw.split("\n")):
        if i == 0:
            lines.append((text, False))
        elif any(a < pos < b for a, b in verbatim) or _outdented(text, base):
            lines.append((text, True))
        else:
            lines.append((_dedent(text, base), False))
        pos += len(text.encode()) + 1
    return pre, covered, lines


def _outdented(text: str, base: str) -> bool:
    """A line indented less than the capture's first line (a lambda's `{` under a call's
    arguments): kept where it is, as no relative indentation can say where it was."""
    indent = len(text) - len(text.lstrip(" \t"))
    return bool(text.strip()) and indent < len(base) and not text.startswith(base)


def _dedent(text: str, base: str) -> str:
    if text.startswith(base):
        return text[len(base) :]
    stripped = text.lstrip(" \t")
    return stripped if len(text) - len(stripped) <= len(base) else text[len(base) :]


def render(
    template: str,
    env: dict[str, tuple[Any, ...]],
    data: bytes,
    at: int,
    end: int = -1,
    root: Any = None,
) -> str:
    """The replacement text for a match [at, end) with bindings `env` (`end` < 0: the
    `$$$` captures keep their nodes' text only). With the tree's `root`, the comments of the
    match that no capture keeps (between two tokens the pattern writes: `if (x) // why` +
    newline + `{`) are placed by _place_orphans."""
    lines: list[Line] = [("", False)]
    covered: list[tuple[int, int]] = []
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
        around = None
        if m.group(0).startswith("$$$") and end >= 0:
            before = template[m.start() - 1 : m.start()]
            tight = bool(before) and not before.isspace()
            first = not template[line_start : m.start()].strip()
            around = Around(at, end, tight, template[m.end() :], first, line_start == 0)
        hoist = around is not None and around.line_start and len(lines) > 1
        pre, span, captured = _capture_lines(data, nodes, around, hoist)
        covered.append(span)
        if pre:
            text, verb = lines[-2]
            lines[-2] = (text + pre, verb)
        text, verb = lines[-1]
        lines[-1] = (text + captured[0][0], verb)
        for text, verbatim in captured[1:]:
            lines.append((text, True) if verbatim else ((indent + text) if text else "", False))
    literal(template[pos:])
    base = line_indent(data, at)
    out = [lines[0][0]]
    for text, verbatim in lines[1:]:
        out.append(text if verbatim or not text.strip() else base + text)
    if root is not None and end > at and "".join(out).strip():
        _place_orphans(out, data, at, end, comments_in(root, at, end), covered)
    return "\n".join(out)


def _place_orphans(
    out: list[str],
    data: bytes,
    at: int,
    end: int,
    comments: list[tuple[int, int]],
    covered: list[tuple[int, int]],
) -> None:
    """Append each comment no capture kept to the end of the replacement line as many lines
    below its first as the comment was below the match's first line (or the next line that
    does not end in a line comment, so it is not swallowed by one), when a line break follows
    that line or it is a `/* */` comment; otherwise it goes with the pattern text."""
    enders: list[str] = []  # line comments that end lines of the replacement
    for a, b in comments:
        text = data[a:b].decode("utf-8", "replace")
        if _inside(a, covered) and not text.endswith("*/"):
            enders.append(text)
    newline = data.find(b"\n", end)
    rest_blank = not data[end : newline if newline >= 0 else len(data)].strip()
    for a, b in comments:
        if _inside(a, covered):
            continue
        text = data[a:b].decode("utf-8", "replace")
        i = min(data.count(b"\n", at, a), len(out) - 1)
        while i < len(out) - 1 and _ends_in(out[i], enders):
            i += 1
        if i == len(out) - 1 and not rest_blank and not text.endswith("*/"):
            continue
        out[i] = f"{out[i]} {text}" if out[i].strip() else f"{out[i]}{text}"
        if not text.endswith("*/"):
            enders.append(text)


def _ends_in(line: str, comments: list[str]) -> bool:
    tail = line.rstrip()
    return any(tail.endswith(c.rstrip()) for c in comments)


def comments_in(root: Any, start: int, end: int) -> list[tuple[int, int]]:
    """The byte ranges of the comments inside [start, end), in document order: extras of a
    comment kind (not a line continuation, which is spacing)."""
    out: list[tuple[int, int]] = []
    # From the smallest node spanning the range, not the root: each of a file's 2,000 matches
    # listed the module's 2,000 children again (1.4 s for one ast_edit of a 2,000-line file).
    top = root.descendant_for_byte_range(start, end) if end > start else None
    stack = [top if top is not None else root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end:
            continue
        if node.is_extra:
            if node.start_byte >= start and node.end_byte <= end and "comment" in node.type:
                out.append((node.start_byte, node.end_byte))
            continue
        stack.extend(reversed(node.children))
    return out


def _inside(at: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= at < b for a, b in spans)


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
