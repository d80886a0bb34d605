"""Per-file work, the same in a worker process and in the calling process: read, skip files that
cannot contain a match before parsing them, parse (cached by path + mtime + size), find
candidates, match, and for rewrites splice, re-parse and check.

Candidates come from the pattern's rarest-looking literal (its longest token): every match
contains that text, so only the ancestors of its occurrences are tried, and a warm query on
cached trees costs a few lookups instead of a walk. Without a rare literal, the candidates are
the tree's nodes of the pattern's root kind (one C query, kept with the cached tree for later
searches), judged by the pattern's compiled checks (query_plan) or by the matcher.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from . import query_plan, rewrite, syntax_check
from .languages import Loaded, load
from .matcher import BudgetExceeded, Env, Found, Matcher, outer_first, trimmed_end
from .pattern import Pattern
from .reading import read_regular

BINARY_PROBE = 8000
TEXT_CAP = 2000
BINDING_CAP = 400


@dataclass(frozen=True)
class FileJob:
    path: str  # absolute
    rel: str
    mtime_ns: int
    size: int


# A match as the tool's data shows it: {file, line, end_line, text, bindings, language}. Built
# here, in the worker, because a search may return 500k of them: the host only joins lists.
MatchRow = dict[str, object]


@dataclass
class FileOutcome:
    rel: str
    status: str = "ok"  # ok | no-literal | binary | unreadable
    matches: list[MatchRow] = field(default_factory=list)
    spans: array[int] = field(default_factory=lambda: array("q"))  # start, end byte per match
    more: bool = False  # stopped at the limit inside this file
    not_utf8: bool = False
    note: str = ""

    def to_wire(self) -> tuple[Any, ...]:
        """Plain data for marshal (see worker)."""
        spans = self.spans.tobytes()
        return (self.rel, self.status, self.matches, spans, self.more, self.not_utf8, self.note)

    @classmethod
    def from_wire(cls, t: tuple[Any, ...]) -> FileOutcome:
        rel, status, matches, spans, more, not_utf8, note = t
        outcome = cls(rel, status, matches, array("q"), more, not_utf8, note)
        outcome.spans.frombytes(spans)
        return outcome


@dataclass
class FileRewrite:
    rel: str
    status: str = "ok"  # ok | no-literal | binary | unreadable | not-utf8 | syntax | range
    count: int = 0
    new: bytes | None = None
    original_sha: str = ""
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why)
    note: str = ""


# Node lists kept per cached tree, one per (grammar, root kind) a search asked for: ~73 bytes a
# node; four kinds over stdlib+pandas add 7-13% to a worker's RSS (0.85 GB of trees).
KINDS_PER_TREE = 6
KIND_NODE_BYTES = 73
# What a parsed tree holds per node (RSS over node count, one process: Java 94, TypeScript 103,
# Python 121, Rust 127 bytes). Per source byte it varies threefold (10x Java, 31x Rust), so the
# cache counts nodes, which tree-sitter knows in O(1).
NODE_BYTES = 110
CACHE_BYTES = 1 << 30

Kinds = dict[tuple[str, str, bool], list[Any]]  # (grammar, kind, named) -> nodes, document order


@dataclass
class _Entry:
    mtime_ns: int
    size: int
    data: bytes
    trees: dict[str, Any] = field(default_factory=dict)
    kinds: Kinds = field(default_factory=dict)
    weight: int = 0  # estimated bytes: source, trees, kept node lists


class Engine:
    """One per process. Keeps parsed trees of recent files, bounded by an estimate of the memory
    they hold (source, tree nodes, kept node lists)."""

    def __init__(self, cache_bytes: int = CACHE_BYTES) -> None:
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._held = 0
        self.stats = {"parsed": 0, "cached": 0}
        # Set by the caller of an in-process search that was cancelled (a timeout): the thread
        # cannot be interrupted, so it stops at the next file instead of holding the engine.
        self.stop: threading.Event | None = None

    # -- cache -------------------------------------------------------------------------------

    def _entry(self, job: FileJob, fresh: bool = False) -> _Entry:
        entry = self._cache.get(job.path)
        if entry is not None and entry.mtime_ns == job.mtime_ns and entry.size == job.size:
            self._cache.move_to_end(job.path)
            if not fresh:
                return entry
            data = read_regular(job.path, job.size)
            if data == entry.data:
                return entry
        else:
            data = read_regular(job.path, job.size)
        self._drop(job.path)
        entry = _Entry(job.mtime_ns, job.size, data)
        self._cache[job.path] = entry
        self._charge(entry, len(data))
        return entry

    def _charge(self, entry: _Entry, weight: int) -> None:
        """Count `weight` more bytes for `entry` (the newest), then drop the least recently
        used others while over the budget."""
        entry.weight += weight
        self._held += weight
        while self._held > self.cache_bytes and len(self._cache) > 1:
            self._drop(next(iter(self._cache)))

    def _drop(self, path: str) -> None:
        old = self._cache.pop(path, None)
        if old is not None:
            self._held -= old.weight

    @property
    def held(self) -> int:
        return self._held

    def _tree(self, entry: _Entry, loaded: Loaded) -> Any:
        tree = entry.trees.get(loaded.id)
        if tree is None:
            tree = entry.trees[loaded.id] = loaded.parse(entry.data)
            self.stats["parsed"] += 1
            self._charge(entry, tree.root_node.descendant_count * NODE_BYTES)
        else:
            self.stats["cached"] += 1
        return tree

    def _find_on(
        self, entry: _Entry, tree: Any, pattern: Pattern, loaded: Loaded, ends_only: bool
    ) -> Iterable[Found]:
        """`find` on a cached tree, charging the entry for node lists it keeps or lets go."""
        before = sum(map(len, entry.kinds.values()))
        found = find(tree, entry.data, pattern, loaded, ends_only, kinds=entry.kinds)
        self._charge(entry, (sum(map(len, entry.kinds.values())) - before) * KIND_NODE_BYTES)
        return found

    # -- search ------------------------------------------------------------------------------

    def search(
        self, jobs: list[FileJob], pattern: Pattern, loader: Callable[[], Any], limit: int
    ) -> list[FileOutcome]:
        """Matches per file, in file order; stops once `limit` matches were found (0 = all)."""
        loaded = load(pattern.grammar, loader)
        out: list[FileOutcome] = []
        found = 0
        for job in jobs:
            if self.stop is not None and self.stop.is_set():
                break
            room = limit - found if limit else 0
            outcome = self._search_file(job, pattern, loaded, room)
            out.append(outcome)
            found += len(outcome.matches)
            if limit and found >= limit:
                break
        return out

    def _prepare(self, job: FileJob, pattern: Pattern, fresh: bool = False) -> _Entry | str:
        try:
            entry = self._entry(job, fresh)
        except OSError as exc:
            return f"unreadable: {exc.strerror or exc}"
        if b"\x00" in entry.data[:BINARY_PROBE]:
            return "binary"
        if not all(token in entry.data for token in pattern.tokens):
            return "no-literal"
        return entry

    def _search_file(
        self, job: FileJob, pattern: Pattern, loaded: Loaded, room: int
    ) -> FileOutcome:
        prepared = self._prepare(job, pattern)
        if isinstance(prepared, str):
            status, _, note = prepared.partition(": ")
            return FileOutcome(job.rel, status=status, note=note)
        data = prepared.data
        outcome = FileOutcome(job.rel, not_utf8=not _is_utf8(data))
        tree = self._tree(prepared, loaded)
        matches, spans = outcome.matches, outcome.spans
        rel, language, names = job.rel, loaded.id, pattern.names
        # Text by slicing a str of the whole file when it is ASCII (most source files: byte
        # offsets are character offsets), else by decoding each byte range.
        source = data.decode("ascii") if data.isascii() else None
        # Lines by counting newlines from the previous match (matches come in document order),
        # cheaper than a Point object per node; tree-sitter's rows count "\n" the same way.
        pos, line = 0, 1
        broken = tree.root_node.has_error
        try:
            for start, end, _, env in self._find_on(prepared, tree, pattern, loaded, True):
                if room and len(matches) >= room:
                    outcome.more = True
                    break
                if start < pos:  # not expected; count from the top again
                    pos, line = 0, 1
                line += data.count(b"\n", pos, start)
                pos = start
                if source is not None:
                    text = source[start:end]
                else:
                    text = data[start:end].decode("utf-8", "replace")
                end_line = line + text.count("\n")
                if len(text) > TEXT_CAP:
                    text = _capped(text, TEXT_CAP)
                bindings = {}
                for name in names:  # in the pattern's order, however they were bound
                    nodes = env.get(name)
                    if nodes is None:
                        continue
                    if not nodes:
                        value = ""
                    elif source is not None:
                        value = source[nodes[0].start_byte : nodes[-1].end_byte]
                    else:
                        a, b = nodes[0].start_byte, nodes[-1].end_byte
                        value = data[a:b].decode("utf-8", "replace")
                    bindings[name] = value if len(value) <= BINDING_CAP else _capped(value)
                match = {
                    "file": rel,
                    "line": line,
                    "end_line": end_line,
                    "text": text,
                    "bindings": bindings,
                    "language": language,
                }
                if broken and spans_error(tree.root_node, start, end):
                    match["unparsed_code"] = True  # the matcher skipped an ERROR inside it
                matches.append(match)
                spans.append(start)
                spans.append(end)
        except BudgetExceeded:
            outcome.note = "matching gave up on a candidate (too much $$$ backtracking)"
        return outcome

    # -- rewrite -----------------------------------------------------------------------------

    def rewrite(
        self, jobs: list[FileJob], pattern: Pattern, loader: Callable[[], Any], template: str
    ) -> list[FileRewrite]:
        loaded = load(pattern.grammar, loader)
        out = []
        for job in jobs:
            if self.stop is not None and self.stop.is_set():
                break
            out.append(self._rewrite_file(job, pattern, loaded, template))
        return out

    def _rewrite_file(
        self, job: FileJob, pattern: Pattern, loaded: Loaded, template: str
    ) -> FileRewrite:
        prepared = self._prepare(job, pattern, fresh=True)
        if isinstance(prepared, str):
            status, _, note = prepared.partition(": ")
            return FileRewrite(job.rel, status=status, note=note)
        data = prepared.data
        result = FileRewrite(job.rel, original_sha=hashlib.sha256(data).hexdigest())
        if not _is_utf8(data):
            result.status = "not-utf8"
            return result
        tree = self._tree(prepared, loaded)
        found = []
        try:
            found = list(self._find_on(prepared, tree, pattern, loaded, False))
        except BudgetExceeded:
            result.note = "matching gave up on a candidate (too much $$$ backtracking)"
        kept: list[tuple[int, int, Env]] = []
        broken = tree.root_node.has_error
        for start, end, first, env in found:
            if kept and start < kept[-1][1]:
                why = "nested" if end <= kept[-1][1] else "overlapping"
                result.skipped.append((first.start_point[0] + 1, why))
                continue
            if broken and spans_error(tree.root_node, start, end):
                result.skipped.append((first.start_point[0] + 1, UNPARSED))
                continue
            problem = rewrite.range_problem(pattern, start, end, first)
            if problem:  # never replace what the pattern did not match: refuse the file
                result.status, result.note = "range", problem
                return result
            kept.append((start, end, env))
        if not kept:
            return result
        pieces: list[bytes] = []
        edits: list[syntax_check.Edit] = []
        pos = 0
        for start, end, env in kept:
            text = rewrite.render(template, env, data, start, end, tree.root_node).encode()
            if not text:
                start, end = _whole_lines(data, start, end)
            pieces.append(data[pos:start])
            pieces.append(text)
            edits.append((start, end, len(text)))
            pos = end
        pieces.append(data[pos:])
        new = b"".join(pieces)
        result.count = len(kept)
        after = loaded.parse(new)
        problem = syntax_check.new_error(pattern.grammar, tree, after, data, new, edits)
        if problem:
            result.status = "syntax"
            result.note = problem
            return result
        result.new = new
        return result


UNPARSED = "spans code that does not parse"


def spans_error(root: Any, start: int, end: int) -> bool:
    """Whether [start, end) holds an ERROR or MISSING node: the matcher skips one like trivia
    (an unknown macro in `if FMT_CONSTEXPR20 (x)`), so such a match is not clean code."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end or not node.has_error:
            continue
        if node.is_error or node.is_missing:
            return True
        stack.extend(node.children)
    return False


