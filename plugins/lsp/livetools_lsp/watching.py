"""Files created, changed or deleted on disk, told to a server as `workspace/didChangeWatchedFiles`.

A server learns of an open document's edits through didChange, but of every other file only
through these events: without them basedpyright kept "Import "missing_mod" could not be
resolved" after the module was written, reported an importer clean after the module was
deleted, and gopls answered references on its old view of files changed behind the run (by
git, another agent, the harness's editor). The globs a server registers say what it wants
(`**/*.{go,mod}`); before it registers any, its own file extensions stand in.

Changes are found at call time by comparing a snapshot of those files (mtime, size) with the
disk: one bounded walk (files and seconds) per call, skipping the folders no project's sources
live in. A walk cut short says so and reports nothing deleted past the cut.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .subprojects import SKIP_DIRS

CREATED, CHANGED, DELETED = 1, 2, 3
MAX_FILES = 50_000
MAX_SECONDS = 1.0

Stamp = tuple[int, int]  # mtime_ns, size


def glob_regex(pattern: str) -> re.Pattern[str]:
    """An LSP glob (`**`, `*`, `?`, `{a,b}`, `[…]`) as a regex over a `/`-separated path."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{":
            end = pattern.find("}", i)
            if end < 0:
                out.append(re.escape(c))
            else:
                alts = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(re.escape(a) for a in alts) + ")")
                i = end + 1
                continue
        elif c == "[":
            end = pattern.find("]", i)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass
class Watcher:
    regex: re.Pattern[str]
    base: Path | None  # a RelativePattern's base folder; None: match the path from the root
    kinds: int = 7  # WatchKind bits: create 1, change 2, delete 4
    # The glob's last segment (`*.{go,mod}`), to pick the files worth a stat by name alone.
    tail: re.Pattern[str] | None = None

    def wants(self, root: Path, path: Path, kind: int) -> bool:
        if not self.kinds & (1 << (kind - 1)):
            return False
        base = self.base or root
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            return False
        return bool(self.regex.match(rel)) or bool(self.regex.match(path.as_posix()))


def watchers_from(options: Any, uri_path: Any) -> list[Watcher]:
    """The watchers of a `workspace/didChangeWatchedFiles` registration's options."""
    out: list[Watcher] = []
    for item in (options or {}).get("watchers") or []:
        if not isinstance(item, dict):
            continue
        glob, base = item.get("globPattern"), None
        if isinstance(glob, dict):  # RelativePattern {baseUri, pattern}
            base_uri = glob.get("baseUri")
            if isinstance(base_uri, dict):  # a WorkspaceFolder
                base_uri = base_uri.get("uri")
            base = uri_path(str(base_uri)) if base_uri else None
            glob = glob.get("pattern")
        if not isinstance(glob, str) or not glob:
            continue
        kind = item.get("kind")
        last = glob.rsplit("/", 1)[-1]
        whole = "**" in last or last.count("{") != last.count("}")  # `{a/b,c}`: no tail
        tail = None if whole else glob_regex(last)
        out.append(Watcher(glob_regex(glob), base, kind if isinstance(kind, int) else 7, tail))
    return out


@dataclass
class WatchedFiles:
    """One server's view of the files it watches: registrations, the snapshot, the events."""

    root: Path
    extensions: frozenset[str]
    registered: dict[str, list[Watcher]] = field(default_factory=dict)
    snapshot: dict[Path, Stamp] | None = None
    partial: bool = False  # the last walk was cut short
    _walked_all: bool = False  # the snapshot holds every file, not only the extensions'

    def register(self, reg_id: str, watchers: list[Watcher]) -> None:
        self.registered[reg_id] = watchers

    def unregister(self, reg_id: str) -> None:
        self.registered.pop(reg_id, None)

    def wants(self, path: Path, kind: int) -> bool:
        watchers = [w for ws in self.registered.values() for w in ws]
        if not watchers:
            return path.suffix in self.extensions or path.name in self.extensions
        return any(w.wants(self.root, path, kind) for w in watchers)

    def _candidate(self, name: str) -> bool:
        """Worth a stat: a file whose name a registered glob's last segment matches (go.mod,
        pyrightconfig.json, `*.py`), else one of the server's own extensions. A stat of every
        file of a large checkout at every call cost more than the answer."""
        if not self.registered:
            return os.path.splitext(name)[1] in self.extensions or name in self.extensions
        tails = [w.tail for ws in self.registered.values() for w in ws]
        return any(t is None or t.match(name) for t in tails)

    def walk(self) -> dict[Path, Stamp]:
        """(mtime, size) of the files under the root worth watching, bounded."""
        found: dict[Path, Stamp] = {}
        deadline = time.monotonic() + MAX_SECONDS
        stack = [self.root]
        self.partial = False
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if len(found) >= MAX_FILES or time.monotonic() > deadline:
                            self.partial = True
                            return found
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                if entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                                    stack.append(Path(entry.path))
                            elif self._candidate(entry.name) and entry.is_file():
                                st = entry.stat()
                                found[Path(entry.path)] = (st.st_mtime_ns, st.st_size)
                        except OSError:
                            continue
            except OSError:
                continue
        return found

    def changes(self) -> list[tuple[Path, int]]:
        """What changed on disk since the last look (the first look only takes the snapshot)."""
        walked_all, self._walked_all = self._walked_all, bool(self.registered)
        now = self.walk()
        before, self.snapshot = self.snapshot, now
        if before is None:
            return []
        created = now.keys() - before.keys()
        deleted = set() if self.partial else before.keys() - now.keys()
        if walked_all != self._walked_all:  # globs came or went: only the extensions were seen
            own = self.extensions
            if self._walked_all:
                created = {p for p in created if p.suffix in own}
            else:
                deleted = {p for p in deleted if p.suffix in own}
        events = [(p, CREATED) for p in created] + [(p, DELETED) for p in deleted]
        events += [(p, CHANGED) for p, stamp in now.items() if before.get(p, stamp) != stamp]
        return sorted(e for e in events if self.wants(*e))


def file_events(changes: Iterable[tuple[Path, int]], uri: Any) -> list[Mapping[str, Any]]:
    return [{"uri": uri(path), "type": kind} for path, kind in changes]
