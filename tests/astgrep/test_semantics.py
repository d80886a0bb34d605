"""The matching contract, case by case. Where our semantics agree with ast-grep's the CLI is the
oracle (same matches); where we differ by design the difference is pinned on both sides."""

from __future__ import annotations

from typing import cast

import pytest

from livetools_astgrep.engine import Engine
from livetools_astgrep.pattern import PatternError
from tests.astgrep.agent_patterns import RULES
from tests.astgrep.oracle import (
    cli_in_code,
    cli_rule,
    compile_pattern,
    grammars,
    jobs_for,
    ours,
    ours_in_code,
    text_of,
)

EXT = {
    "python": ".py",
    "javascript": ".js",
    "typescript": ".ts",
    "go": ".go",
    "c": ".c",
    "rust": ".rs",
    "java": ".java",
    "dart": ".dart",
}

# (language, pattern, code, expected matched texts). Each also runs through the CLI: same answer.
AGREED = [
    ("python", "dispose($X)", "dispose( x )\ndispose(x,)\n", ["dispose( x )", "dispose(x,)"]),
    ("python", "dispose($X)", "dispose(\n    x,  # why\n)\n", ["dispose(\n    x,  # why\n)"]),
    ("python", "dispose($X)", 's = "dispose(x)"  # dispose(x)\n', []),
    ("python", "dispose($X)", "dispose((x))\n", ["dispose((x))"]),
    ("python", "$A == $A", "a + b == a  +  b\na == (a)\nx == y\n", ["a + b == a  +  b"]),
    ("python", "$A + $B", "total = x \\\n    + y\n", ["x \\\n    + y"]),
    ("python", "f($$$A, x)", "f(y, x)\nf(x)\n", ["f(y, x)", "f(x)"]),
    (
        "python",
        "os.path.join($$$A)",
        "os.path.join()\nos.path.join(a, *b)\n",
        ["os.path.join()", "os.path.join(a, *b)"],
    ),
    ("python", "$_F($_F)", "a(b)\n", ["a(b)"]),
    ("python", "'lib'", "x = 'lib'\ny = \"lib\"\n", ["'lib'"]),
    (
        "javascript",
        "function $F() {}",
        "async function g() {}\nfunction h() {}\n",
        ["async function g() {}", "function h() {}"],
    ),
    ("javascript", "($$$P) => $B", "const f = async (a) => 1\nconst g = (a) => 1\n", ["(a) => 1"]),
    (
        "javascript",
        "console.log($$$A)",
        "console.log('a', b)\nconsole.warn(a)\n",
        ["console.log('a', b)"],
    ),
    ("typescript", "$X as $T", "const a = b as number;\n", ["b as number"]),
    ("go", "$X := $Y", "package m\nfunc f() {\n\tx := 1\n\ty = 2\n}\n", ["x := 1"]),
    (
        "c",
        "fprintf(stderr, $$$A)",
        'void f(void) { fprintf(stderr, "%d", 1); fprintf(out, "x"); }\n',
        ['fprintf(stderr, "%d", 1)'],
    ),
    ("c", "free($P);", "void f(char *p) {\n    free(p);\n}\n", ["free(p);"]),
    ("rust", "$X.unwrap()", 'fn f() { let a = b.unwrap(); c.expect("x"); }\n', ["b.unwrap()"]),
    (
        "java",
        "System.out.println($$$A)",
        "class A { void f() { System.out.println(1); System.err.println(2); } }\n",
        ["System.out.println(1)"],
    ),
]


@pytest.mark.parametrize(("lang", "pattern", "code", "expected"), AGREED)
def test_agreed_with_cli(tmp_path, lang, pattern, code, expected):
    ext = EXT[lang]
    assert ours_in_code(lang, pattern, code, tmp_path, ext) == expected
    assert cli_in_code(lang, pattern, code, tmp_path, ext) == expected