def _is_utf8(data: bytes) -> bool:
    if data.isascii():  # most source files; no copy of the whole file as a str
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _whole_lines(data: bytes, start: int, end: int) -> tuple[int, int]:
    """Grow a deleted range to its whole lines when nothing else is on them."""
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end
    if data[line_start:start].strip() or data[end:line_end].strip():
        return start, end
    return line_start, min(line_end + 1, len(data))


def _capped(text: str, cap: int = BINDING_CAP) -> str:
    return text[:cap] + f"… ({len(text) - cap} more characters)"


# -- candidates --------------------------------------------------------------------------------


def find(
    tree: Any,
    data: bytes,
    pattern: Pattern,
    loaded: Loaded,
    ends_only: bool = False,
    kinds: Kinds | None = None,
) -> Iterable[Found]:
    """Matches in document order (outer before inner). `ends_only`: a `$$$` binding may hold
    just its first and last node (a search needs its text; a rewrite needs every node).
    `kinds`: the node lists kept with this tree, which a search of the same root kind reuses."""
    found = _find(tree, data, pattern, loaded, ends_only, kinds)
    if pattern.trim_kind is None:
        return found
    root = pattern.root
    # A statement whose `;` the context supplied ends before the code's `;`.
    return ((s, trimmed_end(root, n), n, env) for s, _, n, env in found)


