"""Whole-pattern checks, for search without a literal to anchor on.

A pattern made only of node kinds, tokens, `$NAME`s and bracketed `$$$NAME` runs (`$F($$$ARGS)`,
`[$$$A]`, `$A if $B else $C`) is judged on each node of its root kind by one function compiled
for the pattern, with its loops unrolled: every pattern node's code node has exactly as many
children as the pattern gives it (then pattern child i pairs with code child i, the only pairing
the matcher could make), each child has the pattern's kind, a metavariable's is a named node
that is not a comment nor zero-width, and repeated metavariables capture equal code. A candidate
that fails a check goes to the matcher itself, so the answer is always the matcher's; only the
common case is cheaper (a non-selective pattern can have 500k matches, where the matcher costs
several microseconds each).

The candidates are the tree's nodes of the root kind, which the engine keeps per cached tree: a
later search for the same kind (calls, most often) skips the C query that visits every node,
the largest part of a search over cached trees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from .matcher import (
    Found,
    Matcher,
    bracketed_run,
    name_counts,
    nodes_equal,
    significant,
    trailing_comma,
    wrapper_of,
)
from .metavars import SINGLE
from .pattern import Pattern, PNode

Path = tuple[int, ...]  # child indexes from the match's root


@dataclass(frozen=True)
class Level:
    """A pattern node with children, checked on each match."""

    path: Path
    kind_id: int
    size: int  # children the pattern gives it (ignored for a wrapper)
    named: int = 0  # of them named nodes or `$NAME`s: each takes one named code child
    wrapper: tuple[int, int, str] | None = None  # opener, closer, name of `open $$$NAME close`


@dataclass(frozen=True)
class Plan:
    check: Callable[..., None]  # see _compile_check


_PLANS: dict[tuple[str, str, str], Plan | None] = {}


def plan_for(pattern: Pattern) -> Plan | None:
    """The pattern's checks, or None when the pattern needs the matcher's backtracking."""
    key = (pattern.grammar, pattern.source, pattern.context)
    if key not in _PLANS:
        if len(_PLANS) >= 256:  # a long run's worker sees many patterns; plans are cheap
            _PLANS.clear()
        _PLANS[key] = _build(pattern)
    return _PLANS[key]


class _Unsupported(Exception):
    pass


def _build(pattern: Pattern) -> Plan | None:
    if pattern.is_sequence or pattern.root.meta is not None or not pattern.root.children:
        return None
    if pattern.chain_kind_ids:
        return None  # a `$X` may stand for a run of chain siblings: the matcher decides
    levels: list[Level] = []
    singles: list[tuple[Path, str]] = []
    leaves: list[tuple[Path, int, bytes]] = []
    tokens: list[tuple[Path, int]] = []
    counts = name_counts(pattern.nodes)

    def node(p: PNode, path: Path) -> None:
        if not p.named:
            raise _Unsupported
        ps = p.children
        wrapper = wrapper_of(ps, counts)  # `( $$$A )` with A used once, as the matcher sees it
        if wrapper is not None:
            meta = ps[1].meta
            assert meta is not None
            opener, closer, _ = wrapper
            name = meta.name if meta.binds else ""
            levels.append(Level(path, p.kind_id, 0, wrapper=(opener, closer, name)))
            return
        if any(trailing_comma(ps, i) for i in range(len(ps))):
            raise _Unsupported  # optional in code: the matcher tries it both ways
        named = sum(1 for c in ps if c.named or c.meta is not None)
        levels.append(Level(path, p.kind_id, len(ps), named))
        for i, c in enumerate(ps):
            child(c, (*path, i))

    def child(p: PNode, path: Path) -> None:
        if p.implicit:
            raise _Unsupported  # optional in code, and outside the match's range
        meta = p.meta
        if meta is not None:
            if meta.kind != SINGLE:
                raise _Unsupported  # $$A, or a $$$ run outside brackets: the matcher decides
            singles.append((path, meta.name if meta.binds else ""))
        elif p.children:
            node(p, path)
        elif p.named:
            assert p.text is not None
            leaves.append((path, p.kind_id, p.text))
        else:
            tokens.append((path, p.kind_id))

    try:
        node(pattern.root, ())
    except _Unsupported:
        return None
    return Plan(_compile_check(levels, singles, leaves, tokens))


def _compile_check(
    levels: list[Level],  # in pre-order: a level's parent comes before it
    singles: list[tuple[Path, str]],  # (path, metavariable name; "" binds nothing)
    leaves: list[tuple[Path, int, bytes]],  # (path, kind id, the named leaf's exact text)
    tokens: list[tuple[Path, int]],  # (path, kind id) of the pattern's anonymous leaves
) -> Callable[..., None]:
    """The checks of one plan as a Python function with its loops unrolled: it runs once per
    candidate, up to 500k times a search (unrolling saved about 0.1 s per 140k matches).

    `check(roots, wrapped, pending, out)` takes nodes of the pattern's root kind, appends
    (start, end, root, bindings) to `out` and the roots the matcher must judge to `pending`.
    Nodes are taken by position (`child(i)`): once every level has as many children as the
    pattern gives it, pattern child i can only pair with code child i. Only child indexes,
    sizes, kind ids, metavariable names (`[A-Z_][A-Z0-9_]*`) and leaf texts (as `repr`
    literals) enter the source."""

    def var(path: Path) -> str:
        return "n_" + "_".join(map(str, path)) if path else "root"

    def take(path: Path) -> str:
        return f"        {var(path)} = {var(path[:-1])}.child({path[-1]})"

    fail = ["            pending.append(root)", "            continue"]
    src = [
        "def check(roots, wrapped, pending, out):",
        "    for root in roots:",  # each node once
    ]
    env: dict[str, str] = {}
    for i, level in enumerate(levels):
        if level.path:
            src += [take(level.path), f"        if {var(level.path)}.kind_id != {level.kind_id}:"]
            src += fail
        if level.wrapper is None:
            # More named code children than the pattern has named nodes: no match (a named
            # code node is never skipped, and no `$$$` is here to take one), the matcher
            # need not be asked. Fewer, or extras among them: the matcher decides.
            n = var(level.path)
            src += [
                f"        if {n}.child_count != {level.size}:",
                f"            if {n}.named_child_count > {level.named} and "
                f"named_code({n}) > {level.named}:",
                "                continue",
                *fail,
            ]
            continue
        opener, closer, name = level.wrapper
        src += [
            f"        w{i} = wrapped({var(level.path)}, {opener}, {closer})",
            f"        if w{i} is None:",
            *fail,
        ]
        if name:
            env[name] = f"w{i}"
    for path, kind_id in tokens:
        src += [take(path), f"        if {var(path)}.kind_id != {kind_id}:", *fail]
    for path, kind_id, text in leaves:
        n = var(path)
        src += [take(path), f"        if {n}.kind_id != {kind_id} or {n}.text != {text!r}:", *fail]
    first: dict[str, str] = {}
    repeated: list[str] = []
    for path, name in singles:
        n = var(path)
        empty = f"{n}.start_byte == {n}.end_byte"
        src += [take(path), f"        if not {n}.is_named or {n}.is_extra or {empty}:", *fail]
        if not name:
            continue
        if name in first:
            repeated.append(f"not nodes_equal({first[name]}, {n})")
        else:
            first[name] = n
            env[name] = f"({n},)"
    if repeated:  # the only assignment there is binds different code: no match
        src += [f"        if {' or '.join(repeated)}:", "            continue"]
    bindings = ", ".join(f"{name!r}: {expr}" for name, expr in env.items())
    src.append(f"        out.append((root.start_byte, root.end_byte, root, {{{bindings}}}))")
    namespace: dict[str, Any] = {"nodes_equal": nodes_equal, "named_code": _named_code}
    exec("\n".join(src), namespace)
    return namespace["check"]


def _named_code(node: Any) -> int:
    """Named children that take part in matching (not comments, not zero-width)."""
    return sum(1 for c in node.named_children if not c.is_extra and c.end_byte > c.start_byte)


def _wrapped(node: Any, opener: int, closer: int) -> tuple[Any, ...] | None:
    """What `open $$$NAME close` binds in `node`, by the matcher's own rule; None when the
    matcher must search (a missing bracket, a closer inside)."""
    return bracketed_run(significant(node), opener, closer)


def _wrapped_ends(node: Any, opener: int, closer: int) -> tuple[Any, ...] | None:
    """The first and last node of what `_wrapped` binds, checking only those two (a search needs
    only the run's text). `run` only takes trees without errors, where a closer cannot sit among
    the children (brackets balance), and comments between the ends do not change the run's
    text; anything else goes to `_wrapped`."""
    cs = node.children
    if len(cs) < 2 or cs[0].kind_id != opener or cs[-1].kind_id != closer:
        return None
    if len(cs) == 2:
        return ()
    last = len(cs) - 2
    while last and not cs[last].is_named:
        last -= 1
    first, end = cs[1], cs[last]
    if (
        not last
        or first.is_extra
        or end.is_extra
        or first.start_byte == first.end_byte
        or end.start_byte == end.end_byte
    ):
        return _wrapped(node, opener, closer)
    return (first, end)


def run(plan: Plan, roots: list[Any], matcher: Matcher, ends_only: bool = False) -> list[Found]:
    """Matches among `roots` (the tree's nodes of the pattern's root kind, in document order,
    an enclosing node first), in the same order. `ends_only`: a `$$$` run is bound as its
    first and last node only (enough for its text). The caller leaves a tree with syntax
    errors to the matcher: there a metavariable may stand for an ERROR node."""
    pending: list[Any] = []
    out: list[Found] = []
    plan.check(roots, _wrapped_ends if ends_only else _wrapped, pending, out)
    if not pending:  # appended in the roots' order
        return out
    for root in pending:
        env = matcher.at(root)
        if env is not None:
            out.append((root.start_byte, root.end_byte, root, env))
    # Back in document order: two stable sorts on C key functions.
    out.sort(key=itemgetter(1), reverse=True)
    out.sort(key=itemgetter(0))
    return out
