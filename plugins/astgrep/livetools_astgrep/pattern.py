"""Compile a pattern fragment into a skeleton of nodes, through the grammar's context ladder.

The fragment is parsed by the file's own grammar inside each context of the ladder in turn; the
first context whose tree has no ERROR and no MISSING node wins, and the node (or the run of
sibling nodes) that spans exactly the fragment becomes the pattern. A fragment no context accepts
is an error that names every context tried: a pattern is never searched half-parsed, because a
half-parsed pattern silently matches nothing (ast-grep's `fmt.Println($A)` in Go).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from . import metavars
from .grammar import HOLE, Grammar
from .languages import Loaded

_KEYWORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]+$")
# Operators worth anchoring candidates on: every match holds them as a code token of that text
# (commas and semicolons can be optional in a pattern, so they never anchor).
_OPERATOR = re.compile(r"^[-=!<>+*/%&|^~:.?@]{2,}$")


class PatternError(Exception):
    """The pattern cannot be used; the message says why and what to try."""


@dataclass(frozen=True)
class PNode:
    """One node of a pattern skeleton. `text` is set for leaves (compared exactly when named);
    `meta` marks a metavariable, which stands for whole code nodes."""

    kind_id: int
    kind: str
    named: bool
    text: bytes | None
    children: tuple[PNode, ...] = ()
    meta: metavars.MetaVar | None = None
    # A terminator the context supplied, not the fragment (`;` after `return $X` in a C body):
    # matched when the code has it, never part of a match's range.
    implicit: bool = False


@dataclass(frozen=True)
class Pattern:
    source: str
    grammar: str
    nodes: tuple[PNode, ...]  # one node, or a run of siblings
    context: str
    tokens: tuple[bytes, ...]  # literal text every match contains, longest first
    operators: tuple[bytes, ...] = ()  # operator tokens every match contains, longest first
    chain_kind_ids: frozenset[int] = frozenset()
    names: tuple[str, ...] = ()  # binding metavariable names, in order of appearance
    multi_names: frozenset[str] = field(default_factory=frozenset)
    # The kind id of the root's implicit terminator: a match ends before it (see PNode.implicit).
    trim_kind: int | None = None
    hint: str = ""  # said with every result: `$name` is not a metavariable
    # Keywords of an untuned grammar's pattern: not trusted for the prefilter (no grammar's
    # tokens were checked there), but text every match shows, so an empty answer can point at it.
    keywords: tuple[bytes, ...] = ()

    @property
    def is_sequence(self) -> bool:
        return len(self.nodes) > 1

    @property
    def root(self) -> PNode:
        return self.nodes[0]

    def describe(self) -> str:
        kinds = " ".join(n.meta.source() if n.meta else n.kind for n in self.nodes)
        return f"{kinds} (context: {context_label(self.context)}){self.hint}"


def context_label(context: str) -> str:
    if context == HOLE:
        return "top level"
    return " ".join(context.replace(HOLE, "PATTERN").split())


def _normalize(pattern: str) -> str:
    text = textwrap.dedent(pattern.expandtabs(8) if "\t" in pattern else pattern)
    return text.strip("\n").rstrip()


def _place(context: str, fragment: str) -> tuple[str, int, int]:
    """Put the fragment in the context's hole, indenting its later lines like the hole's line;
    returns the source and the fragment's byte range in it."""
    before, after = context.split(HOLE)
    indent = before[before.rfind("\n") + 1 :]
    indent = indent if indent.strip() == "" else ""
    body = fragment.replace("\n", "\n" + indent) if indent else fragment
    start = len(before.encode())
    return before + body + after, start, start + len(body.encode())


def problems(node: Any) -> list[Any]:
    """Every ERROR and MISSING node under `node`, in document order."""
    out = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            out.append(current)
            if current.is_missing:
                continue
        if current.has_error:
            stack.extend(reversed(current.children))
    return out