# Silent failures of ast-grep that must work here: the CLI finds nothing, we find the call.
SILENT = [
    ("go", "fmt.Println($A)", "package m\nfunc f() {\n\tfmt.Println(x)\n}\n", ["fmt.Println(x)"]),
    ("c", "free($P)", "void f(char *p) {\n    free(p);\n}\n", ["free(p)"]),
    (
        "dart",
        "print($A)",
        "void main() {\n  print(x);\n  print('y');\n}\n",
        ["print(x)", "print('y')"],
    ),
    (
        "dart",
        "$X.dispose()",
        "void f() {\n  ctrl.dispose();\n  a.b.dispose();\n}\n",
        ["ctrl.dispose()", "a.b.dispose()"],
    ),
    (
        "typescript",
        "public $M(): void {}",
        "class A {\n  public stop(): void {}\n  public go(): number { return 1; }\n}\n",
        ["public stop(): void {}"],
    ),
]


@pytest.mark.parametrize(("lang", "pattern", "code", "expected"), SILENT)
def test_silent_failures_of_ast_grep_work(tmp_path, lang, pattern, code, expected):
    ext = EXT[lang]
    assert ours_in_code(lang, pattern, code, tmp_path, ext) == expected
    assert cli_in_code(lang, pattern, code, tmp_path, ext) == []


def test_python_else_clause_pattern(tmp_path):
    code = "if a:\n    pass\nelse:\n    x = 1\nif b:\n    pass\n"
    assert ours_in_code("python", "else: $$$B", code, tmp_path, ".py") == ["else:\n    x = 1"]
    assert compile_pattern("python", "else: $$$B").root.kind == "else_clause"


def test_dart_chain_binds_the_whole_receiver(tmp_path):
    p = compile_pattern("dart", "$X.dispose()")
    assert p.is_sequence
    code = "void f() {\n  a.b.dispose();\n}\n"
    (tmp_path / "c.dart").write_text(code)
    from tests.astgrep.oracle import _ENGINE, grammars, jobs_for

    found = _ENGINE.search(jobs_for([tmp_path / "c.dart"]), p, grammars()["dart"].loader, 0)
    assert [m["bindings"] for m in found[0].matches] == [{"X": "a.b"}]


# Deliberate differences, pinned on both sides.


def test_no_trailing_children_prefix_match(tmp_path):
    code = "if a:\n    return 1\nelse:\n    return 2\nif b:\n    return 3\n"
    mine = ours_in_code("python", "if $C: return $V", code, tmp_path, ".py")
    theirs = cli_in_code("python", "if $C: return $V", code, tmp_path, ".py")
    assert mine == ["if b:\n    return 3"]
    assert len(theirs) == 2  # ast-grep also matches the if that has an else
    spelled = ours_in_code("python", "if $C: return $V\nelse: $$$E", code, tmp_path, ".py")
    assert spelled == ["if a:\n    return 1\nelse:\n    return 2"]


def test_trailing_statements_need_an_ellipsis(tmp_path):
    code = "def f():\n    a = 1\n    b = 2\n"
    assert ours_in_code("python", "def $F():\n    a = 1", code, tmp_path, ".py") == []
    assert len(cli_in_code("python", "def $F():\n    a = 1", code, tmp_path, ".py")) == 1
    assert ours_in_code("python", "def $F():\n    a = 1\n    $$$", code, tmp_path, ".py") == [
        code.rstrip("\n")
    ]


def test_ellipsis_backtracks(tmp_path):
    code = "f(x, y, x)\n"
    assert ours_in_code("python", "f($$$A, x)", code, tmp_path, ".py") == ["f(x, y, x)"]
    assert cli_in_code("python", "f($$$A, x)", code, tmp_path, ".py") == []


def test_chained_comparison_is_not_a_prefix_match(tmp_path):
    code = "x == x == 0\n"
    assert ours_in_code("python", "$A == $A", code, tmp_path, ".py") == []
    assert cli_in_code("python", "$A == $A", code, tmp_path, ".py") == ["x == x == 0"]


def test_comment_before_a_block_is_trivia(tmp_path):
    code = "if not data:  # why\n    return None\n"
    assert ours_in_code("python", "if $C: return $V", code, tmp_path, ".py") == [code.rstrip()]
    assert cli_in_code("python", "if $C: return $V", code, tmp_path, ".py") == []


def test_line_continuation_before_the_arguments_is_trivia(tmp_path):
    """Found on the stdlib corpus (`re.compile \\` + newline + `(r'...')`): ast-grep 0.51.1
    misses these calls; here a line continuation is trivia like a comment, on the query path
    (a third child sends the call to the matcher) and the matcher's alike."""
    code = "x = re.compile \\\n    (r'a')\ny = f(1)\n"
    found = ["re.compile \\\n    (r'a')", "f(1)"]
    assert ours_in_code("python", "$F($$$ARGS)", code, tmp_path, ".py") == found
    assert ours_in_code("python", "re.compile($$$A)", code, tmp_path, ".py") == found[:1]
    assert cli_in_code("python", "$F($$$ARGS)", code, tmp_path, ".py") == ["f(1)"]


def test_repeated_multi_metavariable_compares_named_nodes(tmp_path):
    code = "f(a, b) + f(a,  b)\nf(a, b) + f(a, c)\n"
    assert ours_in_code("python", "f($$$A) + f($$$A)", code, tmp_path, ".py") == [
        "f(a, b) + f(a,  b)"
    ]


def test_separator_next_to_an_empty_ellipsis_is_optional(tmp_path):
    code = "g(x)\ng(x, y)\n"
    assert ours_in_code("python", "g(x, $$$A)", code, tmp_path, ".py") == ["g(x)", "g(x, y)"]
    assert cli_in_code("python", "g(x, $$$A)", code, tmp_path, ".py") == ["g(x, y)"]


def test_trailing_comma_in_pattern_is_optional(tmp_path):
    code = "f(x)\nf(x,)\n"
    assert ours_in_code("python", "f($A,)", code, tmp_path, ".py") == ["f(x)", "f(x,)"]


def test_sequence_of_statements(tmp_path):
    code = (
        "def f():\n    a = g()\n    return a\n\n\ndef h():\n    b = g()\n    c = 1\n    return b\n"
    )
    assert ours_in_code("python", "$X = g()\nreturn $X", code, tmp_path, ".py") == [
        "a = g()\n    return a"
    ]


def test_unparseable_pattern_names_the_contexts():
    with pytest.raises(PatternError) as err:
        compile_pattern("python", "a $OP b")
    text = str(err.value)
    assert "does not parse as python" in text
    for label in ("top level", "if _: pass PATTERN", "class _: PATTERN"):
        assert label in text
    with pytest.raises(PatternError, match=r"\$name is not a metavariable"):
        compile_pattern("python", "$name(x)")
    with pytest.raises(PatternError, match="only a"):
        compile_pattern("python", "$$$A")
    with pytest.raises(PatternError, match="empty"):
        compile_pattern("go", "   ")


def test_go_pattern_outside_a_function_still_works():
    assert compile_pattern("go", "func $F() {}").root.kind == "function_declaration"
    assert compile_pattern("go", "fmt.Println($A)").root.kind == "call_expression"


def test_typescript_field_and_member_contexts():
    assert compile_pattern("typescript", "public $M(): void {}").root.kind == "method_definition"
    assert compile_pattern("typescript", "private $F: $T").root.kind == "public_field_definition"


def test_java_member_with_modifiers_is_a_field():
    assert compile_pattern("java", "private $T $F = $V;").root.kind == "field_declaration"
    assert compile_pattern("java", "$T $V = $E;").root.kind == "local_variable_declaration"


def _runs_pattern(n: int) -> str:
    return "$F(" + ", ".join(f"$$$A{i}" for i in range(n)) + ")"


