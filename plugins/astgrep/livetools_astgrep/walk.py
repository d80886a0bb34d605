"""Which files a search covers, and what it left out and why (gitignored, hidden, vendored,
too large): a search that silently skips files reads as "no match"."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .engine import FileJob
from .gitignore import Rule, ignored, load_rules, parse_rules
from .grammar import Grammar

VENDORED = frozenset({"node_modules", "bower_components", "site-packages", "vendor"})
SILENT = frozenset({"__pycache__"})
MAX_FILE_BYTES = 2 * 1024 * 1024


@dataclass
class Walked:
    files: dict[str, list[FileJob]] = field(default_factory=dict)  # grammar id -> files
    ignored: int = 0
    hidden: int = 0
    vendored: list[str] = field(default_factory=list)
    huge: list[str] = field(default_factory=list)
    other: int = 0  # files of no searchable language

    def count(self) -> int:
        return sum(len(v) for v in self.files.values())


def grammar_for(name: str, by_ext: dict[str, Grammar]) -> Grammar | None:
    suffix = os.path.splitext(name)[1]
    if not suffix:
        return None
    return by_ext.get(suffix) or by_ext.get(suffix.lower())


def walk(
    root: Path,
    target: Path,
    by_ext: dict[str, Grammar],
    only: Grammar | None,
    max_bytes: int = MAX_FILE_BYTES,
) -> Walked:
    """Files under `target` (a directory inside `root`) grouped by grammar. With `only`, files of
    that grammar's extensions; without, files of every grammar marked `auto`."""
    out = Walked()
    root = root.resolve()
    rules = _exclude_rules(root)
    # Ignore files of the folders between the root and the target apply too.
    folder = root
    rules.extend(load_rules(folder, ""))
    for part in target.relative_to(root).parts:
        folder = folder / part
        rules.extend(load_rules(folder, _rel(root, folder)))
    # Strings, not Path objects, per entry: a large tree has tens of thousands of them.
    stack: list[tuple[str, str, list[Rule]]] = [(str(target), _rel(root, target), rules)]
    files = out.files
    while stack:
        directory, prefix, dir_rules = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                out.hidden += 1
                continue
            rel = prefix + "/" + name if prefix else name
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if name in SILENT:
                    continue
                if name in VENDORED:
                    out.vendored.append(rel + "/")
                    continue
                if dir_rules and ignored(dir_rules, rel, True):
                    out.ignored += 1
                    continue
                subdirs.append((entry.path, rel))
                continue
            grammar = grammar_for(name, by_ext) if only is None else _only(name, only)
            if grammar is None or (only is None and not grammar.auto):
                out.other += 1
                continue
            if dir_rules and ignored(dir_rules, rel, False):
                out.ignored += 1
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            if st.st_size > max_bytes:
                out.huge.append(rel)
                continue
            job = FileJob(entry.path, rel, st.st_mtime_ns, st.st_size)
            group = files.get(grammar.id)
            if group is None:
                files[grammar.id] = [job]
            else:
                group.append(job)
        for sub, rel in subdirs:
            sub_rules = load_rules(Path(sub), rel)
            stack.append((sub, rel, dir_rules + sub_rules if sub_rules else dir_rules))
    for jobs in out.files.values():
        jobs.sort(key=lambda j: j.rel)
    out.vendored.sort()
    out.huge.sort()
    return out


def _only(name: str, grammar: Grammar) -> Grammar | None:
    suffix = os.path.splitext(name)[1]
    return grammar if suffix in grammar.extensions or suffix.lower() in grammar.extensions else None


def _exclude_rules(root: Path) -> list[Rule]:
    try:
        text = (root / ".git" / "info" / "exclude").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return parse_rules(text, "")


def _rel(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel
