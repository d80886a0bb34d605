"""The whole-pattern query path against the matcher alone: the same matches, spans and bindings
on real code, for the patterns it compiles and for the cases its checks hand back to the matcher
(comments among children, trailing commas, repeated metavariables, error recovery)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import pytest

from livetools_astgrep import query_plan
from livetools_astgrep.engine import Engine
from tests.astgrep.oracle import compile_pattern, grammars, jobs_for, spans_of
from tests.astgrep.test_differential import corpus

Row = tuple[str, int, int, str]  # file, start byte, end byte, bindings

COMPILED = {
    "python": [
        "$F($$$ARGS)",
        "$F($A)",
        "$F($A, $B)",
        "$F()",
        "$A + $B",
        "$A == $A",
        "$X.$Y",
        "$X.$Y($$$)",
        "self.$M($$$A)",
        "[$$$A]",
        "($A, $B)",
        "{$$$}",
        "$D[$K]",
        "$A if $B else $C",
        "$X = $Y",
        "$F($A)($B)",
        "$F(*$A)",
        "$F(**$K)",
        "$_F($$$_A)",
        "$F($$$)",
        "$X.$_",
    ],
    "javascript": ["$F($$$ARGS)", "$A && $B", "$X.$Y", "[$$$A]", "$A === $B", "$X = $Y"],
    "go": ["$F($$$A)", "$A == $B", "$X.$Y($$$)"],
    "c": ["$F($$$A)", "$A == $B", "$X->$Y"],
    "rust": ["$F($$$A)", "$X.$Y($$$)", "$A == $A"],
    "java": ["$X.$Y($$$A)", "$A == $B", "new $C($$$)"],
}

MATCHER_ONLY = {"python": ["f($$$A, x)", "$$A", "$F($$$A, $B)", "$F($$$A)($$$A)"]}

_ENGINE = Engine(cache_bytes=256 << 20)


def _rows(lang: str, pattern: str, files: list[Path]) -> list[Row]:
    p = compile_pattern(lang, pattern)
    found = _ENGINE.search(jobs_for(files), p, grammars()[lang].loader, 0)
    rows = []
    for o in found:
        for (start, end), m in zip(spans_of(o), o.matches, strict=True):
            rows.append((o.rel, start, end, repr(m["bindings"])))
    return rows


def _both(lang: str, pattern: str, files: list[Path], monkeypatch) -> tuple[list, list]:
    fast = _rows(lang, pattern, files)
    with monkeypatch.context() as m:
        m.setattr(query_plan, "plan_for", lambda _pattern: None)
        slow = _rows(lang, pattern, files)
    return fast, slow


CASES = [(lang, p) for lang, patterns in COMPILED.items() for p in patterns]


@pytest.mark.parametrize(("lang", "pattern"), CASES)
def test_query_path_equals_the_matcher_on_real_code(lang, pattern, monkeypatch):
    assert query_plan.plan_for(compile_pattern(lang, pattern)) is not None
    fast, slow = _both(lang, pattern, corpus(lang), monkeypatch)
    assert fast, f"the corpus should hold matches of {pattern!r}"
    assert fast == slow


@pytest.mark.parametrize(
    ("lang", "pattern"), [(lang, p) for lang, ps in MATCHER_ONLY.items() for p in ps]
)
def test_patterns_that_need_backtracking_have_no_query(lang, pattern):
    assert query_plan.plan_for(compile_pattern(lang, pattern)) is None


EDGES = """\
f(a, # between
  b)
f(  # leading
  a)
f(a,  # trailing
)
f(a,)
f()
g(x)(y)
h(h)
h(k)
h(h,)
print(a, (b), [c],)
x = [1, 2,  # c
     3]
"""


@pytest.mark.parametrize("pattern", ["$F($$$ARGS)", "$F($A)", "$A($A)", "[$$$A]", "$F($A, $B)"])
def test_edge_cases_go_back_to_the_matcher_and_agree(tmp_path, pattern, monkeypatch):
    path = tmp_path / "edges.py"
    path.write_text(EDGES)
    fast, slow = _both("python", pattern, [path], monkeypatch)
    assert fast == slow and fast


def test_bindings_of_a_bracketed_run(tmp_path):
    path = tmp_path / "edges.py"
    path.write_text(EDGES)
    p = compile_pattern("python", "$F($$$ARGS)")
    found = _ENGINE.search(jobs_for([path]), p, grammars()["python"].loader, 0)
    args = [cast(dict, m["bindings"])["ARGS"] for m in found[0].matches]
    # comments at the edges are not part of the run; a trailing comma is not either
    assert args[:7] == ["a, # between\n  b", "a", "a", "a", "", "y", "x"]  # g(x)(y): outer first


def test_error_recovery_agrees(tmp_path, monkeypatch):
    path = tmp_path / "broken.py"
    path.write_text("f(a\ng(b, c)\nx = [1, 2\n")
    for pattern in ("$F($$$ARGS)", "[$$$A]", "$F($A)"):
        fast, slow = _both("python", pattern, [path], monkeypatch)
        assert fast == slow


def test_a_warm_search_reuses_the_nodes_of_its_root_kind(tmp_path, monkeypatch):
    """The nodes of a root kind are kept with the cached tree: a later search of any pattern
    with that root kind runs no query over the tree and finds what a fresh engine finds; an
    edited file is searched afresh."""
    import tree_sitter

    path = tmp_path / "m.py"
    path.write_text(EDGES)
    loader = grammars()["python"].loader
    engine = Engine()

    def rows(e: Engine, pattern: str) -> list[list]:
        return [
            o.matches
            for o in e.search(jobs_for([path]), compile_pattern("python", pattern), loader, 0)
        ]

    rows(engine, "$F($$$ARGS)")
    queries: list[object] = []
    real = tree_sitter.QueryCursor
    monkeypatch.setattr(tree_sitter, "QueryCursor", lambda q: queries.append(q) or real(q))
    warm = rows(engine, "$F($A)")
    assert not queries
    assert warm == rows(Engine(), "$F($A)") and warm[0]
    stat = path.stat()
    path.write_text(EDGES + "late(1)\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    edited = rows(engine, "$F($A)")
    assert queries and edited[0][-1]["text"] == "late(1)"
