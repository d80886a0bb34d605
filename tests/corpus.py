"""The test side of the real-world corpus (scripts/corpus.py fetches it): where a pinned project
lies, a private copy for tests that write, and deterministic samples so a suite fits CI's time.

Without the corpus a real-world test skips saying how to fetch it; with LIVETOOLS_REQUIRE_SERVERS=1
(CI) the skip is a failure, since CI fetches the corpus first."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support import REQUIRE_ENV

T = TypeVar("T")

realworld = pytest.mark.realworld
SCALE_ENV = "LIVETOOLS_CORPUS_SCALE"


def corpus_dir() -> Path:
    env = os.environ.get("LIVETOOLS_CORPUS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "livetools" / "corpus"


def _missing(name: str) -> None:
    message = (
        f"real-world corpus project {name!r} not fetched: "
        f"run `uv run python scripts/corpus.py fetch {name}`"
    )
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 turns this skip into a failure)")
    pytest.skip(message)


def corpus_project(name: str) -> Path:
    """The fetched project's folder (treat it as read-only: other tests read it too)."""
    folder = corpus_dir() / name
    try:
        json.loads((corpus_dir() / f"{name}.stamp.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        _missing(name)
    if not folder.is_dir():
        _missing(name)
    return folder


def corpus_copy(name: str, dest: Path) -> Path:
    """A private copy of the project under `dest`, for tests that modify files."""
    target = dest / name
    shutil.copytree(corpus_project(name), target, symlinks=True)
    return target


def corpus_files(name: str, *suffixes: str) -> list[Path]:
    """Every file of the project with one of `suffixes`, in a stable order."""
    root = corpus_project(name)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def sample(items: Iterable[T], n: int, seed: int = 0) -> list[T]:
    """`n` items (scaled by $LIVETOOLS_CORPUS_SCALE for deeper local runs), the same ones every
    run; all of them when there are fewer."""
    pool: Sequence[T] = list(items)
    n = max(1, round(n * float(os.environ.get(SCALE_ENV) or 1)))
    if len(pool) <= n:
        return list(pool)
    return random.Random(seed).sample(list(pool), n)
