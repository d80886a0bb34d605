"""The real-world corpus per tuned language, as the astgrep tests use it: pinned projects fetched
by scripts/corpus.py (never committed), sampled deterministically so a run fits CI.

Some projects need shaping: bats ships most scripts without an extension (copied as `.sh`),
fmt ships its C++ headers as `.h` (copied as `.hpp`, so the CLI and we both read them as C++),
and tree-sitter-dart carries Dart only inside its test corpus (each example becomes one `.dart`
file)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from tests.corpus import corpus_project

PROJECTS: dict[str, tuple[str, ...]] = {
    "python": ("click",),
    "typescript": ("rxjs",),
    "go": ("cobra", "go-cmp"),
    "rust": ("regex", "serde-json"),
    "java": ("openjdk",),
    "c": ("brotli", "lz4"),
    "cpp": ("nlohmann-json", "fmt"),
    "dart": ("tree-sitter-dart",),
    "php": ("symfony-console",),
    "kotlin": ("expo-modules-core",),
    "swift": ("expo-modules-core",),
    "csharp": ("pythonnet",),
    "ruby": ("ruby-thor",),
    "lua": ("penlight",),
    "bash": ("bats",),
    "solidity": ("openzeppelin",),
    "javascript": ("express",),
    "tsx": ("react-navigation-elements",),
    "css": ("bootstrap",),
    "html": ("html5-boilerplate",),
    "json": ("openzeppelin",),
    "yaml": ("ansible-core",),
    "scala": ("scala-library",),
    "elixir": ("elixir",),
    "haskell": ("hlint",),
    "hcl": ("hcl-v2",),
    "nix": ("nix",),
}
EXTS: dict[str, tuple[str, ...]] = {
    "python": (".py",),
    "typescript": (".ts",),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".hpp", ".cpp", ".cc"),
    "dart": (".dart",),
    "php": (".php",),
    "kotlin": (".kt",),
    "swift": (".swift",),
    "csharp": (".cs",),
    "ruby": (".rb",),
    "lua": (".lua",),
    "bash": (".bash", ".sh"),
    "solidity": (".sol",),
    "javascript": (".js",),
    "tsx": (".tsx",),
    "css": (".css",),
    "html": (".html",),
    "json": (".json",),
    "yaml": (".yml", ".yaml"),
    "scala": (".scala",),
    "elixir": (".ex", ".exs"),
    "haskell": (".hs",),
    "hcl": (".hcl", ".tf"),
    "nix": (".nix",),
}
EXT_OF = {lang: exts[0] for lang, exts in EXTS.items()}
# Files per language for the differential suite: enough for every pattern to find real matches,
# few enough that the CLI and we both search them ~15 times within the CI budget.
SAMPLE = 90


def _scratch() -> Path:
    path = Path(tempfile.mkdtemp(prefix="livetools-astgrep-corpus-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def project(name: str) -> Path:
    """A fetched project's folder (read-only), or a skip saying how to fetch it."""
    return corpus_project(name)


def _sample(items: list[Path], n: int) -> list[Path]:
    """Every k-th item: deterministic, spread over the whole tree."""
    if len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


@cache
def _shaped(lang: str) -> tuple[Path, ...]:
    files: list[Path] = []
    for name in PROJECTS[lang]:
        root = project(name)
        if name == "fmt":
            target = _scratch() / "fmt"
            target.mkdir()
            for header in sorted(root.rglob("*.h")):
                shutil.copyfile(header, target / (header.stem + ".hpp"))
            root = target
        if name == "bats":
            root = _bash_scripts(root)
        if name == "tree-sitter-dart":
            files += _dart_examples(root)
            continue
        files += sorted(p for p in root.rglob("*") if p.suffix in EXTS[lang] and p.is_file())
    return tuple(files)


def corpus_files(lang: str, n: int = SAMPLE) -> list[Path]:
    """A deterministic sample of the language's corpus files (all of them when n is 0)."""
    files = list(_shaped(lang))
    return files if not n else _sample(files, n)


def _bash_scripts(root: Path) -> Path:
    """bats ships most of its scripts without an extension: each bash script as `.sh`."""
    target = _scratch() / "bats"
    target.mkdir()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        head = path.read_bytes()[:64]
        if path.suffix in (".bash", ".sh") or (head.startswith(b"#!") and b"bash" in head):
            shutil.copyfile(path, target / f"{path.parent.name}-{path.stem}.sh")
    return target


def _dart_examples(root: Path) -> list[Path]:
    """The Dart sources of the grammar's test corpus: the code of each `===` example (up to its
    `---` line) as one file; the highlight tests are Dart files already."""
    out = _scratch() / "dart"
    out.mkdir()
    files = sorted(root.rglob("*.dart"))
    for txt in sorted((root / "test" / "corpus").glob("*.txt")):
        lines = txt.read_text(encoding="utf-8").splitlines()
        i, count = 0, 0
        while i < len(lines):
            if lines[i].startswith("===") and i + 2 < len(lines) and lines[i + 2].startswith("==="):
                j = i + 3
                body = []
                while j < len(lines) and lines[j].strip() != "---":
                    body.append(lines[j])
                    j += 1
                code = "\n".join(body).strip("\n") + "\n"
                if code.strip():
                    count += 1
                    path = out / f"{txt.stem}_{count:03}.dart"
                    path.write_text(code, encoding="utf-8")
                    files.append(path)
                i = j
            i += 1
    return [f for f in files if f.stat().st_size]
