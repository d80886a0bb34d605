"""Patterns agents type, per tuned language (issue 13 §6): what the differential suite runs
against the ast-grep CLI on the real corpus. None of them comes from our own fixtures."""

from __future__ import annotations

PATTERNS: dict[str, list[str]] = {
    "python": [
        "$F($$$A)", "return $X", "self.$M($$$)", "isinstance($X, $T)", "raise $E($$$)",
        "if $C: $$$B", "for $X in $Y: $$$B", "import $M", "from $M import $$$N",
        "def $F($$$P): $$$B", "$X is None", "not $X", "$D[$K]", "with $E as $V: $$$B",
        "lambda $$$P: $B", "@click.command()", "$A == $B", "try: $$$B\nexcept $E: $$$H",
    ],
    "typescript": [
        "$F($$$A)", "return $X", "new $C($$$)", "const $X = $Y", "$X as $T",
        "this.$M($$$)", "throw new $E($$$)", "import { $$$ } from $M", "import $X from $M",
        "export function $F($$$P): $T { $$$B }", "if ($C) { $$$B }", "($$$P) => $B",
        "typeof $X === $T", "$X.pipe($$$)", "export * from $M", "$A !== $B",
    ],
    "go": [
        "$F($$$A)", "return $X", "$X := $Y", "if err != nil { $$$B }", "defer $F($$$)",
        "for $K, $V := range $X { $$$B }", "func ($R $T) $M($$$P) $RET { $$$B }", "&$T{$$$}",
        "case $X:", "fmt.Errorf($$$)", "t.Errorf($$$)", "$X == nil", "panic($X)",
        "go $F($$$)", "len($X)", "switch $X { $$$ }",
    ],
    "rust": [
        "$F($$$A)", "return $X", "$X.unwrap()", "let $X = $Y;", "$X?", "impl $T { $$$ }",
        "match $V { $$$ }", "pub fn $F($$$P) -> $R { $$$B }", "Some($X)", "Ok($X)",
        "Err($E)", "$X.clone()", "format!($$$A)", "assert_eq!($A, $B)", "&mut $X",
        "$A == $B",
    ],
    "java": [
        "$F($$$A)", "return $X", "throw new $E($$$)", "new $C($$$)", "$X.add($Y)",
        "if ($C) { $$$B }", "for ($T $V : $C) { $$$ }", "catch (IOException $E) { $$$ }",
        "return new Object()", "$A == $A", "$X != null", "Objects.requireNonNull($X)",
        "synchronized ($L) { $$$ }", "@Override", "public $T $M($$$P) { $$$B }",
        "return null;",
    ],
    "c": [
        "$F($$$A)", "return $X", "return NULL", "return g($X)", "#include $H",
        "#define $N $V", "if ($C) { $$$B }", "$T $V = $E;", "for ($I = 0; $C; $S) { $$$B }",
        "sizeof($X)", "memcpy($$$A)", "else { $$$ }", "while ($C) { $$$B }", "$A == $B",
        "!$X", "$X->$F",
    ],
    "cpp": [
        "$F($$$A)", "return $X", "#include $H", "#include <$H>", "throw $E", "public:",
        "template <$$$P> $D", "static_cast<$T>($X)", "std::move($X)", "if ($C) { $$$B }",
        "$X.size()", "return $X;", "noexcept", "[$$$C]($$$P) { $$$ }", "$A == $B",
        "using $A = $B;",
    ],
    "dart": [
        "$F($$$A)", "return $X;", "return $X", "final $X = $Y;", "await $X",
        "class $C extends $B { $$$ }", "class $C { $$$ }", "import $X;", "if ($C) { $$$ }",
        "for (var $X in $Y) { $$$ }", "@override", "$A == $B", "$X.$M($$$A)",
        "void $M($$$P) { $$$B }", "var $X = $Y;", "if ($X != null) $X.dispose()",
        "for (var $X in $Y) { print($X); }", "while ($C) { $$$ }",
        "if ($C) { $$$A } else { $$$B }",
    ],
}  # fmt: skip

# Patterns the CLI cannot take as written, with the CLI rule that means the same: its Dart
# grammar, like ours, reads `{ $$$ }` after `if (…)` as a set literal (the CLI's pattern is an
# ERROR node and finds nothing), and its top level has no statements.
_NO_ELSE = "  not: {has: {regex: '^else$'}}\n"
RULES: dict[tuple[str, str], str] = {
    ("dart", "if ($C) { $$$ }"): (
        "  kind: if_statement\n  has: {field: consequence, kind: block}\n" + _NO_ELSE
    ),
    ("dart", "for (var $X in $Y) { $$$ }"): (
        "  kind: for_statement\n  all:\n    - has: {field: body, kind: block}\n"
        "    - has: {regex: '^var$'}\n    - has: {regex: '^in$'}\n"
    ),
    ("dart", "while ($C) { $$$ }"): "  kind: while_statement\n  has: {field: body, kind: block}\n",
    ("dart", "if ($C) { $$$A } else { $$$B }"): (
        "  kind: if_statement\n  all:\n    - has: {field: consequence, kind: block}\n"
        "    - has: {field: alternative, kind: block}\n"
    ),
    ("dart", "for (var $X in $Y) { print($X); }"): (
        "  pattern:\n    context: 'void _() { for (var $X in $Y) { print($X); } }'\n"
        "    selector: for_statement\n"
    ),
}