@pytest.mark.parametrize("n", [2, 3, 300])
def test_many_ellipsis_runs_partition_the_arguments(tmp_path, n):
    """Adjacent `$$$` runs split the arguments between them (the earlier runs lazily empty), so
    every argument is bound exactly once; the CLI drops `"Click"` with 2 runs, skips it with 3."""
    path = tmp_path / "s.py"
    path.write_text('get_version("Click")\nf(a, b, c)\n')
    found = Engine().search(
        jobs_for([path]),
        compile_pattern("python", _runs_pattern(n)),
        grammars()["python"].loader,
        0,
    )
    bound = [
        (m["text"], {k: v for k, v in cast("dict[str, str]", m["bindings"]).items() if v})
        for o in found
        for m in o.matches
    ]
    last = f"A{n - 1}"
    assert bound == [
        ('get_version("Click")', {"F": "get_version", last: '"Click"'}),
        ("f(a, b, c)", {"F": "f", last: "a, b, c"}),
    ]
    if n <= 3:
        cli = cli_in_code("python", _runs_pattern(n), path.read_text(), tmp_path, ".py")
        assert cli == (['get_version("Click")', "f(a, b, c)"] if n == 2 else ["f(a, b, c)"])


def test_dart_import_metavariable_is_the_uri(tmp_path):
    """As written, `import $X;` is a local variable of type `import`; the string variant wins
    for a directive, so it matches real imports (the CLI finds none)."""
    code = "import 'package:flutter/material.dart';\nimport 'a.dart' as a;\n"
    assert ours_in_code("dart", "import $X;", code, tmp_path, ".dart") == [
        "import 'package:flutter/material.dart';"
    ]
    assert ours_in_code("dart", "import $X as $A;", code, tmp_path, ".dart") == [
        "import 'a.dart' as a;"
    ]
    assert cli_in_code("dart", "import $X;", code, tmp_path, ".dart") == []


DART_LOOPS = """\
void main(List<String> args) {
  for (var arg in args) {
    print(arg);
  }
  for (var x in xs) { print(x); }
  for (var x in xs) { print(y); }
  for (final w in widgets) {
    w.dispose();
    count++;
  }
  for (var i = 0; i < n; i++) {}
  if (args.isEmpty) {
    return;
  }
  if (a) { b(); } else { c(); }
  if (ready) {}
  if (x) y();
  while (queue.isNotEmpty) {
    queue.removeFirst();
  }
}
"""


@pytest.mark.parametrize(
    "pattern",
    [
        "for (var $X in $Y) { $$$ }",
        "if ($C) { $$$ }",
        "while ($C) { $$$ }",
        "for (var $X in $Y) { print($X); }",
        "if ($C) { $$$A } else { $$$B }",
    ],
)
def test_dart_ellipsis_block_is_a_block(tmp_path, pattern):
    """Dart reads `{ $$$ }` after `if (…)`/`for (…)`/`while (…)` as a set literal (the CLI's
    grammar too: its pattern is an ERROR and finds nothing); it is compiled as the block. The
    oracle is the CLI rule that says the same (agent_patterns.RULES); `$X` bound to the loop
    variable equals `$X` as the call's argument. Before an `else` the set literal would need a
    `;`, so there `{ $$$A }` is parsed as `{ $$$A; }`, the run of the block's statements."""
    path = tmp_path / "loops.dart"
    path.write_text(DART_LOOPS)
    mine = ours("dart", pattern, [path])
    assert mine == cli_rule("dart", RULES[("dart", pattern)], [path])
    texts = sorted(text_of(s) for s in mine)
    want = {
        "for (var $X in $Y) { $$$ }": 3,
        "if ($C) { $$$ }": 2,
        "while ($C) { $$$ }": 1,
        "for (var $X in $Y) { print($X); }": 2,
        "if ($C) { $$$A } else { $$$B }": 1,
    }
    assert len(texts) == want[pattern], texts
    assert cli_in_code("dart", pattern, DART_LOOPS, tmp_path, ".dart") == []