def _line_of(source: bytes, offset: int) -> str:
    start = source.rfind(b"\n", 0, offset) + 1
    end = source.find(b"\n", offset)
    return source[start : end if end >= 0 else len(source)].decode("utf-8", "replace").strip()


def _locate(root: Any, start: int, end: int) -> list[Any] | str:
    """The node spanning exactly [start, end), or the run of siblings that does; a reason when
    the fragment is not a whole node or a whole run here.

    The fragment is always the whole pattern, never a suffix: a statement that parses only with
    the context's `;` after it (`return NULL`, `throw new $E($$$)`) is that statement, its `;`
    marked implicit, not the expression inside it. An expression statement is its expression."""
    node = root.descendant_for_byte_range(start, end)
    if node is None:
        return "fragment not found"
    if node.start_byte == start and node.end_byte == end and node.parent is not None:
        return [node]
    kids = [c for c in node.children if not c.is_extra and c.end_byte > c.start_byte]
    inside = [c for c in kids if c.start_byte >= start and c.end_byte <= end]
    cut = [c for c in kids if c.start_byte < end and c.end_byte > start and c not in inside]
    if (
        node.start_byte == start
        and node.type != "expression_statement"
        and node.parent is not None
        and _only_terminators_after(node, end)
    ):
        return [node]  # the statement with the context's terminator (see `_build`)
    if not inside or cut or inside[0].start_byte != start or inside[-1].end_byte != end:
        return f"the pattern is part of a larger {node.type} here"
    # A separator the container holds after the fragment (`;` after a class field, the
    # context's `;` after an expression statement) is not part of the shape. Leading tokens
    # are: `throw`, `return`, `#include` are what the pattern says.
    while len(inside) > 1 and not inside[-1].is_named and inside[-1].type in _SEPARATORS:
        inside.pop()
    return inside


_SEPARATORS = frozenset({";", ","})


def _only_terminators_after(node: Any, end: int) -> bool:
    """Whether all of `node` after byte `end` is unnamed tokens or whitespace (the `;` a
    context added), also inside the last child that `end` cuts (`if (c) x.f()` + `;`)."""
    kids = [c for c in node.children if not c.is_extra and c.end_byte > c.start_byte]
    for c in kids:
        if c.end_byte <= end:
            continue
        if c.start_byte >= end:
            if c.is_named:
                return False
        elif not _only_terminators_after(c, end):
            return False
    return (
        not kids
        or kids[-1].end_byte > end
        or not node.text[kids[-1].end_byte - node.start_byte :].strip()
    )


def _echo(text: str, cap: int = 200) -> str:
    """`text` quoted for an error message, at most `cap` characters of it."""
    text = text.strip()
    return repr(text) if len(text) <= cap else repr(text[:cap]) + f"… ({len(text)} characters)"


_DIRECTIVE = re.compile(r"\s*(import|export|part)\s+\$[A-Z_]")


_BODY_OWNERS = frozenset({"for_statement", "if_statement", "while_statement"})
# `{ $$$A }` alone in braces, and the marker of the variant that writes it `{ $$$A; }`.
_RUN_BLOCK = re.compile(r"\{\s*(\$\$\$[A-Z_0-9]*)\s*\}")
_BLOCK_RUN = "{;}"
_RUN_AS_STATEMENT = frozenset({"csharp", "solidity", "php", "swift", "kotlin", "scala"})
# A C++ function definition: a return type, a name, parameters, then a body.
_CPP_DEFINITION = re.compile(r"[\w$:<>,*&\s]+?[\s*&]([\w$:~]+)\s*\([^;{]*\)[^;{=]*\{")
_STATEMENT = re.compile(r"\s*(if|for|while|do|try|else|switch)\b")


