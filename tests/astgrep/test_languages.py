"""Issue 30's repros on the languages nobody tuned: each agrees with the ast-grep CLI (the
oracle), or differs on purpose and the difference is pinned on both sides."""

from __future__ import annotations

import pytest

from livetools_astgrep.table import GrammarTable
from tests.astgrep.oracle import cli_in_code, grammars, ours_in_code

KT = "fun f() {\n    list.add(1, 2)\n    val y = 3\n    assertThat(a).isEqualTo(b)\n}\n"
CS = (
    "class A {\n    async void M() {\n"
    "        var x = new B(1);\n        if (a == a) { }\n    }\n}\n"
)


# (language, extension, pattern, code, expected matched texts); the CLI answers the same.
AGREED = [
    # Kotlin: `$` is no identifier character in the bundled grammar; `µ` is (as in the CLI).
    ("kotlin", ".kt", "$X.add($$$A)", KT, ["list.add(1, 2)"]),
    ("kotlin", ".kt", "list.add($$$A)", KT, ["list.add(1, 2)"]),
    ("kotlin", ".kt", "val $X = $Y", KT, ["val y = 3"]),
    ("kotlin", ".kt", "assertThat($A).isEqualTo($B)", KT, ["assertThat(a).isEqualTo(b)"]),
    # PHP: code is text until `<?php`; patterns are read behind it.
    ("php", ".php", "count($X)", "<?php\n$n = count($a);\n", ["count($a)"]),
    ("php", ".php", "$X->$M($$$A)", "<?php\n$a->b(1);\n", ["$a->b(1)"]),
    # C# and Java expressions without `;`.
    ("csharp", ".cs", "new $C($$$)", CS, ["new B(1)"]),
    ("csharp", ".cs", "$A == $A", CS, ["a == a"]),
    ("java", ".java", "$A == $A", CS.replace("async ", ""), ["a == a"]),
    (
        "java",
        ".java",
        "new $C($$$)",
        "class A { void m() { Object o = new B(1); } }\n",
        ["new B(1)"],
    ),
    # Lua: an expression alone is no statement.
    ("lua", ".lua", "$X .. $Y", "local s = a .. b\n", ["a .. b"]),
    ("swift", ".swift", "$X.append($Y)", "func f() { a.append(1) }\n", ["a.append(1)"]),
    (
        "ruby",
        ".rb",
        "$X.each do |$Y| $$$ end",
        "a.each do |x| p x end\n",
        ["a.each do |x| p x end"],
    ),
    ("scala", ".scala", "$X.map($F)", "object A { val y = a.map(f) }\n", ["a.map(f)"]),
    ("bash", ".sh", "echo $X", "echo hi\n", ["echo hi"]),
]


@pytest.mark.parametrize(("lang", "ext", "pattern", "code", "expected"), AGREED)
def test_agrees_with_cli(tmp_path, lang, ext, pattern, code, expected):
    assert ours_in_code(lang, pattern, code, tmp_path, ext) == expected
    assert cli_in_code(lang, pattern, code, tmp_path, ext) == expected


CPP = "int f(int a) { return a; }\nint g() { return 1; }\nauto h(int a) -> int { return a; }\n"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("int $F($$$P) { $$$ }", ["int f(int a) { return a; }", "int g() { return 1; }"]),
        ("auto $F($$$P) -> $R { $$$ }", ["auto h(int a) -> int { return a; }"]),
    ],
)
def test_cpp_definitions_at_top_level(tmp_path, pattern, expected):
    """The CLI reads these as braced declarations and finds nothing; a definition is tried at
    top level before a function body can misread it."""
    assert ours_in_code("cpp", pattern, CPP, tmp_path, ".cpp") == expected
    assert cli_in_code("cpp", pattern, CPP, tmp_path, ".cpp") == []


def test_csharp_await_is_the_whole_expression(tmp_path):
    """The CLI matches only the `await` keyword (its pattern is an ERROR node); we the
    expression."""
    code = "class A {\n    async void M() {\n        await F();\n    }\n}\n"
    assert ours_in_code("csharp", "await $X", code, tmp_path, ".cs") == ["await F()"]
    assert cli_in_code("csharp", "await $X", code, tmp_path, ".cs") == ["await"]


def test_c_ifdef_compiles_and_needs_its_body_written(tmp_path):
    """`#ifdef $X` is accepted (behind an `#endif`); it matches an empty conditional only, as
    we never skip trailing children; the CLI's prefix match takes any body."""
    code = "#ifdef FOO\nint x;\n#endif\n#ifdef BAR\n#endif\n"
    assert ours_in_code("c", "#ifdef $X", code, tmp_path, ".c") == ["#ifdef BAR"]
    assert ours_in_code("c", "#ifdef $X\n$$$B\n#endif", code, tmp_path, ".c")[:1] == [
        "#ifdef FOO\nint x;\n#endif"
    ]


