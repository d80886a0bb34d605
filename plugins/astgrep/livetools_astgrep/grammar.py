"""What the matcher needs to know about one language, and the built-in table.

A `Grammar` is plain data plus a loader, so a third party adds a language with a tiny plugin that
implements `livetools_grammars` (see hookspecs.py). Nothing here imports tree-sitter: the loader
runs on first use, in the process that parses.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HOLE = "{}"


@dataclass(frozen=True)
class Grammar:
    """One searchable language.

    `contexts` is the ladder a pattern fragment is tried in, in order; each holds `{}` where the
    fragment goes (the first whose tree has no ERROR and no MISSING node wins). `metavar_char`
    replaces `$` before parsing where `$` cannot start an identifier. `auto` means a directory
    search without `language` includes this language. `chain_kinds` names node kinds a grammar
    uses for postfix chains flattened into siblings (Dart `selector`): a leading `$X` of a sibling
    pattern may absorb them, so `$X.dispose()` binds `a.b` in `a.b.dispose()`.
    `loader` must be a module-level callable (or a functools.partial of one) so worker processes
    can receive it; anything else is still searched, in the calling process.
    """

    id: str
    extensions: tuple[str, ...]
    loader: Callable[[], Any]
    contexts: tuple[str, ...] = (HOLE,)
    metavar_char: str = "$"
    auto: bool = True
    aliases: tuple[str, ...] = ()
    chain_kinds: frozenset[str] = field(default_factory=frozenset)
    tuned: bool = False
    # (regex, context): a fragment matching the regex tries that context first. For shapes a
    # lenient grammar accepts in the wrong place (Java parses `private int x;` in a method body).
    preferred: tuple[tuple[str, str], ...] = ()

    def ladder(self, fragment: str) -> tuple[str, ...]:
        import re

        first = tuple(ctx for rx, ctx in self.preferred if re.match(rx, fragment))
        return first + tuple(c for c in self.contexts if c not in first)

    def __post_init__(self) -> None:
        every = (*self.contexts, *(ctx for _, ctx in self.preferred))
        if not self.contexts or any(c.count(HOLE) != 1 for c in every):
            raise ValueError(f"grammar {self.id}: every context needs exactly one {HOLE!r}")
        if len(self.metavar_char) != 1:
            raise ValueError(f"grammar {self.id}: metavar_char must be one character")


def pack_language(name: str) -> Any:
    """Load a grammar bundled in tree-sitter-language-pack 0.13.x (no network: 1.x downloads
    grammars at run time and fails offline)."""
    from tree_sitter_language_pack import get_language

    return get_language(name)  # type: ignore[arg-type]


def _pack(name: str) -> Callable[[], Any]:
    return functools.partial(pack_language, name)


MU = "µ"  # ast-grep's choice where `$` is not an identifier character
C_MV = "\U00010000"  # ast-grep's choice for C/C++ (µ is not an identifier character there)

# Tuned ladders. Brace languages try a function body first: at top level Go parses
# `fmt.Println(x)` as a type conversion and C parses `free(p);` as a declaration, silently.
_TS_MEMBER = r"(public|private|protected|readonly|static|abstract|declare|override)\b|#"
_JAVA_CATCH = "class C_ {\nvoid m_() {\ntry { }\n{}\n}\n}"
_JAVA_MEMBER = r"(public|private|protected|static|abstract|@\w)\b"
# `void f() {`, `Future<int> f(x) async {`: a declaration, not a local function.
_DART_DECL = r"[\w$][\w$<>?,\s]*\s+[\w$]+\s*\([^)]*\)\s*(async\s*)?(\{|=>)"
_C_LIKE_BODY = ("void _(void) {\n{}\n}", "void _(void) {\n{};\n}")
_C_ELSE = "void _(void) {\nif (_) ;\n{}\n}"  # `else { $$$ }`
_CPP_DEF = r"[\w$:<>,*&\s]+?[\s*&]([\w$:~]+)\s*\([^;{]*\)[^;{=]*\{"
_TUNED: dict[str, dict[str, Any]] = {
    "python": {
        "ext": (".py", ".pyi", ".pyw", ".py3", ".bzl"),
        "mv": MU,
        "ctx": (
            HOLE,
            "if _:\n    pass\n{}",  # else: / elif:
            "try:\n    pass\n{}",  # except: / finally:
            "match _:\n    {}",  # case:
            "class _:\n    {}",  # class members
            "{}\ndef _():\n    pass",  # a decorator alone
        ),
        "aliases": ("py",),
    },
    "javascript": {
        "ext": (".js", ".mjs", ".cjs", ".jsx"),
        "mv": "$",
        "ctx": (HOLE, "class _ {\n{}\n}", "({\n{}\n})", "switch (_) {\n{}\n}"),
        "prefer": ((r"(static\b|#)", "class _ {\n{}\n}"),),
        "aliases": ("js", "jsx"),
    },
    "typescript": {
        "ext": (".ts", ".mts", ".cts"),
        "mv": "$",
        "ctx": (
            HOLE,
            "class _ {\n{}\n}",
            "interface _ {\n{}\n}",
            "({\n{}\n})",
            "switch (_) {\n{}\n}",
        ),
        "prefer": ((_TS_MEMBER, "class _ {\n{}\n}"),),
        "aliases": ("ts",),
    },
    "tsx": {
        "ext": (".tsx",),
        "mv": "$",
        "ctx": (HOLE, "class _ {\n{}\n}", "interface _ {\n{}\n}", "({\n{}\n})"),
        "prefer": ((_TS_MEMBER, "class _ {\n{}\n}"),),
    },
    "go": {
        "ext": (".go",),
        "mv": MU,
        "ctx": (
            "func _() {\n{}\n}",
            HOLE,
            "type _ struct {\n{}\n}",
            "type _ interface {\n{}\n}",
            "func _() {\nswitch _ {\n{}\n}\n}",
            "func _() {\nselect {\n{}\n}\n}",
        ),
        "aliases": ("golang",),
        "prefer": ((r"func\s*[\w(µ$]", HOLE),),
    },
    "c": {
        "ext": (".c", ".h"),
        "mv": C_MV,
        "ctx": (
            *_C_LIKE_BODY,
            HOLE,
            "struct _ {\n{}\n};",
            "void _(void) {\nswitch (_) {\n{}\n}\n}",
            _C_ELSE,
            "{}\n#endif",  # `#ifdef $X` alone
        ),
        "prefer": ((r"else\b", _C_ELSE),),
    },
    "cpp": {
        # `.cu`/`.cuh` as C++, as the ast-grep CLI reads them (the pack's cuda grammar stays
        # available by name).
        "ext": (
            *(".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".tpp"),
            *(".cu", ".cuh", ".ino"),
        ),
        "mv": C_MV,
        "ctx": (
            *_C_LIKE_BODY,
            HOLE,
            "class _ {\n{}\n};",
            "void _(void) {\nswitch (_) {\n{}\n}\n}",
            _C_ELSE,
        ),
        "prefer": (
            # `int $F($$$P) { $$$ }`: a definition, which a body reads as a braced declaration.
            (_CPP_DEF, HOLE),
            (_CPP_DEF, "class _ {\n{}\n};"),
            (r"(public|private|protected)\s*:", "class _ {\n{}\n};"),
            (r"else\b", _C_ELSE),
            (r"\[", _C_LIKE_BODY[1]),  # a lambda, not a declaration with attributes
        ),
        "aliases": ("c++", "cxx"),
    },
    "rust": {
        "ext": (".rs",),
        "mv": MU,
        "ctx": (
            "fn _() {\n{}\n}",
            HOLE,
            "impl _ {\n{}\n}",
            "trait _ {\n{}\n}",
            "struct _ {\n{}\n}",
            "fn _() {\nmatch _ {\n{}\n}\n}",
        ),
        "aliases": ("rs",),
    },
    "java": {
        "ext": (".java",),
        "mv": "$",
        "ctx": (
            "class C_ {\nvoid m_() {\n{}\n}\n}",
            "class C_ {\nvoid m_() {\n{};\n}\n}",
            "class C_ {\n{}\n}",
            HOLE,
            "class C_ {\nvoid m_() {\nswitch (x_) {\n{}\n}\n}\n}",
            "class C_ {\n{}\nvoid m_() { }\n}",  # an annotation alone
            _JAVA_CATCH,
        ),
        "prefer": ((r"catch\b", _JAVA_CATCH), (_JAVA_MEMBER, "class C_ {\n{}\n}")),
    },
    "dart": {
        "ext": (".dart",),
        "mv": "$",
        "ctx": (
            "void _() {\n{}\n}",
            "void _() {\n{};\n}",
            HOLE,
            "class _ {\n{}\n}",
            "var _ = {};",
            "class _ {\n{}\nvoid m_() { }\n}",  # an annotation alone
        ),
        "chain": frozenset({"selector", "type_arguments"}),
        "prefer": (
            (r"(import|export|part|library)\b", HOLE),
            (_DART_DECL, HOLE),
            (_DART_DECL, "class _ {\n{}\n}"),
        ),
    },
}

# The other languages the ast-grep CLI supports: its metavariable character (its expando char:
# `µ` where `$` is no identifier character, `_` for CSS/Nix, `$` where the grammar takes it), its
# file extensions, and the contexts a fragment needs (an expression alone is no statement in
# Lua; PHP code is text until `<?php`; C# and Kotlin expressions read as statements in a body).
_EXPR_BODY = "class C_ {\nvoid m_() {\n{};\n}\n}"
_CLI_LANGS: dict[str, dict[str, Any]] = {
    "bash": {
        "mv": "$",
        "ext": (
            *(".sh", ".bash", ".bats", ".cgi", ".command", ".env", ".fcgi", ".ksh", ".tmux"),
            *(".tool", ".zsh"),
        ),
    },
    "csharp": {
        "mv": MU,
        "ext": (".cs",),
        "ctx": (
            HOLE,
            "class C_ {\nvoid m_() {\n{}\n}\n}",
            _EXPR_BODY,
            "class C_ {\nvoid m_() {\nvar v_ = {};\n}\n}",  # `$A == $A`: no statement alone
            "class C_ {\n{}\n}",
            "class C_ {\nasync void m_() {\n{};\n}\n}",
        ),
        "aliases": ("cs", "c#"),
    },
    "css": {
        "mv": "_",
        "ext": (".css",),
        # a declaration (`color: $V`), then a value (`var($X)`)
        "ctx": (HOLE, "a_ {\n{}\n}", "a_ {\n{};\n}", "a_ {\nb_: {};\n}"),
    },
    "elixir": {"mv": MU, "ext": (".ex", ".exs")},
    "haskell": {"mv": MU, "ext": (".hs",), "ctx": (HOLE, "f_ = {}")},
    "hcl": {
        "mv": MU,
        "ext": (".hcl", ".tf", ".tfvars", ".nomad", ".workflow"),
        "ctx": (HOLE, "a_ = {}"),  # an expression is no body item alone
    },
    "html": {"mv": "$", "ext": (".html", ".htm", ".xhtml")},
    "json": {"mv": "$", "ext": (".json",), "ctx": (HOLE, "{\n{}\n}", "[{}]")},
    "kotlin": {
        "mv": MU,
        "ext": (".kt", ".ktm", ".kts"),
        "ctx": (HOLE, "fun f_() {\n{}\n}", "class C_ {\n{}\n}"),
        "aliases": ("kt",),
    },
    "lua": {
        "mv": "$",
        "ext": (".lua",),
        "ctx": (HOLE, "_ = {}", "function f_()\n{}\nend"),
    },
    "nix": {"mv": "_", "ext": (".nix",)},
    "php": {
        "mv": MU,
        "ext": (".php",),
        "ctx": ("<?php\n{}", "<?php\n{};", "<?php\nclass C_ {\n{}\n}", HOLE),
    },
    "ruby": {"mv": MU, "ext": (".rb", ".rbw", ".gemspec"), "aliases": ("rb",)},
    "scala": {"mv": "$", "ext": (".scala", ".sc", ".sbt"), "ctx": (HOLE, "object O_ {\n{}\n}")},
    "solidity": {
        "mv": "$",
        "ext": (".sol",),
        "ctx": (
            HOLE,
            "contract C_ {\n{}\n}",
            "contract C_ {\nfunction f_() public {\n{}\n}\n}",
            "contract C_ {\nfunction f_() public {\n{};\n}\n}",
            "contract C_ {\nfunction f_() public {\nx_ = {};\n}\n}",
        ),
    },
    "swift": {
        "mv": MU,
        "ext": (".swift",),
        "ctx": (HOLE, "func f_() {\n{}\n}", "class C_ {\n{}\n}"),
    },
    "yaml": {"mv": "$", "ext": (".yaml", ".yml")},
}

# Extensions of the other grammars the pack ships (searched when present, tried in one context).
# `auto=False`: data and markup formats, searched only when `language` names them.
_PACK_EXT: dict[str, tuple[str, ...]] = {
    "bash": (".sh", ".bash"),
    "csharp": (".cs",),
    "kotlin": (".kt", ".kts"),
    "swift": (".swift",),
    "ruby": (".rb",),
    "php": (".php",),
    "scala": (".scala", ".sc"),
    "lua": (".lua",),
    "luau": (".luau",),
    "haskell": (".hs",),
    "elixir": (".ex", ".exs"),
    "erlang": (".erl", ".hrl"),
    "elm": (".elm",),
    "ocaml": (".ml",),
    "ocaml_interface": (".mli",),
    "fsharp": (".fs", ".fsx"),
    "fsharp_signature": (".fsi",),
    "clojure": (".clj", ".cljs", ".cljc", ".edn"),
    "commonlisp": (".lisp", ".cl"),
    "scheme": (".scm", ".ss"),
    "racket": (".rkt",),
    "elisp": (".el",),
    "fennel": (".fnl",),
    "janet": (".janet",),
    "julia": (".jl",),
    "r": (".r", ".R"),
    "perl": (".pl", ".pm"),
    "objc": (".m", ".mm"),
    "cuda": (),
    "d": (".d",),
    "zig": (".zig",),
    "nim": (".nim",),
    "odin": (".odin",),
    "v": (".v",),
    "gleam": (".gleam",),
    "groovy": (".groovy", ".gradle"),
    "hack": (".hack",),
    "haxe": (".hx",),
    "solidity": (".sol",),
    "cairo": (".cairo",),
    "fortran": (".f90", ".f95", ".f03", ".f08"),
    "pascal": (".pas",),
    "ada": (".adb", ".ads"),
    "cobol": (".cob", ".cbl"),
    "matlab": (".matlab",),
    "powershell": (".ps1", ".psm1"),
    "fish": (".fish",),
    "tcl": (".tcl",),
    "gdscript": (".gd",),
    "glsl": (".glsl", ".vert", ".frag"),
    "hlsl": (".hlsl",),
    "wgsl": (".wgsl",),
    "verilog": (".sv", ".svh"),
    "vhdl": (".vhd", ".vhdl"),
    "purescript": (".purs",),
    "agda": (".agda",),
    "apex": (".cls",),
    "actionscript": (".as",),
    "squirrel": (".nut",),
    "starlark": (".star",),
    "smali": (".smali",),
    "pony": (".pony",),
    "hare": (".ha",),
    "func": (".fc",),
    "clarity": (".clar",),
    "move": (".move",),
    "qmljs": (".qml",),
    "svelte": (".svelte",),
    "vue": (".vue",),
    "astro": (".astro",),
    "vim": (".vim",),
    "jsonnet": (".jsonnet", ".libsonnet"),
    "nix": (".nix",),
    "terraform": (),
    "hcl": (".hcl",),
    "sql": (".sql",),
    "graphql": (".graphql", ".gql"),
    "proto": (".proto",),
    "thrift": (".thrift",),
    "capnp": (".capnp",),
    "prisma": (".prisma",),
    "cmake": (".cmake",),
    "make": (".mk",),
    "meson": (".meson",),
    "ninja": (".ninja",),
    "dockerfile": (".dockerfile",),
    "css": (".css",),
    "scss": (".scss",),
    "html": (".html", ".htm"),
    "twig": (".twig",),
    "xml": (".xml", ".xsd", ".xsl"),
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "ini": (".ini", ".cfg"),
    "markdown": (".md", ".markdown"),
    "rst": (".rst",),
    "latex": (".tex",),
    "bibtex": (".bib",),
    "typst": (".typ",),
    "org": (".org",),
    "csv": (".csv",),
    "tsv": (".tsv",),
    "psv": (".psv",),
    "kdl": (".kdl",),
    "ron": (".ron",),
    "properties": (".properties",),
    "llvm": (".ll",),
    "wat": (".wat",),
    "wast": (".wast",),
    "tablegen": (".td",),
    "bicep": (".bicep",),
    "rego": (".rego",),
    "smithy": (".smithy",),
    "sparql": (".sparql", ".rq"),
    "beancount": (".beancount",),
    "mermaid": (".mmd", ".mermaid"),
    "puppet": (".pp",),
}
_NOT_AUTO = frozenset(
    {
        "css", "scss", "html", "twig", "xml", "json", "yaml", "toml", "ini", "markdown", "rst",
        "latex", "bibtex", "typst", "org", "csv", "tsv", "psv", "kdl", "ron", "properties",
        "mermaid", "beancount", "dockerfile", "make", "ninja", "meson", "cmake", "sql",
        "graphql", "proto", "thrift", "capnp", "prisma", "matlab", "puppet", "pascal",
        "verilog", "v",
    }
)  # fmt: skip
# Languages where `$` can start an identifier, so metavariables need no replacement.
_DOLLAR_OK = frozenset({"bash", "scala", "groovy", "haxe", "svelte", "vue", "astro"})


def builtin_grammars() -> list[Grammar]:
    """Every grammar of the pack: tuned ladders for ten languages, one context for the rest."""
    out = []
    for name, spec in _TUNED.items():
        out.append(
            Grammar(
                id=name,
                extensions=spec["ext"],
                loader=_pack(name),
                contexts=spec["ctx"],
                metavar_char=spec["mv"],
                aliases=spec.get("aliases", ()),
                chain_kinds=spec.get("chain", frozenset()),
                tuned=True,
                preferred=spec.get("prefer", ()),
            )
        )
    for name in pack_names():
        if name in _TUNED:
            continue
        cli = _CLI_LANGS.get(name, {})
        extensions = cli.get("ext", _PACK_EXT.get(name, ()))
        out.append(
            Grammar(
                id=name,
                extensions=extensions,
                loader=_pack(name),
                contexts=cli.get("ctx", (HOLE,)),
                metavar_char=cli.get("mv", "$" if name in _DOLLAR_OK else MU),
                auto=bool(extensions) and name not in _NOT_AUTO,
                aliases=cli.get("aliases", ()),
                preferred=cli.get("prefer", ()),
            )
        )
    return out


@functools.cache
def pack_names() -> tuple[str, ...]:
    """The grammar names the pack ships, read from its bindings folder (no tree-sitter import)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("tree_sitter_language_pack")
    if spec is None or not spec.submodule_search_locations:
        return ()
    folder = Path(next(iter(spec.submodule_search_locations))) / "bindings"
    names = {p.name.split(".", 1)[0] for p in folder.glob("*.so")}
    names |= {p.name.split(".", 1)[0] for p in folder.glob("*.pyd")}
    if names:
        names |= {"csharp", "yaml", "embeddedtemplate"}  # shipped as separate wheels it pulls
    return tuple(sorted(n for n in names if n and not n.startswith("_")))
