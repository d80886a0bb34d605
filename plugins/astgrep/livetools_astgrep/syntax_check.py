"""Whether a rewrite broke the file's syntax, and where: the first error it added.

tree-sitter recovers from errors with ERROR and MISSING nodes; a rewrite is refused when the
new tree has more of them than the old one. The refusal names the first error of the new tree
whose position, mapped back through the edits, held no error before, so an older error of the
file (at line 1, say) is never quoted for a new one. tree-sitter-python accepts some invalid code
without an ERROR node (`y: int =` + newline + value, an unexpected indent), so a Python file is
also parsed by the interpreter's own parser (`compile` to an AST, nothing runs) when the
original parsed there: a file in syntax newer than the interpreter is checked by tree-sitter only.
"""

from __future__ import annotations

import ast
import bisect
from typing import Any

from .pattern import problems

Edit = tuple[int, int, int]  # old start, old end, length of the new text

PYTHON = frozenset({"python"})


def new_error(
    grammar: str, old: Any, new: Any, old_data: bytes, new_data: bytes, edits: list[Edit]
) -> str:
    """A description of the first syntax error the rewrite introduced, or ""."""
    problem = _tree_error(old, new, new_data, edits)
    if problem or grammar not in PYTHON:
        return problem
    return _python_error(old_data, new_data)


def _mapper(edits: list[Edit]) -> Any:
    """old byte offset -> new byte offset (an offset inside a replaced range goes to the
    start of its replacement)."""
    starts = [e[0] for e in edits]
    shifts = []
    total = 0
    for start, end, length in edits:
        total += length - (end - start)
        shifts.append(total)

    def to_new(pos: int) -> int:
        i = bisect.bisect_right(starts, pos) - 1
        if i < 0:
            return pos
        start, end, length = edits[i]
        before = shifts[i] - (length - (end - start))
        if pos < end:
            return start + before
        return pos + shifts[i]

    return to_new


def _tree_error(old: Any, new: Any, data: bytes, edits: list[Edit]) -> str:
    if not new.root_node.has_error:
        return ""
    before = problems(old.root_node) if old.root_node.has_error else []
    after = problems(new.root_node)
    if len(after) <= len(before):
        return ""
    to_new = _mapper(edits)
    seen = {(to_new(n.start_byte), n.is_missing) for n in before}
    fresh = [n for n in after if (n.start_byte, n.is_missing) not in seen]
    first = (fresh or after)[0]
    what = f"missing {first.type}" if first.is_missing else "syntax error"
    return f"line {first.start_point[0] + 1}: {what} in {_line(data, first.start_byte)!r}"


def _line(data: bytes, at: int) -> str:
    start = data.rfind(b"\n", 0, at) + 1
    stop = data.find(b"\n", at)
    text = data[start : stop if stop >= 0 else len(data)].decode("utf-8", "replace").strip()
    return text[:120]


def _python_error(old: bytes, new: bytes) -> str:
    if _compile_error(old) is not None:
        return ""  # the interpreter cannot read the original either (newer syntax, Python 2)
    err = _compile_error(new)
    if err is None:
        return ""
    line = err.lineno or 1
    return (
        f"line {line}: {err.msg} (Python's parser; tree-sitter accepts it) in "
        f"{_line(new, _offset(new, line))!r}"
    )


def _compile_error(data: bytes) -> SyntaxError | None:
    try:
        compile(data, "<rewrite>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:  # IndentationError and TabError are SyntaxErrors
        return err
    except ValueError as err:  # a NUL byte: not source the interpreter reads
        return SyntaxError(str(err))
    return None


def _offset(data: bytes, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            break
        pos = nxt + 1
    return pos
