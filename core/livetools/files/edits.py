"""Staged multi-file changes: captured at staging, applied all-or-nothing.

A change is checked against the content captured when it was staged; if any file moved on since,
the whole change is refused and nothing is written. Applying writes every file's temp first, then
replaces each file through a compare-and-swap right before its own replace (`swap.py`): a save
that another process made while the change was being written is never overwritten; the files
already replaced are put back (each only if it still holds what we wrote) and the whole change is
refused, naming the file. If any step fails the same roll-back runs, so the tree never ends half
old and half new. Temp files name their writer (`owner.py`), so a run opening later removes those
a killed writer left.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..results import ToolError, truncation_note
from .owner import temp_name
from .paths import PathError, relpath, resolve_path
from .regular import check_target, read_bytes_sync
from .swap import Moved, Seen, remove_if, swap_in

if TYPE_CHECKING:
    from ..run import Run

# An indirection so a test can make a temp file's write fail and watch the rollback (a full disk
# is the write failure nobody tests by hand); a failing replace is `swap._renameat2`'s.
_write_fd = os.write

# An edit of a file larger than this is refused rather than held in memory twice.
MAX_FILE_BYTES = 256 * 1024 * 1024


class EditConflict(Exception):
    """The tree changed since staging (or a write failed and was rolled back); nothing written."""


@dataclass(frozen=True)
class FileChange:
    """One file of a change: `original` None means the file did not exist at staging; `new`
    None means the change deletes it."""

    path: Path
    original: bytes | None
    new: bytes | None
    seen: Seen | None = None  # the file's stat at staging: a cheap "unchanged" before a hash


def _read_seen(path: Path, root: Path | None = None) -> tuple[bytes | None, Seen | None]:
    """The current content with the stat it was read under (taken before the read, so a save
    during the read shows as a changed stat later)."""
    read_ns = time.time_ns()
    try:
        st = os.stat(path)
    except OSError:
        return _read(path, root), None
    content = _read(path, root)
    return content, (Seen.of(st, read_ns) if content is not None else None)


def _read(path: Path, root: Path | None = None) -> bytes | None:
    """The current content (None: absent). A FIFO, socket, device or directory is refused with
    PathError, never opened: a blocking open of a FIFO would stall the run."""
    if check_target(path, root) is None:
        return None
    try:
        return read_bytes_sync(path, root, limit=MAX_FILE_BYTES)
    except PathError:
        if not path.exists():  # removed between the two looks
            return None
        raise


def _digest(content: bytes | None) -> str:
    import hashlib

    return "absent" if content is None else hashlib.sha256(content).hexdigest()


class StagedEdit:
    def __init__(self, root: Path, changes: list[FileChange]) -> None:
        self.root = root.resolve()
        self.changes = changes

    @classmethod
    def stage(cls, root: Path, new_contents: Mapping[str | Path, str | bytes | None]) -> StagedEdit:
        """Capture the current content of each file next to its new content (None = delete).
        Raises PathError for a path outside the root or a file that is not a regular file."""
        changes = []
        for name, new in new_contents.items():
            path = resolve_path(root, name)
            try:
                data = new.encode("utf-8", "surrogateescape") if isinstance(new, str) else new
            except UnicodeEncodeError as exc:
                raise ToolError(
                    f"the new content of {relpath(root, path)} holds a lone surrogate at "
                    f"character {exc.start + 1}; pass valid Unicode text"
                ) from None
            original, seen = _read_seen(path, root)
            changes.append(FileChange(path, original, data, seen))
        return cls(root, changes)

    @classmethod
    async def astage(
        cls, root: Path, new_contents: Mapping[str | Path, str | bytes | None]
    ) -> StagedEdit:
        """`stage` in a worker thread: reading the originals never stalls the event loop."""
        return await asyncio.to_thread(cls.stage, root, new_contents)

    @property
    def paths(self) -> list[Path]:
        return [c.path for c in self.changes]

    def files(self) -> list[str]:
        return [relpath(self.root, c.path) for c in self.changes]

    def diff(self, max_lines: int = 200, moved: Mapping[Path, Path] | None = None) -> str:
        """A unified diff of the whole change, capped with the count of lines cut. `moved` (old
        path -> new path) shows a file the change moves as one diff from its old name to its
        new one (a line saying so when only the name changed), not a deletion and a creation."""
        import difflib

        by_path = {c.path: c for c in self.changes}
        pairs = {a: b for a, b in (moved or {}).items() if a in by_path and b in by_path}
        lines: list[str] = []
        for change in self.changes:
            if change.path in pairs.values():
                continue
            name = relpath(self.root, change.path)
            after_change, after_name = change, name
            if change.path in pairs:
                after_change = by_path[pairs[change.path]]
                after_name = relpath(self.root, after_change.path)
            old = (change.original or b"").decode("utf-8", "replace").splitlines(keepends=True)
            new = (after_change.new or b"").decode("utf-8", "replace").splitlines(keepends=True)
            if change.path in pairs and old == new:
                lines.append(f"moved {name} -> {after_name} (content unchanged)\n")
                continue
            before = f"a/{name}" if change.original is not None else "/dev/null"
            after = f"b/{after_name}" if after_change.new is not None else "/dev/null"
            for line in difflib.unified_diff(old, new, before, after, n=2):
                lines.append(line if line.endswith("\n") else line + "\n")
        if len(lines) > max_lines:
            cut = len(lines) - max_lines
            lines = [*lines[:max_lines], f"… {truncation_note(cut, 'more diff lines')}\n"]
        return "".join(lines).rstrip("\n")

    def conflicts(self) -> list[str]:
        """Files whose content is no longer what was captured at staging."""
        return [relpath(self.root, c.path) for c in self.changes if not self._unchanged(c)]

    def _unchanged(self, change: FileChange) -> bool:
        try:
            current = _read(change.path, self.root)
        except PathError:
            return False  # turned into a FIFO, a directory, an unreadable file: moved on
        return _digest(current) == _digest(change.original)

    async def apply(self, run: Run | None = None) -> list[str]:
        """Verify, then write all files atomically through the run's write wrapping. Returns the
        observers' notes. Raises EditConflict with nothing written if the tree moved on."""
        if run is None:
            await asyncio.to_thread(self.write)
            return []
        async with run.writing(self.paths) as notes:
            await asyncio.to_thread(self.write)
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
                        remove_if(change.path, change.original, change.seen)
                else:
                    swap_in(temps.pop(change.path), change.path, change.original, change.seen)
                done.append(change)
        except Moved:
            moved = relpath(self.root, change.path) if change else "?"
            lost = self._roll_back(done)
            raise EditConflict(
                f"refused: {moved} changed on disk while the edit was being written (another "
                "process saved it); its save was kept"
                + (
                    f", and {', '.join(lost)} changed too after we wrote them, so those hold "
                    "the other writer's content"
                    if lost
                    else "; every file this edit had written was put back, nothing changed"
                )
                + ". Stage the edit again against the current content."
            ) from None
        except OSError as exc:
            failed = relpath(self.root, change.path) if change else "?"
            lost = self._roll_back(done)
            reason = exc.strerror or type(exc).__name__
            if exc.errno == errno.ENOSPC:
                reason += "; free some space and try again"
            if lost:
                raise EditConflict(
                    f"writing {failed} failed ({reason}); putting back {', '.join(lost)} failed "
                    "too, so those files hold the new content; the other files are unchanged"
                ) from exc
            raise EditConflict(
                f"writing {failed} failed ({reason}); every file was put "
                "back as it was, nothing changed"
            ) from exc
        finally:
            for temp in temps.values():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)

    def _roll_back(self, done: list[FileChange]) -> list[str]:
        """Put back the files already replaced, each only if it still holds what we wrote (a
        save made since is kept). Returns the files that could not be put back."""
        lost = []
        for undo in reversed(done):
            try:
                _restore(undo)
            except (OSError, Moved):
                lost.append(relpath(self.root, undo.path))
        return lost


def _temp_with(path: Path, content: bytes, original: bytes | None) -> str:
    """A temp file beside `path` holding `content`. It is removed again if anything fails
    (a full disk fails the write, not the create), so a failed write leaves nothing behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        temp = str(path.parent / temp_name(path.name, secrets.token_hex(4)))
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[_write_fd(fd, view) :]
        finally:
            os.close(fd)
        if original is not None:
            os.chmod(temp, path.stat().st_mode & 0o7777)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _restore(change: FileChange) -> None:
    """Undo one replaced file, compare-and-swap against the content this change wrote."""
    if change.new is None:  # we deleted it: recreate unless something new is there
        if change.original is not None:
            swap_in(_temp_with(change.path, change.original, None), change.path, None)
        return
    if change.original is None:
        remove_if(change.path, change.new)
        return
    swap_in(_temp_with(change.path, change.original, None), change.path, change.new)
