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
    "php": [
        "$F($$$A)", "return $X;", "new $C($$$)", "$X->$M($$$A)", "count($X)",
        "throw new $E($$$);", "if ($C) { $$$B }", "foreach ($X as $V) { $$$ }",
        "$A === $B", "isset($X)", "use $N;", "$this->$P", "sprintf($$$A)", "[$$$A]",
    ],
    "kotlin": [
        "$F($$$A)", "return $X", "val $X = $Y", "var $X = $Y", "$X.add($$$A)",
        "$X?.let { $$$ }", "fun $F($$$P) { $$$ }", "if ($C) { $$$ }", "$A == $B",
        "throw $E", "listOf($$$A)", "$X!!", "when ($X) { $$$ }",
    ],
    "swift": [
        "$F($$$A)", "return $X", "let $X = $Y", "var $X = $Y", "guard $C else { $$$ }",
        "if let $X = $Y { $$$ }", "func $F($$$P) { $$$ }", "$X.append($Y)", "throw $E",
        "$A == $B", "self.$P", "try $X", "await $X",
    ],
    "csharp": [
        "$F($$$A)", "return $X;", "new $C($$$)", "$A == $A", "$A == $B", "throw $E;",
        "if ($C) { $$$B }", "foreach (var $X in $Y) { $$$ }", "using ($X) { $$$ }",
        "$X.Dispose()", "typeof($T)", "$X != null", "nameof($X)",
    ],
    "ruby": [
        "$F($$$A)", "$X.each do |$Y| $$$ end", "def $M($$$P) $$$ end", "raise $E",
        "return $X", "$X << $Y", "require $X", "attr_reader $$$A", "$A == $B",
        "$X.map { |$Y| $$$ }", "if $C then $$$ end", "@$X = $Y", "unless $C $$$ end",
    ],
    "lua": [
        "$F($$$A)", "return $X", "local $X = $Y", "$X .. $Y", "function $F($$$P) $$$ end",
        "local function $F($$$P) $$$ end", "if $C then $$$ end", "$A == $B", "not $X",
        "error($$$A)", "for $K, $V in pairs($T) do $$$ end", "$X:$M($$$A)", "#$X",
        "type($X) == $T",
    ],
    "bash": [
        "echo $X", "local $X", "return $X", "[[ $$$ ]]", "$F $$$A", "if $C; then $$$ fi",
        "for $X in $$$Y; do $$$ done", "exit $X", "printf $$$A", "shift", "$X=$Y",
        "case $X in $$$ esac",
    ],
    "solidity": [
        "$F($$$A)", "return $X;", "require($$$A);", "revert $E($$$A);", "emit $E($$$A);",
        "function $F($$$P) $$$ { $$$ }", "$A == $B", "if ($C) { $$$ }", "msg.sender",
        "$X[$K]", "unchecked { $$$ }", "mapping($K => $V)", "address($X)",
    ],
    "javascript": [
        "require($A)", "const $X = $Y", "$X.push($$$)", "$F($$$ARGS)", "function $F($$$P) { $$$B }",
        "($$$P) => $B", "new $C($$$)", "$A && $B", "module.exports = $X", "this.$P",
        "return $X", "if ($C) { $$$B }", "var $X = $Y", "$A === $B",
    ],
    "tsx": [
        "$F($$$A)", "return $X", "const $X = $Y", "<$T $$$P />", "import $X from $M",
        "import { $$$ } from $M", "($$$P) => $B", "$A === $B", "React.useEffect($$$)",
        "styles.$S", "if ($C) { $$$ }", "export default function $F($$$P) { $$$ }",
    ],
    "css": [
        "color: $V", "display: none", "var($X)", "calc($X)", "$P: $V", "@media $Q { $$$ }",
        ".btn { $$$ }", "transition: $$$V", "border: 0", "rgba($$$A)", "margin: 0",
        "@supports $Q { $$$ }",
    ],
    "html": [
        "<meta $$$>", "<link $$$>", "<script $$$>$$$</script>", "<title>$$$</title>",
        "<body>$$$</body>", "<head>$$$</head>", "<p>$$$</p>", "<html $$$>$$$</html>",
        "<a $$$>$$$</a>", "<h1>$$$</h1>", "<style>$$$</style>", "<div $$$>$$$</div>",
    ],
    "json": [
        '"$K": $V', "[$$$]", "{ $$$ }", '"abi": $V', '"name": $N', '"type": "function"',
        "true", "null", '"inputs": [$$$]', '"stateMutability": $S', '"internalType": $T',
        '"anonymous": false',
    ],
    "yaml": [
        "name: $N", "hosts: $H", "gather_facts: no", "- name: $N", "when: $C", "$K: $V",
        "register: $R", "tasks: $T", "become: yes", "- $X", "vars: $V", "ignore_errors: yes",
    ],
    "scala": [
        "$F($$$A)", "def $F($$$P): $T = $B", "val $X = $Y", "if ($C) $A else $B",
        "$X.map($F)", "new $C($$$A)", "throw $E", "import $X", "case $P => $B",
        "$A == $B", "$X match { $$$ }", "override def $F($$$P): $T = $B",
    ],
    "elixir": [
        "$F($$$A)", "def $F($$$P) do $$$ end", "defp $F($$$P) do $$$ end", "@$A $V",
        "{:ok, $X}", "{:error, $R}", "$X |> $F($$$A)", "case $X do $$$ end", "raise $E",
        "Enum.map($$$A)", "alias $M", "if $C do $$$ end",
    ],
    "haskell": [
        "$F $X", "import $M", "import qualified $M as $A", "$X <- $Y", "return $X",
        "$F . $G", "case $X of $$$", "where", "$X == $Y", "Just $X", "map $F $X", "show $X",
    ],
    "hcl": [
        "$K = $V", "variable $N { $$$ }", "$B { $$$ }", "$F($$$A)", "true", "[$$$]",
        "{ $$$ }", "$X.$Y", "type = $T", "default = $V", "$A ? $B : $C", "null",
    ],
    "nix": [
        "$F $X", "$X: $B", "{ $$$ }: $B", "let $$$ in $B", "with $X; $B", "import $P",
        "if $C then $A else $B", "$A // $B", "builtins.$F", "$X.$Y", "inherit $$$;",
        "rec { $$$ }",
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