def _find(
    tree: Any, data: bytes, pattern: Pattern, loaded: Loaded, ends_only: bool, kinds: Kinds | None
) -> Iterable[Found]:
    matcher = Matcher(pattern)
    if pattern.is_sequence:
        return _runs(tree, data, pattern, loaded, matcher)
    root = pattern.root
    anchors = _anchor_nodes(tree, data, _literal(pattern)) if root.meta is None else None
    if anchors is None and root.meta is None:
        plan = query_plan.plan_for(pattern)
        # A tree with syntax errors goes to the matcher: there a metavariable may stand for an
        # ERROR node.
        if plan is not None and not tree.root_node.has_error:
            roots = _of_kind(tree, loaded, root.kind, root.named, kinds)
            if roots is not None:
                return query_plan.run(plan, roots, matcher, ends_only)
    candidates, ordered = _candidates(tree, pattern, loaded, anchors, kinds)
    if ordered:  # a query or a walk: document order, each node once
        return _each(candidates, matcher)
    results: list[Found] = []
    seen: set[tuple[int, int]] = set()
    for node in candidates:
        key = (node.start_byte, node.end_byte)
        if key in seen:
            continue
        env = matcher.at(node)
        if env is not None:
            seen.add(key)
            results.append((key[0], key[1], node, env))
    results.sort(key=outer_first)
    return results


