"""Match a pattern skeleton against tree-sitter nodes.

Rules (the contract in docs/ast-grep.md):
- comments and other extras are trivia on both sides; an unnamed code token may be skipped where
  the pattern expects a token (a trailing comma before `)`, `async` before `function`), as in
  ast-grep's smart mode; named code nodes are never skipped;
- every named child of a code node must be matched: no trailing-children prefix matching
  (`if $C: return $V` does not match an `if` that has an `else`);
- `$$$` is lazy and backtracks (`f($$$A, x)` matches `f(x, y, x)`);
- a repeated metavariable must capture structurally equal code (trivia ignored).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .metavars import ANY, MULTI, SINGLE
from .pattern import Pattern, PNode

Env = dict[str, tuple[Any, ...]]
Found = tuple[int, int, Any, Env]  # a match: start byte, end byte, first node, bindings


def outer_first(found: Found) -> tuple[int, int]:
    """Sort key for document order, an enclosing match before the matches inside it."""
    return found[0], -found[1]


class BudgetExceeded(Exception):
    """Backtracking went on too long for one candidate (pathological `$$$` combinations)."""


def significant(node: Any) -> list[Any]:
    """Children that take part in matching: not extras (comments), not zero-width."""
    return [c for c in node.children if not c.is_extra and c.end_byte > c.start_byte]


def _unwrap(node: Any) -> Any:
    """The node inside wrappers of one child: Dart's `argument` around `x` in `print(x)`."""
    while True:
        kids = significant(node)
        if len(kids) != 1:
            return node
        node = kids[0]


def nodes_equal(a: Any, b: Any) -> bool:
    """Structural equality ignoring trivia: `a + b` equals `a  +  b` and `a + \\\n b`. Two
    captures of different kinds compare by what their one-child wrappers hold, so `$X` bound
    to the identifier `x` equals `$X` bound to the argument `x` (as in ast-grep)."""
    if a.kind_id != b.kind_id:
        a, b = _unwrap(a), _unwrap(b)
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x.kind_id != y.kind_id:
            return False
        xs, ys = significant(x), significant(y)
        if not xs and not ys:
            if x.text != y.text:
                return False
            continue
        if len(xs) != len(ys):
            return False
        stack.extend(zip(xs, ys, strict=True))
    return True


