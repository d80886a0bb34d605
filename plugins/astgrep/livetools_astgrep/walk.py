"""Which files a search covers, and what it left out and why (gitignored, hidden, vendored,
too large, links, FIFOs): a search that silently skips files reads as "no match".

The walk stays inside the root and sees each real file once. Directory links are never followed
(as ripgrep and the ast-grep CLI): `src/loop -> .` would repeat the tree, and a link into a
folder of the root adds nothing its real path does not. A file link whose target is inside the
root is searched under the target's own path (so an edit writes the real file, not over the
link); one whose target leaves the root, or is missing, is skipped. FIFOs, sockets and devices
are told apart by the directory entry's type, never opened: opening a FIFO blocks.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .engine import FileJob
from .gitignore import Rule, ignored, load_rules, parse_rules
from .grammar import Grammar
from .reading import read_regular

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
    links_outside: list[str] = field(default_factory=list)  # file links leaving the root
    links_broken: list[str] = field(default_factory=list)
    dir_links: list[str] = field(default_factory=list)  # directory links, not followed
    special: list[str] = field(default_factory=list)  # FIFOs, sockets, devices

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
    root_prefix = str(root).rstrip(os.sep) + os.sep
    seen: set[tuple[int, int]] = set()
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
                link = entry.is_symlink()
                is_dir = not link and entry.is_dir(follow_symlinks=False)
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
            path = entry.path
            grammar = grammar_for(name, by_ext) if only is None else _only(name, only)
            if grammar is None or (only is None and not grammar.auto):
                if link and os.path.isdir(path):
                    out.dir_links.append(rel)
                else:
                    out.other += 1
                continue
            if dir_rules and ignored(dir_rules, rel, False):
                out.ignored += 1
                continue
            if link:
                target_st = _target(path, rel, root_prefix, out)
                if target_st is None:
                    continue
                st = target_st
                real = os.path.realpath(path)
                path, rel = real, real[len(root_prefix) :].replace(os.sep, "/")
            elif entry.is_file(follow_symlinks=False):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
            else:
                out.special.append(rel)
                continue
            identity = (st.st_dev, st.st_ino)
            if identity in seen:  # a link to a file searched already, or a hard link
                continue
            seen.add(identity)
            if st.st_size > max_bytes:
                out.huge.append(rel)
                continue
            job = FileJob(path, rel, st.st_mtime_ns, st.st_size)
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
    for listed in (out.vendored, out.huge, out.links_outside, out.links_broken):
        listed.sort()
    out.dir_links.sort()
    out.special.sort()
    return out


def _target(path: str, rel: str, root_prefix: str, out: Walked) -> os.stat_result | None:
    """The stat of a link's target when it is a regular file inside the root; else the link is
    filed under its reason and None returned."""
    try:
        st = os.stat(path)
    except OSError:  # missing target, or a loop of links
        out.links_broken.append(rel)
        return None
    if stat.S_ISDIR(st.st_mode):
        out.dir_links.append(rel)
        return None
    if not os.path.realpath(path).startswith(root_prefix):
        out.links_outside.append(rel)
        return None
    if not stat.S_ISREG(st.st_mode):
        out.special.append(rel)
        return None
    return st


def _only(name: str, grammar: Grammar) -> Grammar | None:
    suffix = os.path.splitext(name)[1]
    return grammar if suffix in grammar.extensions or suffix.lower() in grammar.extensions else None


def _exclude_rules(root: Path) -> list[Rule]:
    try:
        text = read_regular(str(root / ".git" / "info" / "exclude")).decode("utf-8", "replace")
    except OSError:
        return []
    return parse_rules(text, "")


def _rel(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel
