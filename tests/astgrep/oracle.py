"""Helpers shared by the astgrep tests: our matcher run directly on files, and the ast-grep CLI
(PyPI `ast-grep-cli`, the version pinned in the plugin's test extra) run on the same files."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from functools import cache
from pathlib import Path

from livetools_astgrep.engine import Engine, FileJob, FileOutcome
from livetools_astgrep.grammar import Grammar, builtin_grammars
from livetools_astgrep.languages import load
from livetools_astgrep.pattern import Compiler, Pattern
from tests.support import REPO, require_binary

FIXTURES = REPO / "tests" / "fixtures" / "projects" / "astgrep"
STDLIB = Path(sysconfig.get_paths()["stdlib"])

Span = tuple[str, int, int]  # absolute file, start byte, end byte


@cache
def grammars() -> dict[str, Grammar]:
    return {g.id: g for g in builtin_grammars()}


@cache
def compiler(lang: str) -> Compiler:
    g = grammars()[lang]
    return Compiler(g, load(g.id, g.loader))


def compile_pattern(lang: str, pattern: str) -> Pattern:
    return compiler(lang).compile(pattern)


_ENGINE = Engine(cache_bytes=256 << 20)


def jobs_for(files: list[Path]) -> list[FileJob]:
    out = []
    for f in files:
        st = f.stat()
        out.append(FileJob(str(f.resolve()), str(f), st.st_mtime_ns, st.st_size))
    return out


def real(path: str) -> str:
    """A matched file's resolved path, looked up once per file: resolving it per match
    (10,000 in one pattern on brotli) made the corpus comparison CPU-bound on path lookups."""
    return _resolved(os.path.abspath(path))


@cache
def _resolved(path: str) -> str:
    return str(Path(path).resolve())


def ours(lang: str, pattern: str, files: list[Path]) -> set[Span]:
    p = compile_pattern(lang, pattern)
    found = _ENGINE.search(jobs_for(files), p, grammars()[lang].loader, 0)
    return {(real(o.rel), *span) for o in found for span in spans_of(o)}


def ours_in_code(lang: str, pattern: str, code: str, tmp: Path, ext: str) -> list[str]:
    path = tmp / f"snippet{ext}"
    path.write_text(code)
    p = compile_pattern(lang, pattern)
    data = code.encode()
    found = Engine().search(jobs_for([path]), p, grammars()[lang].loader, 0)
    return [data[start:end].decode() for o in found for start, end in spans_of(o)]


def spans_of(outcome: FileOutcome) -> list[tuple[int, int]]:
    s = outcome.spans
    return list(zip(s[::2], s[1::2], strict=True))


def cli_binary() -> str:
    return require_binary(
        "ast-grep", "uv sync (ast-grep-cli is in the livetools-astgrep test extra)"
    )


CLI_LANG = {"javascript": "js", "typescript": "ts", "tsx": "tsx", "cpp": "cpp"}


def cli(lang: str, pattern: str, files: list[Path]) -> set[Span]:
    out = subprocess.run(
        [cli_binary(), "run", "-p", pattern, "-l", CLI_LANG.get(lang, lang), "--json=compact"]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode not in (0, 1):  # the CLI refused the pattern: it finds nothing
        assert "pattern" in out.stderr.lower(), out.stderr
        return set()
    found = json.loads(out.stdout or "[]")
    return {
        (
            real(m["file"]),
            m["range"]["byteOffset"]["start"],
            m["range"]["byteOffset"]["end"],
        )
        for m in found
    }


def cli_rule(lang: str, rule: str, files: list[Path]) -> set[Span]:
    """The CLI's matches of a YAML rule (`rule:` body, indented two spaces): the oracle for a
    pattern the CLI cannot write as one (`{ $$$ }` is a set literal to its Dart grammar too)."""
    config = f"id: oracle\nlanguage: {CLI_LANG.get(lang, lang)}\nrule:\n{rule}"
    out = subprocess.run(
        [cli_binary(), "scan", "--inline-rules", config, "--json=compact"]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    return {
        (
            real(m["file"]),
            m["range"]["byteOffset"]["start"],
            m["range"]["byteOffset"]["end"],
        )
        for m in json.loads(out.stdout or "[]")
    }


def cli_in_code(lang: str, pattern: str, code: str, tmp: Path, ext: str) -> list[str]:
    path = tmp / f"cli{ext}"
    path.write_text(code)
    data = code.encode()
    return [
        data[s:e].decode()
        for _, s, e in sorted(cli(lang, pattern, [path]), key=lambda x: (x[1], -x[2]))
    ]


def files_of(folder: Path, *exts: str) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in exts)


def text_of(span: Span) -> str:
    path, start, end = span
    return Path(path).read_bytes()[start:end].decode("utf-8", "replace")


def env_without_cache() -> dict[str, str]:
    return dict(os.environ)
