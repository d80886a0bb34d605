"""Every path a model passes is resolved inside the run root; anything that escapes it is refused
before any file is touched.

Refusals are for the model to act on: they name the argument, echo at most `ECHO_CHARS` of it,
show paths relative to the root (never the absolute root) and say what to pass instead. A path the
system cannot even look up (a 100 KB name, a symlink loop, a lone surrogate) is refused here, so no
tool ever meets the raw OSError/RuntimeError/UnicodeEncodeError.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from ..results import ToolError

ECHO_CHARS = 200
NAME_MAX = 255  # bytes of one path component on every filesystem a run sits on
PATH_MAX = 4096  # bytes of a whole path (Linux)


class PathError(ToolError, ValueError):
    """A path argument that cannot be used; the message says why and what to pass instead."""


def shown(value: object, limit: int = ECHO_CHARS) -> str:
    """`value` quoted for an error message, cut to `limit` characters with the count cut."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text) - limit} more characters)"


def resolve_path(
    root: Path, path: str | os.PathLike[str], *, must_exist: bool = False, arg: str = "path"
) -> Path:
    """Resolve `path` (relative to `root`, or absolute) to an absolute path inside `root`.

    Symlinks are followed before the check, so a link pointing outside the root is refused too.
    `arg` names the argument in the refusal.
    """
    try:
        raw = os.fspath(path)
    except TypeError:
        raise PathError(f"{arg}: expected a path string, got {type(path).__name__}") from None
    if not isinstance(raw, str):
        raw = os.fsdecode(raw)
    if not raw.strip():
        raise PathError(f"{arg}: empty path; pass a path relative to the project root")
    if "\x00" in raw:
        raise PathError(
            f"{arg}: {shown(raw)} holds a NUL character; pass a path relative to the project root"
        )
    try:
        encoded = os.fsencode(raw)
    except UnicodeEncodeError as exc:
        raise PathError(
            f"{arg}: {shown(raw)} holds a lone surrogate at character {exc.start + 1}; "
            "pass the path as valid Unicode text"
        ) from None
    _check_length(arg, raw, encoded)
    root = root.resolve()
    candidate = Path(raw)
    if raw.startswith("~"):
        with contextlib.suppress(RuntimeError):  # "~nobody": taken literally, as a shell does
            candidate = candidate.expanduser()
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except RuntimeError:  # Python 3.11's "Symlink loop from ..." (an absolute path)
        raise PathError(
            f"{arg}: {shown(raw)} runs into a symbolic link loop; pass a path that does not "
            "go through it"
        ) from None
    except OSError as exc:
        raise PathError(_os_message(arg, raw, exc)) from None
    if resolved != root and root not in resolved.parents:
        raise PathError(
            f"{arg}: {shown(raw)} is outside the project root; pass a path relative to the root"
        )
    if must_exist:
        try:
            exists = resolved.exists()
        except OSError as exc:
            raise PathError(_os_message(arg, raw, exc)) from None
        if not exists:
            raise PathError(f"{arg}: no such file or directory: {relpath(root, resolved)}")
    return resolved


def _check_length(arg: str, raw: str, encoded: bytes) -> None:
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > NAME_MAX:
        raise PathError(
            f"{arg}: a file name in {shown(raw, 80)} is {longest} bytes long; a name can be at "
            f"most {NAME_MAX} bytes. Pass an existing path relative to the project root"
        )
    if len(encoded) > PATH_MAX:
        raise PathError(
            f"{arg}: path of {len(encoded)} bytes, over the {PATH_MAX}-byte limit "
            f"({shown(raw, 80)}); pass a shorter path relative to the project root"
        )


def _os_message(arg: str, raw: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return f"{arg}: {shown(raw)} runs into a symbolic link loop; pass another path"
    if exc.errno == errno.ENAMETOOLONG:
        return f"{arg}: {shown(raw, 80)} is too long for the file system; pass a shorter path"
    if exc.errno == errno.EACCES:
        return f"{arg}: {shown(raw)} is not accessible (permission denied)"
    reason = exc.strerror or type(exc).__name__
    return f"{arg}: cannot look up {shown(raw)}: {reason}"


def relpath(root: Path, path: Path) -> str:
    """The form every result uses: relative to the root, with forward slashes."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        try:
            rel = path.relative_to(root)
        except ValueError:
            return str(path)
    return rel.as_posix() or "."
