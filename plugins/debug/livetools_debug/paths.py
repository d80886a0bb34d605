"""Frame paths as results show them. Adapters repeat the same few paths on every stop, and
resolving one is a realpath walk (a syscall per component): on lldb's 2 ms steps that was a
quarter of the tool's overhead, so answers are memoized per (root, path)."""

from __future__ import annotations

import functools
from pathlib import Path

from livetools import relpath


@functools.lru_cache(maxsize=4096)
def shown(root: Path, path: str) -> str:
    """Relative to the root when inside it, else as the adapter gave it."""
    return relpath(root, Path(path))


@functools.lru_cache(maxsize=4096)
def inside(root: Path, path: str) -> bool:
    return Path(path).resolve().is_relative_to(root)