def captures_equal(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equality of two captures, compared on their named nodes (separators do not count)."""
    xs = [n for n in a if n.is_named]
    ys = [n for n in b if n.is_named]
    return len(xs) == len(ys) and all(nodes_equal(x, y) for x, y in zip(xs, ys, strict=True))


class _Plan:
    """What `_seq` needs to know about one tuple of pattern siblings, worked out once."""

    __slots__ = ("after", "optional", "sep_multi", "wrapper")

    def __init__(self, ps: tuple[PNode, ...], counts: dict[str, int]) -> None:
        self.optional = [trailing_comma(ps, i) or ps[i].implicit for i in range(len(ps))]
        self.sep_multi = [_separator_before_multi(ps, i) for i in range(len(ps))]
        self.after = [_separators_after(ps, i) for i in range(len(ps))]
        self.wrapper = wrapper_of(ps, counts)


# Plans per pattern object (a search makes a Matcher per file): the entry keeps the pattern
# alive, so its id and the ids of its tuples stay its own.
_PLAN_CACHE: dict[int, tuple[Pattern, dict[int, _Plan]]] = {}


def _plans_of(pattern: Pattern) -> dict[int, _Plan]:
    cached = _PLAN_CACHE.get(id(pattern))
    if cached is not None and cached[0] is pattern:
        return cached[1]
    counts = name_counts(pattern.nodes)
    tuples: list[tuple[PNode, ...]] = [pattern.nodes]
    stack = list(pattern.nodes)
    while stack:
        p = stack.pop()
        if p.children:
            tuples.append(p.children)
            stack.extend(p.children)
    plans = {id(ps): _Plan(ps, counts) for ps in tuples}
    if len(_PLAN_CACHE) >= 64:
        _PLAN_CACHE.clear()
    _PLAN_CACHE[id(pattern)] = (pattern, plans)
    return plans


class Matcher:
    def __init__(self, pattern: Pattern, budget: int = 100_000) -> None:
        self.pattern = pattern
        self.budget = budget
        self._steps = 0
        self._lead = -1  # where an unanchored run starts: its first node is the pattern's
        self._chain = pattern.chain_kind_ids
        self._plans = _plans_of(pattern)

    # -- entry points ------------------------------------------------------------------------

    def at(self, node: Any) -> Env | None:
        """Bindings if the (single-node) pattern matches `node` itself."""
        self._steps = 0
        env: Env = {}
        trail: list[str] = []
        return env if self._node(self.pattern.root, node, env, trail) else None

    def runs(self, parent: Any) -> Iterator[tuple[Any, Any, Env]]:
        """Matches of a sibling-run pattern among `parent`'s children: (first, last, bindings).
        Leftmost, non-overlapping; a leading `$X` over chain kinds yields every chain length."""
        cs = significant(parent)
        ps = self.pattern.nodes
        chain = self.pattern.chain_kind_ids
        lead = ps[0].meta
        i = 0
        while i < len(cs):
            self._steps = 0
            if chain and lead is not None and lead.kind == SINGLE:
                yield from self._chain_runs(ps, cs, i, chain)
                i += 1
                continue
            env: Env = {}
            trail: list[str] = []
            self._lead = i
            end = self._seq(ps, 0, cs, i, env, trail, anchored=False)
            if end > i:
                yield cs[i], cs[end - 1], env
                i = end
            else:
                i += 1

    # -- internals ---------------------------------------------------------------------------

    def _chain_runs(
        self, ps: tuple[PNode, ...], cs: list[Any], i: int, chain: frozenset[int]
    ) -> Iterator[tuple[Any, Any, Env]]:
        head = cs[i]
        if not head.is_named or head.kind_id in chain:
            return
        lead = ps[0].meta
        assert lead is not None
        j = i + 1
        while True:
            env: Env = {}
            trail: list[str] = []
            self._lead = j
            if self._bind(lead.name, tuple(cs[i:j]), env, trail, multi=False):
                end = self._seq(ps, 1, cs, j, env, trail, anchored=False)
                if end >= j and end > i:
                    yield head, cs[end - 1], env
            if j < len(cs) and cs[j].kind_id in chain:
                j += 1
            else:
                return

    def _chain_end(self, cs: list[Any], ci: int) -> int:
        """The index past the chain-kind siblings (Dart selectors) that follow cs[ci]."""
        if not cs[ci].is_named or cs[ci].kind_id in self._chain:
            return ci
        j = ci + 1
        while j < len(cs) and cs[j].kind_id in self._chain:
            j += 1
        return j

    @staticmethod
    def _stops(ps: tuple[PNode, ...], pi: int, cs: list[Any], ci: int) -> Iterator[int]:
        """Where a `$$$` starting at cs[ci] may end, shortest first. When a pattern token follows
        it, only positions just before a code node of that kind (less the unnamed tokens that
        precede it) can work, so the others are not tried: `f($$$A)` costs one step, not one
        per argument."""
        yield ci
        nxt = ps[pi + 1] if pi + 1 < len(ps) else None
        if nxt is None or nxt.meta is not None or nxt.children or trailing_comma(ps, pi + 1):
            yield from range(ci + 1, len(cs) + 1)
            return
        want = nxt.kind_id
        last = ci
        for j in range(ci, len(cs)):
            if cs[j].kind_id != want:
                continue
            stop = j
            while stop > last and stop > ci and not cs[stop - 1].is_named:
                stop -= 1
            if stop > ci:
                yield stop
                if stop != j:
                    yield j
            last = j + 1
        yield len(cs)

    def _node(self, p: PNode, n: Any, env: Env, trail: list[str]) -> bool:
        self._steps += 1
        if self._steps > self.budget:
            raise BudgetExceeded
        meta = p.meta
        if meta is not None:
            if meta.kind == SINGLE and not n.is_named:
                return False
            return self._bind(meta.name, (n,), env, trail, multi=False)
        if p.kind_id != n.kind_id:
            return False
        ps = p.children
        if not ps:
            return not p.named or n.text == p.text
        cs = significant(n)
        wrapper = self._plans[id(ps)].wrapper
        if wrapper is not None:
            opener, closer, name = wrapper
            run = bracketed_run(cs, opener, closer)
            if run is not None:
                return self._bind(name, run, env, trail, multi=True)
        return self._seq(ps, 0, cs, 0, env, trail, anchored=True) >= 0

    def _bind(
        self, name: str, nodes: tuple[Any, ...], env: Env, trail: list[str], *, multi: bool
    ) -> bool:
        if not name or name.startswith("_"):
            return True
        bound = env.get(name)
        if bound is None:
            env[name] = nodes
            trail.append(name)
            return True
        if not multi and len(bound) == 1 and len(nodes) == 1:
            return nodes_equal(bound[0], nodes[0])
        return captures_equal(bound, nodes)

    @staticmethod
    def _undo(env: Env, trail: list[str], mark: int) -> None:
        while len(trail) > mark:
            env.pop(trail.pop(), None)

    def _seq(
        self,
        ps: tuple[PNode, ...],
        pi: int,
        cs: list[Any],
        ci: int,
        env: Env,
        trail: list[str],
        anchored: bool,
    ) -> int:
        """Match ps[pi:] against cs[ci:]; the index after the last consumed child, or -1.
        `anchored`: every remaining named code child must be consumed."""
        plan = self._plans[id(ps)]
        while True:
            self._steps += 1
            if self._steps > self.budget:
                raise BudgetExceeded
            if pi == len(ps):
                if anchored:
                    return len(cs) if all(not c.is_named for c in cs[ci:]) else -1
                return ci
            p = ps[pi]
            meta = p.meta
            if meta is not None and meta.kind == MULTI:
                for stop in self._stops(ps, pi, cs, ci):
                    mark = len(trail)
                    if self._bind(meta.name, tuple(cs[ci:stop]), env, trail, multi=True):
                        end = self._seq(ps, pi + 1, cs, stop, env, trail, anchored)
                        if end >= 0:
                            return end
                        after = plan.after[pi]
                        if stop == ci and after > pi + 1:  # `f($$$A, x)` on `f(x)`
                            end = self._seq(ps, after, cs, stop, env, trail, anchored)
                            if end >= 0:
                                return end
                    self._undo(env, trail, mark)
                return -1
            if plan.sep_multi[pi]:  # `g(x, $$$A)` on `g(x)`: try it empty
                mark = len(trail)
                multi = ps[pi + 1].meta
                assert multi is not None
                if self._bind(multi.name, (), env, trail, multi=True):
                    end = self._seq(ps, pi + 2, cs, ci, env, trail, anchored)
                    if end >= 0:
                        return end
                self._undo(env, trail, mark)
            optional = plan.optional[pi]
            if ci == len(cs):
                if optional:
                    pi += 1
                    continue
                return -1
            c = cs[ci]
            mark = len(trail)
            if meta is not None and meta.kind == SINGLE and self._chain:
                stop = self._chain_end(cs, ci)
                if stop > ci + 1:  # `$X` over `f` `(x)`: one expression stored as siblings
                    for k in range(stop, ci, -1):
                        if self._bind(meta.name, tuple(cs[ci:k]), env, trail, multi=False):
                            end = self._seq(ps, pi + 1, cs, k, env, trail, anchored)
                            if end >= 0:
                                return end
                        self._undo(env, trail, mark)
                    return -1
            if self._node(p, c, env, trail):
                if meta is None or meta.kind != ANY:  # no other way to use this code node
                    pi += 1
                    ci += 1
                    continue
                end = self._seq(ps, pi + 1, cs, ci + 1, env, trail, anchored)
                if end >= 0:
                    return end
                self._undo(env, trail, mark)
            if optional:  # a trailing pattern comma the code does not have
                end = self._seq(ps, pi + 1, cs, ci, env, trail, anchored)
                if end >= 0:
                    return end
            if c.is_named or meta is not None or p.children or (not anchored and ci == self._lead):
                return -1  # only a pattern token lets an unnamed code token be skipped, and
                # never the first of a run: a match starts with what the pattern starts with
            ci += 1  # an unnamed code token the pattern does not name (`async`, a comma)


_CLOSERS = frozenset({")", "]", "}", ">"})


def trailing_comma(ps: tuple[PNode, ...], pi: int) -> bool:
    """A pattern `,` followed only by closing brackets: optional, like trailing commas in code."""
    p = ps[pi]
    if p.named or p.meta is not None or p.kind != ",":
        return False
    return all(not q.named and q.meta is None and q.kind in _CLOSERS for q in ps[pi + 1 :])


_SEPARATORS = frozenset({",", ";"})


def _separators_after(ps: tuple[PNode, ...], pi: int) -> int:
    """The index past the unnamed pattern tokens that follow ps[pi] (a `$$$`)."""
    j = pi + 1
    while j < len(ps) and ps[j].meta is None and not ps[j].named and not ps[j].children:
        j += 1
    return j


def bracketed_run(cs: list[Any], opener: int, closer: int) -> tuple[Any, ...] | None:
    """What `open $$$NAME close` binds among significant children `cs`: the run up to the last
    named child (unnamed tokens after it are skipped), as `_seq` would, without trying every
    stop; None when the brackets are not at the ends or a closer sits inside (then `_seq`)."""
    if len(cs) < 2 or cs[0].kind_id != opener or cs[-1].kind_id != closer:
        return None
    inner = cs[1:-1]
    if any(c.kind_id == closer for c in inner):
        return None
    stop = len(inner)
    while stop and not inner[stop - 1].is_named:
        stop -= 1
    return tuple(inner[:stop])


def name_counts(nodes: tuple[PNode, ...]) -> dict[str, int]:
    """How often each metavariable name occurs in a pattern."""
    counts: dict[str, int] = {}
    stack = list(nodes)
    while stack:
        p = stack.pop()
        if p.meta is not None:
            counts[p.meta.name] = counts.get(p.meta.name, 0) + 1
        stack.extend(p.children)
    return counts


def wrapper_of(ps: tuple[PNode, ...], counts: dict[str, int]) -> tuple[int, int, str] | None:
    """(opener, closer, name) when `ps` is `open $$$NAME close` with plain distinct bracket
    tokens and a name used once in the pattern (so nothing to compare it with)."""
    if len(ps) != 3:
        return None
    first, multi, last = ps
    meta = multi.meta
    if meta is None or meta.kind != MULTI or (meta.binds and counts.get(meta.name, 0) != 1):
        return None
    for tok in (first, last):
        if tok.meta is not None or tok.named or tok.children or tok.kind in _SEPARATORS:
            return None
    if first.kind_id == last.kind_id:
        return None
    return first.kind_id, last.kind_id, meta.name


def _separator_before_multi(ps: tuple[PNode, ...], pi: int) -> bool:
    p = ps[pi]
    if p.meta is not None or p.named or p.kind not in _SEPARATORS or pi + 1 >= len(ps):
        return False
    nxt = ps[pi + 1].meta
    return nxt is not None and nxt.kind == MULTI


def trimmed_end(root: PNode, node: Any) -> int:
    """Where a match of `root` at `node` ends: before the code's `;` where the pattern's
    `;` is implicit (the context's, see PNode.implicit), also inside its last child."""
    p, n = root, node
    while p.children and not p.implicit:
        cs = significant(n)
        if not cs:
            return node.end_byte
        if p.children[-1].implicit:
            if len(cs) > 1 and cs[-1].kind_id == p.children[-1].kind_id:
                return cs[-2].end_byte
            return node.end_byte
        p, n = p.children[-1], cs[-1]
    return node.end_byte
