"""Every path a model passes is resolved inside the run root; anything that escapes it is refused
before any file is touched."""

from __future__ import annotations

import os
from pathlib import Path

from ..results import ToolError


class PathError(ToolError, ValueError):
    """A path argument that cannot be used; the message says why and what to pass instead."""


def resolve_path(root: Path, path: str | os.PathLike[str], *, must_exist: bool = False) -> Path:
    """Resolve `path` (relative to `root`, or absolute) to an absolute path inside `root`.

    Symlinks are followed before the check, so a link pointing outside the root is refused too.
    """
    raw = os.fspath(path)
    if not raw or "\x00" in raw:
        raise PathError(f"invalid path {raw!r}: pass a path relative to the project root")
    root = root.resolve()
    candidate = Path(raw).expanduser()
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = candidate.resolve()
    if resolved != root and root not in resolved.parents:
        raise PathError(
            f"path {raw!r} is outside the project root; pass a path relative to the root"
        )
    if must_exist and not resolved.exists():
        raise PathError(f"no such file or directory: {relpath(root, resolved)}")
    return resolved


def relpath(root: Path, path: Path) -> str:
    """The form every result uses: relative to the root, with forward slashes."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return str(path)
    return rel.as_posix() or "."
