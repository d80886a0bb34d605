"""Staged multi-file changes: captured at staging, applied all-or-nothing.

A change is checked against the content captured when it was staged; if any file moved on since,
the whole change is refused and nothing is written. Applying writes every file through a temp file
and `os.replace`; if any step fails, the files already replaced are put back, so the tree never
ends half old and half new.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..results import truncation_note
from .paths import relpath, resolve_path

if TYPE_CHECKING:
    from ..run import Run

# Indirection so a test can make the n-th replace fail and watch the rollback.
_replace = os.replace


class EditConflict(Exception):
    """The tree changed since staging (or a write failed and was rolled back); nothing written."""


@dataclass(frozen=True)
class FileChange:
    """One file of a change: `original` None means the file did not exist at staging; `new`
    None means the change deletes it."""

    path: Path
    original: bytes | None
    new: bytes | None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _digest(content: bytes | None) -> str:
    import hashlib

    return "absent" if content is None else hashlib.sha256(content).hexdigest()


class StagedEdit:
    def __init__(self, root: Path, changes: list[FileChange]) -> None:
        self.root = root.resolve()
        self.changes = changes

    @classmethod
    def stage(cls, root: Path, new_contents: Mapping[str | Path, str | bytes | None]) -> StagedEdit:
        """Capture the current content of each file next to its new content (None = delete)."""
        changes = []
        for name, new in new_contents.items():
            path = resolve_path(root, name)
            data = new.encode() if isinstance(new, str) else new
            changes.append(FileChange(path, _read(path), data))
        return cls(root, changes)

    @property
    def paths(self) -> list[Path]:
        return [c.path for c in self.changes]

    def files(self) -> list[str]:
        return [relpath(self.root, c.path) for c in self.changes]

    def diff(self, max_lines: int = 200) -> str:
        """A unified diff of the whole change, capped with the count of lines cut."""
        import difflib

        lines: list[str] = []
        for change in self.changes:
            name = relpath(self.root, change.path)
            old = (change.original or b"").decode("utf-8", "replace").splitlines(keepends=True)
            new = (change.new or b"").decode("utf-8", "replace").splitlines(keepends=True)
            before = f"a/{name}" if change.original is not None else "/dev/null"
            after = f"b/{name}" if change.new is not None else "/dev/null"
            for line in difflib.unified_diff(old, new, before, after, n=2):
                lines.append(line if line.endswith("\n") else line + "\n")
        if len(lines) > max_lines:
            cut = len(lines) - max_lines
            lines = [*lines[:max_lines], f"… {truncation_note(cut, 'more diff lines')}\n"]
        return "".join(lines).rstrip("\n")

    def conflicts(self) -> list[str]:
        """Files whose content is no longer what was captured at staging."""
        return [
            relpath(self.root, c.path)
            for c in self.changes
            if _digest(_read(c.path)) != _digest(c.original)
        ]

    async def apply(self, run: Run | None = None) -> list[str]:
        """Verify, then write all files atomically through the run's write wrapping. Returns the
        observers' notes. Raises EditConflict with nothing written if the tree moved on."""
        if run is None:
            self.write()
            return []
        async with run.writing(self.paths) as notes:
            self.write()
        return notes

    def write(self) -> None:
        stale = self.conflicts()
        if stale:
            raise EditConflict(
                f"refused: {', '.join(stale)} changed since the edit was staged; nothing was "
                "written. Stage the edit again against the current content."
            )
        temps: dict[Path, str] = {}
        done: list[FileChange] = []
        change = self.changes[0] if self.changes else None
        try:
            for change in self.changes:
                if change.new is not None:
                    temps[change.path] = _temp_with(change.path, change.new, change.original)
            for change in self.changes:
                if change.new is None:
                    if change.original is not None:
                        change.path.unlink()
                else:
                    _replace(temps[change.path], change.path)
                    del temps[change.path]
                done.append(change)
        except OSError as exc:
            for change in reversed(done):
                _restore(change)
            failed = relpath(self.root, change.path) if change else "?"
            raise EditConflict(
                f"writing {failed} failed ({exc}); every file was put "
                "back as it was, nothing changed"
            ) from exc
        finally:
            for temp in temps.values():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)


def _temp_with(path: Path, content: bytes, original: bytes | None) -> str:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".livetools", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    if original is not None:
        os.chmod(temp, path.stat().st_mode & 0o7777)
    return temp


def _restore(change: FileChange) -> None:
    if change.original is None:
        with contextlib.suppress(FileNotFoundError):
            change.path.unlink()
        return
    temp = _temp_with(change.path, change.original, None)
    os.replace(temp, change.path)