# Extensions the CLI maps (its extension table), each to the language the CLI reads it as.
CLI_EXTENSIONS = {
    "bash": (".bash", ".bats", ".cgi", ".command", ".fcgi", ".ksh", ".sh", ".tmux", ".zsh"),
    "c": (".c", ".h"),
    "cpp": (".cc", ".hpp", ".cpp", ".c++", ".hh", ".cxx", ".cu", ".ino"),
    "csharp": (".cs",),
    "css": (".css",),
    "elixir": (".ex", ".exs"),
    "go": (".go",),
    "haskell": (".hs",),
    "hcl": (".hcl", ".tf", ".tfvars"),
    "html": (".html", ".htm", ".xhtml"),
    "java": (".java",),
    "javascript": (".cjs", ".js", ".mjs", ".jsx"),
    "json": (".json",),
    "kotlin": (".kt", ".ktm", ".kts"),
    "lua": (".lua",),
    "nix": (".nix",),
    "php": (".php",),
    "python": (".py", ".py3", ".pyi", ".bzl"),
    "ruby": (".rb", ".rbw", ".gemspec"),
    "rust": (".rs",),
    "scala": (".scala", ".sc", ".sbt"),
    "solidity": (".sol",),
    "swift": (".swift",),
    "typescript": (".ts", ".cts", ".mts"),
    "tsx": (".tsx",),
    "yaml": (".yaml", ".yml"),
    "dart": (".dart",),
}


@pytest.mark.parametrize("lang", sorted(CLI_EXTENSIONS))
def test_extensions_as_the_cli_maps_them(lang):
    table = GrammarTable()
    for grammar in grammars().values():
        table.add(grammar)
    for ext in CLI_EXTENSIONS[lang]:
        assert table.by_ext[ext].id == lang, ext


# The CLI's metavariable character per language (its expando char).
CLI_METAVAR = {"c": "\U00010000", "cpp": "\U00010000", "css": "_", "nix": "_"}
CLI_METAVAR |= dict.fromkeys(
    ["csharp", "elixir", "go", "haskell", "hcl", "kotlin", "php", "python", "ruby", "rust"], "µ"
)
CLI_METAVAR |= {"swift": "µ"}


@pytest.mark.parametrize("lang", sorted(CLI_EXTENSIONS))
def test_metavar_character_as_the_cli(lang):
    assert grammars()[lang].metavar_char == CLI_METAVAR.get(lang, "$")


def _host():
    import livetools_astgrep.plugin
    from livetools import Host

    return Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)


async def test_empty_answer_says_the_anchor_is_there(tmp_path):
    """`add($X)` cannot match `add(1, 2)`: the answer says `add` occurs, where, and what to do,
    instead of a bare "no matches" read as "no such code"."""
    (tmp_path / "a.py").write_text("x = add(1, 2)\ny = add(3, 4)\n")
    (tmp_path / "b.py").write_text("z = add(5, 6)\n")
    async with _host().open_run(tmp_path) as run:
        result = await run.call("ast_grep", {"pattern": "add($X)"})
    lines = result.text.splitlines()
    assert lines[0] == "no matches under ."
    assert lines[1].startswith("0 matches, but the pattern's anchor `add` occurs 3 times in 2")
    assert "a.py:1" in lines[1] and "write the pattern as that code reads" in lines[1]
    assert result.data["anchor"]["occurrences"] == 3


async def test_empty_answer_without_the_anchor_stays_short(tmp_path):
    (tmp_path / "a.py").write_text("x = add(1, 2)\n")
    async with _host().open_run(tmp_path) as run:
        result = await run.call("ast_grep", {"pattern": "remove($X)"})
    assert result.text.splitlines()[0] == "no matches under ."
    assert "anchor" not in result.text and "anchor" not in result.data


async def test_an_untuned_keyword_is_an_anchor_for_search_and_edit(tmp_path):
    """Scala `import $X` compiles to an import of one name, which `import a.b.C` is not: both
    tools say `import` is there (a keyword: untuned grammars trust no keyword for the prefilter,
    but the note may point at it)."""
    (tmp_path / "A.scala").write_text("import scala.collection.mutable\nobject A\n")
    async with _host().open_run(tmp_path) as run:
        found = await run.call("ast_grep", {"pattern": "import $X"})
        staged = await run.call("ast_edit", {"pattern": "import $X", "rewrite": "import $X"})
    for result in (found, staged):
        assert "anchor `import` occurs 1 times in 1" in result.text, result.text
        assert "A.scala:1" in result.text
    assert staged.data["edit_id"] is None


async def test_bats_and_sbt_files_are_searched(tmp_path):
    (tmp_path / "t.bats").write_text("echo hi\n")
    (tmp_path / "build.sbt").write_text("val x = a.map(f)\n")
    async with _host().open_run(tmp_path) as run:
        bash = await run.call("ast_grep", {"pattern": "echo $X"})
        scala = await run.call("ast_grep", {"pattern": "$X.map($F)"})
    assert bash.text.splitlines()[0] == "1 match in 1 file", bash.text
    assert scala.text.splitlines()[0] == "1 match in 1 file", scala.text


@pytest.mark.parametrize("lang", sorted(CLI_EXTENSIONS))
def test_every_cli_language_takes_the_worker_pool(lang):
    """Untuned grammars load through the same module-level loader, so worker processes can
    receive them: the same fast path (literal prefilter, pool) as the tuned ones."""
    table = GrammarTable()
    for grammar in grammars().values():
        table.add(grammar)
    assert table.shippable(table.by_id[lang])
