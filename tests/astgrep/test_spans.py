"""A match is exactly what the pattern matched (issue 13 §1): the compiled pattern is the whole
fragment, never a suffix; a match's range is exactly the code nodes matched; a rewrite changes
exactly those ranges, and ast_edit refuses a range that is not. The repros run against the
ast-grep CLI where it answers; the properties run over every tuned grammar on the real corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from livetools_astgrep.engine import Engine, find
from livetools_astgrep.languages import load
from livetools_astgrep.pattern import PatternError, _place
from livetools_astgrep.rewrite import line_indent, range_problem
from tests.astgrep.oracle import (
    cli_in_code,
    compile_pattern,
    grammars,
    jobs_for,
    ours_in_code,
    spans_of,
)
from tests.astgrep.realworld import EXT_OF, corpus_files
from tests.astgrep.test_tools import host

# -- the repros ------------------------------------------------------------------------------

JAVA = 'class A { Object f() { throw new IllegalStateException("x"); } Object g() { Object o = new Object(); return new Object(); } }\n'  # noqa: E501
C = "int f(void) { h(g(1)); return g(2); }\nvoid *p(void) { q(NULL); return NULL; }\n"
KEYWORD_CASES = [
    # (lang, pattern, code, ours, cli): ours ends before the `;` the pattern did not write
    ("java", "throw new $E($$$)", JAVA, ['throw new IllegalStateException("x")'], None),
    ("java", "return new Object()", JAVA, ["return new Object()"], None),
    ("c", "return NULL", C, ["return NULL"], None),
    ("c", "return g($X)", C, ["return g(2)"], None),
    ("c", "return g($X);", C, ["return g(2);"], ["return g(2);"]),
    ("c", "#include $H", '#include <stdio.h>\n#include "a.h"\nint x;\n', None, None),
    ("c", "#define $N $V", "#define A 1\nint x; int y;\n", ["#define A 1\n"], None),
]


@pytest.mark.parametrize(("lang", "pattern", "code", "want", "cli_want"), KEYWORD_CASES)
def test_leading_keywords_are_part_of_the_pattern(tmp_path, lang, pattern, code, want, cli_want):
    ext = EXT_OF[lang]
    mine = ours_in_code(lang, pattern, code, tmp_path, ext)
    theirs = cli_in_code(lang, pattern, code, tmp_path, ext)
    if want is not None:
        assert mine == want
    # The CLI's match is the same statement; it includes the `;` the pattern left out.
    assert [t.removesuffix(";") for t in theirs] == [m.removesuffix(";") for m in mine]
    if cli_want is not None:
        assert theirs == cli_want


def test_include_with_a_metavariable_inside_the_token_is_refused():
    with pytest.raises(PatternError) as err:
        compile_pattern("cpp", "#include <$H>")
    assert "part of the token '<$H>'" in str(err.value)
    assert "#include $H" in str(err.value)


def test_cpp_access_specifier_is_a_member_not_a_label(tmp_path):
    code = "class A {\npublic:\n  int x;\nprivate:\n  int y;\n};\n"
    assert ours_in_code("cpp", "public:", code, tmp_path, ".cpp") == ["public:"]


DART = "int f(int x) {\n  if (x > 0) { return compute(x - 1); }\n  return 0;\n}\n"


def test_dart_match_does_not_include_the_token_before(tmp_path):
    assert ours_in_code("dart", "compute($A)", DART, tmp_path, ".dart") == ["compute(x - 1)"]
    code = "void f(W w) {\n  return dispose(w);\n}\n"
    assert ours_in_code("dart", "dispose($X)", code, tmp_path, ".dart") == ["dispose(w)"]


async def test_dart_rewrite_keeps_return(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.dart").write_text(DART)
    async with host().open_run(root) as run:
        staged = await run.call(
            "ast_edit", {"pattern": "compute($A)", "rewrite": "calc($A)", "language": "dart"}
        )
        assert not staged.is_error, staged.text
        assert "+  if (x > 0) { return calc(x - 1); }" in staged.text
        done = await run.call("resolve", {"edit_id": staged.data["edit_id"], "action": "accept"})
        assert not done.is_error, done.text
    assert (root / "a.dart").read_text() == DART.replace("compute(", "calc(")


def test_a_range_that_is_not_the_match_is_refused():
    """The check ast_edit runs before replacing: a range that starts before the matched node,
    or at a node of another kind, or ends inside one, is named and refused."""
    pattern = compile_pattern("dart", "compute($A)")
    g = grammars()["dart"]
    loaded = load(g.id, g.loader)
    data = DART.encode()
    tree = loaded.parse(data)
    ((start, end, first, _),) = list(find(tree, data, pattern, loaded))
    assert range_problem(pattern, start, end, first) == ""
    ret = first.prev_sibling  # the `return` token
    assert "starts with a return" in range_problem(pattern, ret.start_byte, end, ret)
    assert "does not end" in range_problem(pattern, start, end - 1, first)
    assert "starts at byte" in range_problem(pattern, start - 1, end, first)


# -- the properties over every tuned grammar --------------------------------------------------

PROPERTY_PATTERNS = {
    "python": ["$F($$$A)", "return $X", "if $C: $$$B", "self.$M($$$)", "raise $E", "@$D"],
    "typescript": ["$F($$$A)", "return $X", "throw new $E($$$)", "new $C($$$)"],
    "go": ["$F($$$A)", "return $X", "if err != nil { $$$B }", "$X := $Y"],
    "rust": ["$F($$$A)", "return $X", "let $X = $Y;", "$X.unwrap()", "$X?"],
    "java": ["$F($$$A)", "return $X", "throw new $E($$$)", "return new $T($$$)"],
    "c": ["$F($$$A)", "return $X", "return NULL", "#include $H", "#define $N $V"],
    "cpp": ["$F($$$A)", "return $X", "#include $H", "throw $E", "public:"],
    "dart": [
        *("$F($$$A)", "return $X", "await $X", "$X.$M($$$A)", "final $X = $Y;"),
        "if ($C) { $$$ }",
    ],
}
PROPERTY_CASES = [(lang, p) for lang, ps in PROPERTY_PATTERNS.items() for p in ps]
PER_PATTERN = 30  # matches re-checked per pattern (spread over the corpus)
_ENGINE = Engine(cache_bytes=256 << 20)


def _matches(lang: str, pattern: str, files: list[Path]) -> list[tuple[Path, int, int]]:
    p = compile_pattern(lang, pattern)
    found = _ENGINE.search(jobs_for(files), p, grammars()[lang].loader, 0)
    by_rel = {str(f): f for f in files}
    out = [(by_rel[o.rel], s, e) for o in found for s, e in spans_of(o)]
    if len(out) > PER_PATTERN:
        step = len(out) / PER_PATTERN
        out = [out[int(i * step)] for i in range(PER_PATTERN)]
    return out


def _own_text(data: bytes, start: int, end: int) -> str:
    """The match's text with later lines dedented by its first line's indentation, so it sits
    in a context the way it sat in its file."""
    indent = line_indent(data, start)
    lines = data[start:end].decode().split("\n")
    return "\n".join([lines[0], *(ln.removeprefix(indent) for ln in lines[1:])])


@pytest.mark.realworld
@pytest.mark.parametrize(("lang", "pattern"), PROPERTY_CASES)
def test_each_match_is_the_whole_pattern(tmp_path, lang, pattern):
    """For each match on the corpus, the pattern searched in the match's own text (in the
    context the pattern compiled in, or the first that parses the text) finds a match covering
    all of it."""
    files = corpus_files(lang)
    matches = _matches(lang, pattern, files)
    if not matches:
        pytest.skip(f"no {pattern!r} in the sampled {lang} corpus")
    compiled = compile_pattern(lang, pattern)
    g = grammars()[lang]
    loaded = load(g.id, g.loader)
    checked, unparsed = 0, 0
    for path, start, end in matches:
        text = _own_text(path.read_bytes(), start, end)
        # The context the pattern compiled in, else the first of the ladder the text parses in
        # (Dart's `if ($C) { $$$ }` needs the `;` context; the code's `if` is an error there).
        for context in (compiled.context, *g.ladder(text)):
            source, a, b = _place(context, text)
            data = source.encode()
            tree = loaded.parse(data)
            if not tree.root_node.has_error:
                break
        if tree.root_node.has_error:
            unparsed += 1  # the text alone is not valid here (a fragment of a larger construct)
            continue
        spans = {(s, e) for s, e, _, _ in find(tree, data, compiled, loaded)}
        assert (a, b) in spans, (
            f"{path.name}: {text[:160]!r} is a match of {pattern!r}, but searched alone it "
            f"gives {[data[s:e].decode()[:80] for s, e in sorted(spans)]}"
        )
        checked += 1
    assert checked >= unparsed, f"only {checked} of {len(matches)} matches could be re-parsed"


REWRITES = {
    "python": ("$F($$$A)", "$F($$$A)"),
    "typescript": ("return $X", "return $X"),
    "go": ("return $X", "return $X"),
    "rust": ("$X.unwrap()", '$X.expect("x")'),
    "java": ("return $X", "return $X"),
    "c": ("return $X", "return $X"),
    "cpp": ("return $X", "return ($X)"),
    "dart": ("$F($$$A)", "$F($$$A)"),
}


@pytest.mark.realworld
@pytest.mark.parametrize("lang", sorted(REWRITES))
def test_a_rewrite_changes_only_the_match_ranges(tmp_path, lang):
    """Every byte a rewrite changes lies inside a match range of the same pattern's search
    (a separate path: the query plan, `$$$` ends only), and every range it replaces passes the
    exact-range check."""
    pattern, template = REWRITES[lang]
    files = corpus_files(lang, 25)
    copies = []
    for i, f in enumerate(files):
        target = tmp_path / f"{i:03}_{f.name}"
        shutil.copyfile(f, target)
        copies.append(target)
    compiled = compile_pattern(lang, pattern)
    loader = grammars()[lang].loader
    jobs = jobs_for(copies)
    searched = Engine().search(jobs, compiled, loader, 0)
    ranges = {o.rel: spans_of(o) for o in searched}
    rewritten = Engine().rewrite(jobs, compiled, loader, template)
    changed = 0
    for r in rewritten:
        assert r.status != "range", r.note
        if r.new is None:
            continue
        old = Path(r.rel).read_bytes()
        outer: list[tuple[int, int]] = []
        for start, end in sorted(ranges[r.rel], key=lambda x: (x[0], -x[1])):
            if not outer or start >= outer[-1][1]:
                outer.append((start, end))
        _assert_only_ranges_changed(Path(r.rel).name, old, r.new, outer)
        changed += 1
    assert changed, f"no {lang} file was rewritten by {pattern!r}"


def _assert_only_ranges_changed(
    name: str, old: bytes, new: bytes, ranges: list[tuple[int, int]]
) -> None:
    """`new` is `old` with each range replaced by something: the code between the ranges is
    there unchanged and in order."""
    pos, prev = 0, 0
    for start, end in ranges:
        between = old[prev:start]
        at = new.find(between, pos) if prev else (0 if new.startswith(between) else -1)
        assert at >= 0, f"{name}: {between[:80]!r} (before byte {start}) changed"
        pos, prev = at + len(between), end
    tail = old[prev:]
    assert new.endswith(tail) and len(new) - len(tail) >= pos, f"{name}: the end changed"


def test_dart_seed_examples(tmp_path):
    """§2: the seed's Dart example works as written and with `;`; `$X` binds `a.b`, a call and
    a generic type that the grammar stores as sibling runs."""
    code = (
        "class A extends Base<String> {\n  void f() {\n    final y = compute(x);\n"
        "    if (a.b != null) a.b.dispose();\n    if (c != null) c.dispose();\n  }\n"
        "  int g() { return f(x); }\n}\n"
    )
    found = ours_in_code("dart", "if ($X != null) $X.dispose()", code, tmp_path, ".dart")
    assert found == ["if (a.b != null) a.b.dispose()", "if (c != null) c.dispose()"]
    found = ours_in_code("dart", "if ($X != null) $X.dispose();", code, tmp_path, ".dart")
    assert found == ["if (a.b != null) a.b.dispose();", "if (c != null) c.dispose();"]
    assert ours_in_code("dart", "return $X;", code, tmp_path, ".dart") == ["return f(x);"]
    assert ours_in_code("dart", "final $X = $Y;", code, tmp_path, ".dart") == [
        "final y = compute(x);"
    ]
    assert len(ours_in_code("dart", "class $C extends $B { $$$ }", code, tmp_path, ".dart")) == 1


JAVA_CATCH = "class A { void f() { try { g(); } catch (IOException e) { h(); } } }\n"
CPP_LAMBDA = "void f() { auto g = [&](int x) { return x; }; }\n"
GO_CASES = "package p\nfunc f() {\n\tswitch x {\n\tcase 1:\n\t\tg()\n\tcase 2:\n\t}\n}\n"
NOT_REFUSED = [
    ("typescript", "import $X from $M", "import a from 'b';\nlet x = 1;\n", ["import a from 'b';"]),
    ("java", "@Override", "class A {\n  @Override\n  String s() { return s; }\n}\n", ["@Override"]),
    ("dart", "@override", "class A {\n  @override\n  void f() {}\n}\n", ["@override"]),
    ("python", "@click.command()", "@click.command()\ndef f():\n    pass\n", ["@click.command()"]),
    ("java", "catch (IOException $E) { $$$ }", JAVA_CATCH, ["catch (IOException e) { h(); }"]),
    ("c", "else { $$$ }", "void f(void) { if (a) { b(); } else { c(); } }\n", ["else { c(); }"]),
    ("cpp", "[$$$C]($$$P) { $$$ }", CPP_LAMBDA, ["[&](int x) { return x; }"]),
    ("go", "case $X: $$$B", GO_CASES, ["case 1:\n\t\tg()\n", "case 2:"]),
]  # fmt: skip


@pytest.mark.parametrize(("lang", "pattern", "code", "want"), NOT_REFUSED)
def test_patterns_agents_type_are_not_refused(tmp_path, lang, pattern, code, want):
    """§3: what the CLI matches (or what is plainly code) compiles and finds its code."""
    assert ours_in_code(lang, pattern, code, tmp_path, EXT_OF[lang]) == want


def test_indented_block_ellipsis_does_not_take_the_else(tmp_path):
    """§3: `if $X is not None:` + `$$$B` binds the block's statements; an `if` with an `else`
    is not a match (no trailing children), as documented."""
    code = "if a is not None:\n    f(a)\nelse:\n    g()\nif b is not None:\n    h(b)\n"
    pattern = "if $X is not None:\n    $$$B"
    assert ours_in_code("python", pattern, code, tmp_path, ".py") == ["if b is not None:\n    h(b)"]


def test_unclosed_call_is_refused():
    """§3: `f($A` is not read as `f($A)`."""
    for pattern in ("f($A", "f($$$A"):
        with pytest.raises(PatternError):
            compile_pattern("python", pattern)


async def test_max_results_as_a_string_is_refused(tmp_path):
    """§3: `max_results: "5"` is a usage error naming the argument, not coerced."""
    (tmp_path / "a.py").write_text("f(x)\n")
    async with host().open_run(tmp_path) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)", "max_results": "5"})
    assert result.is_error and "max_results" in result.text


async def test_lowercase_metavariable_hint_and_cuda_files(tmp_path):
    """§3 small: the `$name` hint comes with every result of a pattern holding `$lowercase`
    (where `$name` is an identifier, it compiles); `.cu` is C++ as for the CLI."""
    (tmp_path / "a.ts").write_text("f($x);\nf(y);\n")
    (tmp_path / "k.cu").write_text("void k() { launch(1); }\n")
    async with host().open_run(tmp_path) as run:
        found = await run.call("ast_grep", {"pattern": "f($x)", "path": "a.ts"})
        cuda = await run.call("ast_grep", {"pattern": "launch($A)", "path": "k.cu"})
    assert "$x is not a metavariable" in found.text, found.text
    assert not cuda.is_error and cuda.data["matches"][0]["language"] == "cpp", cuda.text