def test_dart_differences_explained(tmp_path):
    """The Dart rows of the differential suite, on a snippet: the CLI finds top-level variables
    only and we locals only; the CLI skips the *named* `abstract` node, never skipped here."""
    code = "abstract class A extends B {}\nclass C extends D {}\nvoid f() {\n  var z = 1;\n}\n"
    classes = "class $C extends $B { $$$ }"
    assert ours_in_code("dart", classes, code, tmp_path, ".dart") == ["class C extends D {}"]
    assert len(cli_in_code("dart", classes, code, tmp_path, ".dart")) == 2
    assert ours_in_code("dart", "var $X = $Y;", code, tmp_path, ".dart") == ["var z = 1;"]
    assert cli_in_code("dart", "var $X = $Y;", code, tmp_path, ".dart") == []
    top = "var x = 0;\nvoid f() {\n  var z = 1;\n}\n"  # the reverse at top level (a known gap)
    assert ours_in_code("dart", "var $X = $Y;", top, tmp_path, ".dart") == ["var z = 1;"]
    assert cli_in_code("dart", "var $X = $Y;", top, tmp_path, ".dart") == ["var x = 0;"]


def test_cpp_cast_in_a_declarations_arguments(tmp_path):
    code = "void f() {\n  detail::get_locale loc(static_cast<bool>(r), r);\n"
    code += "  g(static_cast<bool>(x));\n}\n"
    found = ["static_cast<bool>(r)", "static_cast<bool>(x)"]
    assert ours_in_code("cpp", "static_cast<$T>($X)", code, tmp_path, ".cpp") == found
    assert cli_in_code("cpp", "static_cast<$T>($X)", code, tmp_path, ".cpp") == found[1:]


CPP_GRAMMARS = """\
void f() {
  (std::max)(a, 0);
  p->operator[](0);
  it.operator*();
}
int g() {
  return lhs.x OP rhs;
}
template <typename T>
  requires std::is_scalar_v<T>
bool operator==(T rhs) { return true; }
"""


def test_cpp_differences_explained(tmp_path):
    """The C++ rows of the differential suite, on a snippet: the CLI's tree-sitter-cpp reads
    `(std::max)(…)` as a cast and has an ERROR at a member call of an operator; a macro
    parameter (`OP`) leaves a MISSING `;`, which the CLI counts as the pattern's `;`; the CLI
    binds `$D` to a requires clause and skips the declaration after it."""
    calls = ["(std::max)(a, 0)", "p->operator[](0)", "it.operator*()"]
    assert ours_in_code("cpp", "$F($$$A)", CPP_GRAMMARS, tmp_path, ".cpp") == calls
    assert cli_in_code("cpp", "$F($$$A)", CPP_GRAMMARS, tmp_path, ".cpp") == []
    assert ours_in_code("cpp", "return $X;", CPP_GRAMMARS, tmp_path, ".cpp") == ["return true;"]
    assert cli_in_code("cpp", "return $X;", CPP_GRAMMARS, tmp_path, ".cpp") == [
        "return lhs.x",
        "return true;",
    ]
    template = CPP_GRAMMARS[CPP_GRAMMARS.index("template") :].rstrip("\n")
    assert ours_in_code("cpp", "template <$$$P> $D", CPP_GRAMMARS, tmp_path, ".cpp") == []
    assert cli_in_code("cpp", "template <$$$P> $D", CPP_GRAMMARS, tmp_path, ".cpp") == [template]
    found = ours_in_code("cpp", "template <$$$P> requires $R $D", CPP_GRAMMARS, tmp_path, ".cpp")
    assert found == [template]


def test_dart_block_runs_in_chains_and_try(tmp_path):
    """`else if` and `try`/`catch` with `{ $$$ }` bodies compile as statements (as written the
    first reads as two top-level functions named `if`)."""
    code = (
        "void f() {\n  if (a) { b(); } else if (c) { d(); }\n  try { g(); } catch (e) { h(); }\n}\n"
    )
    found = ours_in_code("dart", "if ($C) { $$$A } else if ($D) { $$$B }", code, tmp_path, ".dart")
    assert found == ["if (a) { b(); } else if (c) { d(); }"]
    found = ours_in_code("dart", "try { $$$ } catch ($E) { $$$ }", code, tmp_path, ".dart")
    assert found == ["try { g(); } catch (e) { h(); }"]
