"""Files created, changed or deleted on disk, told to a server as `workspace/didChangeWatchedFiles`.

A server learns of an open document's edits through didChange, but of every other file only
through these events: without them basedpyright kept "Import "missing_mod" could not be
resolved" after the module was written, reported an importer clean after the module was
deleted, and gopls answered references on its old view of files changed behind the run (by
git, another agent, the harness's editor). The globs a server registers say what it wants
(`**/*.{go,mod}`); before it registers any, its own file extensions stand in.

Changes are found at call time by comparing a snapshot of those files (mtime, size) with the
disk. Where Linux inotify is available the first walk watches every folder it enters, and later
looks stat only the paths the kernel named (inotify.py); elsewhere, or once events were missed,
each look is one bounded walk (files and seconds), skipping the folders no project's sources live
in. A walk cut short says so, reports nothing deleted past the cut, and gives up the watch.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import inotify
from .subprojects import SKIP_DIRS

CREATED, CHANGED, DELETED = 1, 2, 3
MAX_FILES = 50_000
MAX_SECONDS = 1.0
_MTIME_SLACK_NS = 2_000_000_000  # file systems with coarse mtimes (2 s on FAT)
MAX_FOLDER_EVENTS = 64  # folders created, moved or deleted in one look past which a walk is cheaper
_FOLDER_EVENTS = inotify.ISDIR | inotify.DELETE_SELF | inotify.MOVE_SELF

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
    use_inotify: bool = True
    registered: dict[str, list[Watcher]] = field(default_factory=dict)
    snapshot: dict[Path, Stamp] | None = None
    partial: bool = False  # the last walk was cut short
    _walked_all: bool = False  # the snapshot holds every file, not only the extensions'
    _tree: inotify.Tree | None = None
    _regs_moved: bool = False  # registrations changed since the last look: walk once
    _looked: int = 0  # time.time_ns() of the last look
    _was_partial: bool = False

    def register(self, reg_id: str, watchers: list[Watcher]) -> None:
        self.registered[reg_id] = watchers
        self._regs_moved = True

    def unregister(self, reg_id: str) -> None:
        self.registered.pop(reg_id, None)
        self._regs_moved = True

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

    @property
    def inotify(self) -> bool:
        """Whether looks are answered from inotify events rather than walks."""
        return self._tree is not None

    def describe(self) -> str:
        """How changes on disk are found: "inotify", or the walk (and whether it was cut)."""
        if self._tree is not None:
            return "inotify"
        cut = f", cut at {MAX_FILES:,} files or {MAX_SECONDS:g}s" if self.partial else ""
        return f"a walk at each call{cut}"

    def walk(self, top: Path | None = None) -> dict[Path, Stamp]:
        """(mtime, size) of the files under `top` (the root) worth watching, bounded; each
        folder entered is watched when inotify is on."""
        found: dict[Path, Stamp] = {}
        deadline = time.monotonic() + MAX_SECONDS
        stack = [top or self.root]
        self.partial = False
        while stack:
            folder = stack.pop()
            if self._tree is not None and not self._tree.watch(folder):
                self.close()  # the watch cap: walk from now on
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if len(found) >= MAX_FILES or time.monotonic() > deadline:
                            self.partial = True
                            self.close()  # folders past the cut are unwatched
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

    def _catch_up(self, dirty: dict[Path, int]) -> list[tuple[Path, int]] | None:
        """The snapshot brought up to date with what inotify named, in place, and the events;
        None when a walk is the better answer (the watch gave out, or a checkout switched)."""
        folders = [p for p, m in dirty.items() if m & _FOLDER_EVENTS]
        if len(folders) > MAX_FOLDER_EVENTS:
            return None
        found: dict[Path, Stamp] = {}
        for folder in folders:  # new or moved in: watch it and read it
            if folder.is_dir() and not _skipped(self.root, folder):
                found.update(self.walk(folder))
                if self._tree is None:  # before the snapshot is touched
                    return None
        snap = self.snapshot
        assert snap is not None
        before: dict[Path, Stamp | None] = {}  # each touched path as the last look saw it

        def forget(path: Path) -> None:
            before.setdefault(path, snap.get(path))
            snap.pop(path, None)

        for folder in folders:
            prefix = f"{folder}{os.sep}"
            for path in [p for p in snap if p == folder or str(p).startswith(prefix)]:
                forget(path)  # gone, or read again just below
        for path, stamp in found.items():
            before.setdefault(path, None)
            snap[path] = stamp
        written = set()
        for path, mask in dirty.items():
            if mask & _FOLDER_EVENTS:
                continue
            forget(path)
            if _skipped(self.root, path) or not self._candidate(path.name):
                continue
            try:
                st = path.stat()
            except OSError:
                continue  # deleted
            if stat.S_ISREG(st.st_mode):  # the stat already says so: no second one
                snap[path] = (st.st_mtime_ns, st.st_size)
                if mask & (inotify.MODIFY | inotify.CLOSE_WRITE):
                    written.add(path)  # a rewrite in one mtime tick at the same size too
        events = []
        for path, old in before.items():
            new = snap.get(path)
            if old is None and new is not None:
                events.append((path, CREATED))
            elif old is not None and new is None:
                events.append((path, DELETED))
            elif old is not None and (old != new or path in written):
                events.append((path, CHANGED))
        return sorted(e for e in events if self.wants(*e))

    def changes(self) -> list[tuple[Path, int]]:
        """What changed on disk since the last look (the first look only takes the snapshot).
        The first look opens the inotify watch before it walks: nothing written during the
        walk is missed."""
        if self.snapshot is None and self.use_inotify:
            self._tree = inotify.Tree.open()
        dirty = self._tree.drain() if self._tree is not None else None
        if dirty is not None and self.snapshot is not None and not self._regs_moved:
            events = self._catch_up(dirty)
            if events is not None:
                self._looked = time.time_ns()
                return events
        walked_all, self._walked_all = self._walked_all, bool(self.registered)
        now = self.walk()
        self._regs_moved = False
        before, self.snapshot = self.snapshot, now
        looked, self._looked = self._looked, time.time_ns()
        if before is None:
            return []
        created = now.keys() - before.keys()
        deleted = set() if self.partial else before.keys() - now.keys()
        if self.partial or self._was_partial:
            # Walks cut at different places: a file past the last cut is not new unless it
            # was written since that look.
            created = {p for p in created if now[p][0] >= looked - _MTIME_SLACK_NS}
        self._was_partial = self.partial
        if walked_all != self._walked_all:  # globs came or went: only the extensions were seen
            own = self.extensions
            if self._walked_all:
                created = {p for p in created if p.suffix in own}
            else:
                deleted = {p for p in deleted if p.suffix in own}
        events = [(p, CREATED) for p in created] + [(p, DELETED) for p in deleted]
        events += [(p, CHANGED) for p, stamp in now.items() if before.get(p, stamp) != stamp]
        return sorted(e for e in events if self.wants(*e))

    def close(self) -> None:
        """Give up the inotify watch (the server stopped, or the walk was cut short)."""
        tree, self._tree = self._tree, None
        if tree is not None:
            tree.close()


def _skipped(root: Path, path: Path) -> bool:
    """The path is, or is inside, a folder the walk never enters (node_modules, .git, dot
    folders), or lies outside the root."""
    try:
        folders = path.relative_to(root).parts[:-1]
    except ValueError:
        return True
    if path.is_dir():
        folders = path.relative_to(root).parts
    return any(p in SKIP_DIRS or p.startswith(".") for p in folders)


def file_events(changes: Iterable[tuple[Path, int]], uri: Any) -> list[Mapping[str, Any]]:
    return [{"uri": uri(path), "type": kind} for path, kind in changes]