def _each(candidates: Iterable[Any], matcher: Matcher) -> Iterator[Found]:
    for node in candidates:
        env = matcher.at(node)
        if env is not None:
            yield node.start_byte, node.end_byte, node, env


def _runs(
    tree: Any, data: bytes, pattern: Pattern, loaded: Loaded, matcher: Matcher
) -> list[Found]:
    results: list[Found] = []
    seen: set[tuple[int, int]] = set()
    for parent in _parents(tree, data, pattern, loaded):
        for first, last, env in matcher.runs(parent):
            key = (first.start_byte, last.end_byte)
            if key not in seen:
                seen.add(key)
                results.append((key[0], key[1], first, env))
    results.sort(key=outer_first)
    return results


def _of_kind(
    tree: Any, loaded: Loaded, kind: str, named: bool, kinds: Kinds | None
) -> list[Any] | None:
    """The tree's nodes of one kind in document order (outer first), from one C query that
    visits every node (~125 ns each), kept in `kinds` for the next search; None when the
    grammar refuses the query. Callers never change the list."""
    key = (loaded.id, kind, named)
    nodes = kinds.get(key) if kinds is not None else None
    if nodes is not None:
        return nodes
    query = loaded.query(_kind_query(kind, named))
    if query is None:
        return None
    from tree_sitter import QueryCursor

    nodes = QueryCursor(query).captures(tree.root_node).get("c", [])
    # Document order, an enclosing node first: two stable sorts on C key functions.
    nodes.sort(key=attrgetter("end_byte"), reverse=True)
    nodes.sort(key=attrgetter("start_byte"))
    if kinds is not None:
        if len(kinds) >= KINDS_PER_TREE:
            del kinds[next(iter(kinds))]
        kinds[key] = nodes
    return nodes


