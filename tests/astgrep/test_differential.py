"""Differential tests against the ast-grep CLI on real code: the interpreter's own standard
library, npm's sources when npm is installed, and the sample projects of every tuned language.
For patterns whose semantics agree, the match sets (file + byte range) must be identical; for
patterns where we differ by design, every CLI-only match must be one of the documented kinds."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tests.astgrep.oracle import FIXTURES, STDLIB, cli, files_of, ours, text_of

STDLIB_PARTS = ("json", "email", "logging", "http", "concurrent")


@cache
def python_corpus() -> list[Path]:
    files = [f for part in STDLIB_PARTS for f in files_of(STDLIB / part, ".py")]
    return files + files_of(FIXTURES / "python", ".py")


@cache
def javascript_corpus() -> list[Path]:
    files = files_of(FIXTURES / "javascript", ".js")
    npm = shutil.which("npm")
    if npm:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=30)
        lib = Path(root.stdout.strip()) / "npm" / "lib"
        if lib.is_dir():
            files += files_of(lib, ".js")
    return files


EXTS = {
    "typescript": (".ts",),
    "tsx": (".tsx",),
    "go": (".go",),
    "c": (".c", ".h"),
    "cpp": (".cpp",),
    "rust": (".rs",),
    "java": (".java",),
    "dart": (".dart",),
}


def corpus(lang: str) -> list[Path]:
    if lang == "python":
        return python_corpus()
    if lang == "javascript":
        return javascript_corpus()
    return files_of(FIXTURES / lang, *EXTS[lang])


AGREE = {
    "python": [
        "os.path.join($$$A)",
        "$X.append($Y)",
        "isinstance($X, $T)",
        "$F($$$ARGS)",
        "def $F($$$P): $$$B",
        "return $X",
        "$A + $B",
        "self.$M($$$)",
        "[$$$A]",
        "lambda $$$P: $B",
        "for $X in $Y: $$$B\nelse: $$$E",
        "not $X",
        "$D[$K]",
        "$X is None",
    ],
    "javascript": [
        "require($A)",
        "const $X = $Y",
        "$X.push($$$)",
        "$F($$$ARGS)",
        "async function $F($$$P) { $$$B }",
        "await $X",
        "($$$P) => $B",
        "new $C($$$)",
        "$A && $B",
        "for (const $X of $Y) { $$$B }",
        "module.exports = $X",
        "this.$P",
    ],
    "typescript": [
        "new Map()",
        "export function $F($$$P): $T { $$$B }",
        "const $X = $Y",
        "$X as $T",
        "type $T<$P> = $U",
        "interface $I { $$$ }",
        "this.$F = $V",
        "$X.dispose()",
    ],
    "tsx": ["useState($A)", "<h1>{$X}</h1>", "const $X = $Y"],
    "go": [
        "$X := $Y",
        "func ($R $T) $M($$$P) $RET { $$$B }",
        "for $K, $V := range $X { $$$B }",
        "defer $F($$$)",
        "&$T{$$$}",
        "if err != nil { $$$B }",
    ],
    "c": [
        "return $X;",
        "$T $V = $E;",
        "fprintf(stderr, $$$A)",
        "for (int $I = 0; $C; $S) { $$$B }",
        "if ($C) { $$$B }",
    ],
    "cpp": ["std::make_unique<$T>($$$A)", "delete $X;", "return $X;"],
    "rust": [
        "$X.unwrap()",
        "let $X = $Y;",
        "println!($$$A)",
        "$A == $A",
        "Store::new($N)",
        "match $V { $$$ }",
        "impl $T { $$$ }",
        "pub fn $F($$$P) -> $R { $$$B }",
        "$X?",
    ],
    "java": [
        "System.out.println($$$A)",
        "$A == $A",
        "if ($C) { $$$B }",
        "public void $M($$$P) { $$$B }",
        "$X.add($Y)",
        "for ($T $V : $C) { $$$ }",
        "new $C($$$)",
    ],
    "dart": ["class $C { $$$ }", "$A == $A", "void $M($$$P) { $$$B }"],
}

CASES = [(lang, p) for lang, patterns in AGREE.items() for p in patterns]


@pytest.mark.parametrize(("lang", "pattern"), CASES)
def test_same_matches_as_the_cli(lang, pattern):
    files = corpus(lang)
    mine, theirs = ours(lang, pattern, files), cli(lang, pattern, files)
    assert mine, f"the corpus should hold matches of {pattern!r}"
    only_cli = sorted(theirs - mine)[:3]
    only_ours = sorted(mine - theirs)[:3]
    assert mine == theirs, (
        f"CLI only: {[text_of(s)[:120] for s in only_cli]}; "
        f"ours only: {[text_of(s)[:120] for s in only_ours]}"
    )


def _has_more(span_text: str, words: tuple[str, ...]) -> bool:
    return any(w in span_text for w in words)


def test_trailing_children_difference_on_the_corpus():
    """`if $C: return $V` — every match the CLI finds and we do not has an else/elif (or more
    statements); every match we find and the CLI does not has a comment before the block."""
    files = python_corpus()
    mine = ours("python", "if $C: return $V", files)
    theirs = cli("python", "if $C: return $V", files)
    assert mine and theirs - mine
    for span in theirs - mine:
        text = text_of(span)
        assert _has_more(text, ("else", "elif")) or text.count("\n") > 1, text
    for span in mine - theirs:
        assert "#" in text_of(span), text_of(span)


def test_go_calls_the_cli_misses():
    files = corpus("go")
    assert cli("go", "fmt.Println($$$A)", files) == set()
    found = ours("go", "fmt.Println($$$A)", files)
    assert len(found) == 5
    assert all(text_of(s).startswith("fmt.Println(") for s in found)
