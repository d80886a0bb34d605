"""Which files import a given file: lines of other files of the server's languages that import
or include it by its stem (`from shapes import`, `import … from "./shapes"`, `#include
"shapes.h"`, `require("./shapes")`). A text search, bounded like the rename's (completeness.py):
what a move would break, and which files a write that creates, deletes or changes a header must
check besides the open ones."""

from __future__ import annotations

import re
from pathlib import Path

from livetools import PathError
from livetools.files import read_bytes_sync

from .completeness import outside
from .server import LanguageServer


def import_line(stem: str) -> re.Pattern[str]:
    name = rf"(?<![\w$-]){re.escape(stem)}(?![\w$-])"
    return re.compile(
        rf"^\s*(?:from|import|export|#\s*include|use|require)\b.*{name}|require\(.*{name}"
    )


def importers(
    root: Path,
    server: LanguageServer,
    path: Path,
    skip: set[Path],
    seconds: float,
) -> tuple[list[tuple[Path, int, str]], bool]:
    """(file, 1-based line, text) of each import of `path` outside `skip`; and whether the
    search stopped at its bound."""
    pattern = import_line(path.stem)
    files, partial = outside(root, server, path.stem, skip | {path}, seconds)
    found: list[tuple[Path, int, str]] = []
    for other in files:
        try:
            text = read_bytes_sync(other, root).decode("utf-8", "replace")
        except (PathError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found.append((other, number, line.strip()[:120]))
    return found, partial