def _literal(pattern: Pattern) -> bytes:
    """The text to anchor candidates on: the longest literal, or an operator (`$A == $A`)."""
    literal = pattern.tokens or pattern.operators
    return literal[0] if literal else b""


def _anchor_nodes(tree: Any, data: bytes, token: bytes) -> Iterator[Any] | None:
    """Nodes at each occurrence of `token`, or None when it is too frequent to be worth it."""
    if not token:
        return None
    positions = []
    pos = data.find(token)
    cap = max(64, len(data) // 256)
    while pos >= 0:
        positions.append(pos)
        if len(positions) > cap:
            return None
        pos = data.find(token, pos + 1)
    root = tree.root_node
    return (root.descendant_for_byte_range(p, p + len(token)) for p in positions)


def _ancestors(node: Any) -> Iterator[Any]:
    while node is not None:
        yield node
        node = node.parent


def _candidates(
    tree: Any, pattern: Pattern, loaded: Loaded, anchors: Iterator[Any] | None, kinds: Kinds | None
) -> tuple[Iterable[Any], bool]:
    """Nodes the pattern's root may match, and whether they come in document order."""
    root = pattern.root
    if root.meta is not None:
        return _walk(tree.root_node, named_only=root.meta.kind != 2), True
    if anchors is not None:
        return _anchored(anchors, root.kind_id), False
    found = _of_kind(tree, loaded, root.kind, root.named, kinds)
    if found is None:
        walk = (n for n in _walk(tree.root_node, False) if n.kind_id == root.kind_id)
        return walk, True
    return found, True


def _anchored(anchors: Iterator[Any], kind_id: int) -> Iterator[Any]:
    visited: set[int] = set()
    for node in anchors:
        for up in _ancestors(node):
            if up.id in visited:
                break
            visited.add(up.id)
            if up.kind_id == kind_id:
                yield up


def _parents(tree: Any, data: bytes, pattern: Pattern, loaded: Loaded) -> Iterator[Any]:
    """Nodes whose children may hold a run matching a sibling-run pattern."""
    anchors = _anchor_nodes(tree, data, pattern.tokens[0]) if pattern.tokens else None
    seen: set[int] = set()
    if anchors is not None:
        for node in anchors:
            for up in _ancestors(node):
                if up.id in seen:
                    break
                seen.add(up.id)
                yield up
        return
    size = len(pattern.nodes)
    for node in _walk(tree.root_node, False):
        if node.child_count >= size:
            yield node


def _kind_query(kind: str, named: bool) -> str:
    if named:
        return f"({kind}) @c"
    escaped = kind.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}" @c'


def _walk(root: Any, named_only: bool) -> Iterator[Any]:
    cursor = root.walk()
    while True:
        node = cursor.node
        if node is not None and (node.is_named or not named_only) and not node.is_extra:
            yield node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
