"""Sub-projects of a checkout: the first folder one or two levels down that holds a server
spec's root marker, for a checkout whose root has none.

`status` asks this for every spec on every call. Globbing `*/MARKER` and `*/*/MARKER` per
marker per spec walked into `node_modules` (every package of a JavaScript checkout) before the
skip list dropped the hits, on the event loop a run server shares between runs. Here the two
levels are listed once per call and the folders no project lives in are never entered.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from livetools.detection import has_marker

SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", "build", "dist", "target"}
)

Folder = tuple[str, ...]  # parts under the root


class Subprojects:
    """One listing of a checkout's first two levels, shared by every spec of one question."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._listed: dict[Folder, tuple[frozenset[str], list[str]]] = {}

    def first_with(self, markers: Sequence[str]) -> Path | None:
        """The first folder one level down, else two, holding one of `markers` (names or globs
        like `*.csproj`): markers in their order, folders in path order, as sorted globs
        would find them."""
        level: list[Folder] = [()]
        for _ in range(2):
            level = [(*folder, name) for folder in level for name in self._list(folder)[1]]
            for marker in markers:
                for folder in level:
                    if self._holds(folder, marker):
                        return self.root.joinpath(*folder)
        return None

    def _holds(self, folder: Folder, marker: str) -> bool:
        names = self._list(folder)[0]
        name, _, text = marker.partition(":")
        if text:  # NAME:TEXT, the file NAME holding TEXT (detection.py)
            return name in names and has_marker(self.root.joinpath(*folder), marker)
        if any(c in marker for c in "*?["):
            hits = [n for n in names if fnmatchcase(n, marker)]
        else:
            hits = [marker] if marker in names else []
        # A dangling link is listed but is no marker (as `Path.exists` says).
        return any(self.root.joinpath(*folder, n).exists() for n in hits)

    def _list(self, folder: Folder) -> tuple[frozenset[str], list[str]]:
        """The folder's entry names, and its sub-folders to look in (sorted)."""
        listed = self._listed.get(folder)
        if listed is None:
            names: set[str] = set()
            folders: list[str] = []
            try:
                with os.scandir(self.root.joinpath(*folder)) as entries:
                    for entry in entries:
                        names.add(entry.name)
                        if entry.name not in SKIP_DIRS and _is_dir(entry):
                            folders.append(entry.name)
            except OSError:  # gone or unreadable: nothing in it
                pass
            listed = self._listed[folder] = (frozenset(names), sorted(folders))
        return listed


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # through a link, as a glob's `*` goes
    except OSError:
        return False