def _sets_as_blocks(nodes: tuple[PNode, ...], block_id: int | None) -> tuple[PNode, ...]:
    """Dart reads `{ $$$ }` after `for (…)`/`if (…)`/`while (…)` as a set literal holding a run
    (a statement), which no real body is; an agent means the block: `{`, the run, `}`. The
    set's brace tokens are the block's (one token kind), so only the wrapper changes."""
    if block_id is None:
        return nodes

    def fix(node: PNode, owner: bool) -> PNode:
        inner = node.children[0] if node.children else None
        if (
            owner
            and node.kind == "expression_statement"
            and inner is not None
            and inner.kind == "set_or_map_literal"
            and all(c.implicit or c.kind == ";" for c in node.children[1:])
            and len(inner.children) == 3
            and (meta := inner.children[1].meta) is not None
            and meta.kind == metavars.MULTI
        ):
            return PNode(block_id, "block", True, None, inner.children)
        kids = tuple(fix(c, node.kind in _BODY_OWNERS) for c in node.children)
        if kids == node.children:
            return node
        return PNode(node.kind_id, node.kind, node.named, node.text, kids, node.meta, node.implicit)

    return tuple(fix(n, False) for n in nodes)


class Compiler:
    """Compiles patterns for one grammar (kept per run: compiling parses the ladder)."""

    def __init__(self, grammar: Grammar, loaded: Loaded) -> None:
        self.grammar = grammar
        self.loaded = loaded
        self.detect = metavars.detector(grammar.metavar_char)
        self.chain_ids = frozenset(
            i for k in grammar.chain_kinds for i in [loaded.kind_id(k)] if i is not None
        )

    def compile(self, pattern: str) -> Pattern:
        fragment = _normalize(pattern)
        if not fragment:
            raise PatternError("the pattern is empty; pass code with $NAME where anything goes")
        pre = metavars.preprocess(fragment, self.grammar.metavar_char)
        tried: list[str] = []
        for text, quoted in self._variants(fragment, pre):
            found = self._try_ladder(pattern, fragment, text, quoted, tried)
            if found is not None:
                return found
        hint = metavars.lowercase_hint(fragment)
        raise PatternError(
            f"the pattern does not parse as {self.grammar.id} in any context{hint}; contexts "
            f"tried: {'; '.join(tried)}. Write a complete piece of code (a statement, an "
            "expression, a member or a declaration), with $NAME for one node and $$$NAME for "
            "zero or more"
        )

    def _variants(self, fragment: str, pre: str) -> list[tuple[str, str]]:
        """The fragment as written, then with one `$NAME` at a time written as a string literal
        (`import $X from $M`: the grammar wants a string there); the quoted text is recognised
        as that metavariable again."""
        out = [(pre, "")]
        c = self.grammar.metavar_char
        for m in metavars.TEMPLATE.finditer(fragment):
            if m.group(0).startswith("$$"):
                continue
            name = m.group(0).replace("$", c)
            quoted = f'"{name}"'
            before, after = fragment[: m.start()], fragment[m.end() :]
            text = metavars.preprocess(before, c) + quoted + metavars.preprocess(after, c)
            out.append((text, quoted))
        if _DIRECTIVE.match(fragment):  # Dart `import $X;` reads as a local `import X;` as
            out.append(out.pop(0))  # written: a string where a directive wants one wins
        if self.grammar.id == "cpp" and _CPP_DEFINITION.match(fragment):
            # C++ `int $F($$$P) { $$$ }`: as written the body `{ $$$ }` is an initializer list
            # (a braced declaration); as `{ $$$; }` it is a function body, first.
            run = re.compile(r"\{\s*(" + re.escape(c * 3) + r"[A-Z_0-9]*)\s*\}\s*$")
            if run.search(pre):
                out.insert(0, (run.sub(r"{ \1; }", pre), _BLOCK_RUN))
        if self.grammar.id in _RUN_AS_STATEMENT:
            # C# `foreach (…) { $$$ }`: a lone name is no statement there; `{ $$$; }` is.
            run = re.compile(r"\{\s*(" + re.escape(c * 3) + r"[A-Z_0-9]*)\s*\}")
            if run.search(pre):
                out.append((run.sub(r"{ \1; }", pre), _BLOCK_RUN))
        if self.grammar.id == "dart" and _RUN_BLOCK.search(pre):
            # Dart `if ($C) { $$$A } else { $$$B }`: the set literal `{ $$$A }` needs a `;`
            # before `else`; as `{ $$$A; }` it is a block.
            # First for a statement (as written, `if (…) {…} else if …` reads as two
            # top-level functions named `if`, holding ERRORs a metavariable explains).
            blocks = (_RUN_BLOCK.sub(r"{ \1; }", pre), _BLOCK_RUN)
            out.insert(0 if _STATEMENT.match(fragment) else len(out), blocks)
        return out

    def _try_ladder(
        self, pattern: str, fragment: str, pre: str, quoted: str, tried: list[str]
    ) -> Pattern | None:
        parser = self.loaded.parser()
        for context in self.grammar.ladder(fragment):
            source, start, end = _place(context, pre)
            data = source.encode()
            tree = parser.parse(data)
            root = tree.root_node
            label = context_label(context)
            fatal = [p for p in problems(root) if not self._after_metavar(p)]
            if fatal:
                if not quoted:
                    bad = fatal[0]
                    where = _line_of(data, bad.start_byte).replace(self.grammar.metavar_char, "$")
                    what = "missing " + bad.type if bad.is_missing else "error"
                    tried.append(f"{label}: {what} at {where!r}")
                continue
            located = _locate(root, start, end)
            if isinstance(located, str):
                if not quoted:
                    tried.append(f"{label}: {located}")
                continue
            nodes = tuple(self._build(n, end, quoted) for n in located)
            nodes = _sets_as_blocks(nodes, self.loaded.kind_id("block"))
            self._check_whole_metavars(pattern, nodes)
            if len(nodes) == 1 and nodes[0].meta and nodes[0].meta.kind == metavars.MULTI:
                raise PatternError(
                    f"the pattern {pattern.strip()!r} is only a {nodes[0].meta.source()}: it "
                    "would match every run of nodes; add code around it"
                )
            return self._finish(fragment, context, nodes)
        return None

    def _check_whole_metavars(self, pattern: str, nodes: tuple[PNode, ...]) -> None:
        """Refuse a metavariable that is part of one token (`<$H>`, `"Hello $W"`, `on$EVENT`):
        it would be compared as text and silently match nothing."""
        stack = list(nodes)
        while stack:
            p = stack.pop()
            stack.extend(p.children)
            if p.meta is not None or p.text is None:
                continue
            text = p.text.decode("utf-8", "replace")
            if self.grammar.metavar_char != "$":
                text = text.replace(self.grammar.metavar_char, "$")
            m = metavars.TEMPLATE.search(text)
            if m is not None:
                raise PatternError(
                    f"{m.group(0)} in the pattern {_echo(pattern)} is part of the token "
                    f"{_echo(text)} ({p.kind}), not a whole node, so it is not a metavariable "
                    "there; put the metavariable where a whole node goes (like `#include $H` "
                    "for `#include <$H>`), or write the token out"
                )

    def _is_metavar(self, node: Any) -> bool:
        return metavars.parse(node.text.decode("utf-8", "replace"), self.detect) is not None

    def _after_metavar(self, problem: Any) -> bool:
        """Problems a metavariable explains are tolerated: an ERROR that is only a metavariable
        (`$$$` where the grammar wants match arms or members), and a MISSING terminator right
        after one (`$$$BODY` stands for whole statements, which carry their own `;`)."""
        if problem.is_error:
            return self._is_metavar(problem)
        if not problem.is_missing:
            return False
        prev = problem.prev_sibling
        while prev is not None and prev.is_extra:
            prev = prev.prev_sibling
        if prev is None:
            return False
        meta = metavars.parse(prev.text.decode("utf-8", "replace"), self.detect)
        # Not after `$X`: `return $X` then ends before the code's `;` (the `{};` context).
        return meta is not None and meta.kind == metavars.MULTI

    def _build(self, node: Any, end: int, quoted: str = "") -> PNode:
        """The skeleton of `node`; a child after the fragment's `end` came from the context;
        `quoted` is a metavariable written as a string (see `_variants`)."""
        text = node.text.decode("utf-8", "replace")
        if quoted and text == quoted:
            text = text[1:-1]
        meta = metavars.parse(text, self.detect)
        if meta is not None and meta.kind == metavars.MULTI and node.type == "block":
            # An indented block that is only `$$$B` (Python `if $C:` + `$$$B`): the run is the
            # block's statements, not the block and whatever follows it (an `else:`).
            inner = PNode(node.kind_id, node.type, node.is_named, None, (), meta)
            return PNode(node.kind_id, node.type, node.is_named, None, (inner,))
        if meta is not None:
            return PNode(node.kind_id, node.type, node.is_named, None, (), meta)
        if quoted == _BLOCK_RUN and node.type == "expression_statement":
            parts = [c for c in node.children if not c.is_extra]
            run = metavars.parse(parts[0].text.decode("utf-8", "replace"), self.detect)
            if len(parts) == 2 and parts[1].type == ";" and run and run.kind == metavars.MULTI:
                # `$$$A;` we wrote for `{ $$$A }`: the run of the block's statements
                return PNode(parts[0].kind_id, parts[0].type, parts[0].is_named, None, (), run)
        kids = tuple(
            self._build(c, end, quoted)
            for c in node.children
            if c.end_byte > c.start_byte
            and (not c.is_extra or (c.is_error and self._is_metavar(c)))
        )
        leaf = node.text if not kids else None
        implicit = node.start_byte >= end and not node.is_named and node.text.strip() != b""
        return PNode(node.kind_id, node.type, node.is_named, leaf, kids, None, implicit)

    def _finish(self, fragment: str, context: str, nodes: tuple[PNode, ...]) -> Pattern:
        tokens: set[bytes] = set()
        keywords: set[bytes] = set()
        operators: set[bytes] = set()
        names: list[str] = []
        multi: set[str] = set()
        stack = list(reversed(nodes))
        while stack:
            p = stack.pop()
            if p.meta is not None:
                if p.meta.binds and p.meta.name not in names:
                    names.append(p.meta.name)
                if p.meta.binds and p.meta.kind == metavars.MULTI:
                    multi.add(p.meta.name)
                continue
            if (
                p.text is not None
                and not p.named
                and not p.children
                and self.grammar.tuned
                and _OPERATOR.match(p.kind)
                and p.kind == p.text.decode()
            ):
                operators.add(p.text)
            if (
                p.text is not None
                and p.text.strip()
                and (
                    p.named
                    or (self.grammar.tuned and _KEYWORD.match(p.kind) and p.kind == p.text.decode())
                )
            ):
                tokens.add(p.text)
            elif (
                p.text is not None
                and not p.named
                and not p.implicit
                and _KEYWORD.match(p.kind)
                and p.kind == p.text.decode()
            ):
                keywords.add(p.text)
            stack.extend(reversed(p.children))
        ordered = tuple(sorted(tokens, key=lambda t: (-len(t), t)))
        last = nodes[0] if len(nodes) == 1 else None
        while last is not None and last.children and not last.implicit:
            last = last.children[-1]
        return Pattern(
            source=fragment,
            grammar=self.grammar.id,
            nodes=nodes,
            context=context,
            tokens=ordered,
            operators=tuple(sorted(operators, key=lambda t: (-len(t), t))),
            chain_kind_ids=self.chain_ids,
            names=tuple(names),
            multi_names=frozenset(multi),
            trim_kind=last.kind_id if last is not None and last.implicit else None,
            hint=metavars.lowercase_hint(fragment),
            keywords=tuple(sorted(keywords, key=lambda t: (-len(t), t))),
        )
