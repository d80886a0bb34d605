"""A rename is complete or refused: uses of the old name in files the server's edit leaves alone.

A server answers a rename from the files it has loaded. One started for a sub-project, or one
that has not yet read a file changed behind the run, returns an edit that leaves uses behind,
and the build breaks (TS2305 in a TypeScript solution). Before writing, the run root is searched
(bounded; whole words; the server's file types) for the old name in files the edit does not
touch. Those files are opened in the server and the rename asked again. Each mention still left
is asked for its definition: one that leads to the renamed declaration is a use the edit missed,
and the rename is refused with the list; one that leads elsewhere is another symbol; one the
server resolves to nothing (a comment, a string) is named in a note.
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livetools import ToolError, relpath

from .jsonrpc import RpcTimeout
from .positions import encode_column, split_lines
from .render import locations
from .server import LanguageServer
from .subprojects import SKIP_DIRS

MAX_FILES = 20_000  # files looked at under the run root
MAX_SECONDS = 2.0
MAX_OPENED = 40  # files opened in the server before asking again
MAX_ASKED = 40  # mentions asked for their definition
ASK_BOUND = 5.0  # seconds one definition may take


@dataclass
class Mentions:
    """Where the old name still stands outside the edit, by what the server says it is."""

    missed: list[str] = field(default_factory=list)  # rel:line, a use of the renamed symbol
    unopened: list[str] = field(default_factory=list)  # rel:line in a file the server cannot open
    unresolved: list[str] = field(default_factory=list)  # rel:line, nothing there to the server
    others: int = 0  # mentions of other symbols of the same name
    unchecked: int = 0  # past MAX_ASKED
    partial: bool = False  # the search stopped at its bound


def outside(
    root: Path,
    server: LanguageServer,
    old: str,
    touched: set[Path],
    seconds: float = MAX_SECONDS,
) -> tuple[list[Path], bool]:
    """Files of the server's types under `root` holding `old` as a whole word, not in
    `touched`; and whether the search stopped at its bound."""
    word = re.compile(rf"(?<![\w$]){re.escape(old)}(?![\w$])".encode())
    needle = old.encode()
    found: list[Path] = []
    deadline = time.monotonic() + seconds
    seen = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if not server.spec.serves(name):
                continue
            seen += 1
            if seen > MAX_FILES or time.monotonic() > deadline:
                return found, True
            path = Path(folder) / name
            if path in touched:
                continue
            try:
                st = path.stat()
                if not stat.S_ISREG(st.st_mode) or st.st_size > 2 << 20:
                    continue  # a FIFO would block the search
                data = path.read_bytes()
            except OSError:
                continue
            if needle in data and word.search(data):
                found.append(path)
    return found, False


async def classify(
    root: Path,
    server: LanguageServer,
    old: str,
    files: list[Path],
    declared: set[tuple[Path, int]],
) -> Mentions:
    """Each whole-word mention of `old` in `files`, asked for its definition."""
    word = re.compile(rf"(?<![\w$]){re.escape(old)}(?![\w$])")
    out = Mentions()
    asked = 0
    for path in files:
        try:
            doc, _ = await server.sync(path)
        except ToolError:  # outside the server's root: nothing it says can account for it
            text = path.read_text(encoding="utf-8", errors="replace")
            out.unopened += [
                f"{relpath(root, path)}:{n + 1}"
                for n, line in enumerate(split_lines(text))
                if word.search(line)
            ]
            continue
        for number, line in enumerate(split_lines(doc.text)):
            for match in word.finditer(line):
                where = f"{relpath(root, path)}:{number + 1}"
                if asked >= MAX_ASKED:
                    out.unchecked += 1
                    continue
                asked += 1
                column = encode_column(line, match.start(), server.encoding)
                params = {
                    "textDocument": {"uri": doc.uri},
                    "position": {"line": number, "character": column},
                }
                try:
                    result = await server.request(
                        "textDocument/definition", params, bound=ASK_BOUND, soft=True
                    )
                except (RpcTimeout, ToolError):
                    result = None
                targets = set(locations(result))
                if not targets:
                    out.unresolved.append(where)
                elif targets & declared:
                    out.missed.append(where)
                else:
                    out.others += 1
    return out


def refusal(server: LanguageServer, old: str, mentions: Mentions) -> ToolError | None:
    """The refusal when uses are left that the server resolves to the renamed declaration, or
    sits in files it cannot open (outside its root); None when there are none."""
    parts = []
    for what, spots in (
        ("uses it resolves to the same declaration", mentions.missed),
        ("mentions in files outside its root, which it cannot check", mentions.unopened),
    ):
        if spots:
            more = f" and {len(spots) - 15} more" if len(spots) > 15 else ""
            parts.append(f"{len(spots)} {what} ({', '.join(spots[:15])}{more})")
    if not parts:
        return None
    return ToolError(
        f'refused: {server.spec.id}\'s rename of "{old}" leaves {"; and ".join(parts)} '
        "unchanged, so the build could break; nothing was written. Check lsp status (root=) "
        "for the project it sees, or rename those by hand"
    )


def note(mentions: Mentions, old: str) -> str | None:
    parts = []
    if mentions.unresolved:
        shown = ", ".join(mentions.unresolved[:10])
        more = f" and {len(mentions.unresolved) - 10} more" if len(mentions.unresolved) > 10 else ""
        parts.append(
            f'not renamed: {len(mentions.unresolved)} mentions of "{old}" the server resolves '
            f"to nothing (comments or strings?): {shown}{more}"
        )
    if mentions.others:
        parts.append(f'{mentions.others} mentions of "{old}" elsewhere are other symbols')
    if mentions.unchecked or mentions.partial:
        parts.append(
            f"not checked: {mentions.unchecked} more mentions"
            + (" (the search for them stopped at its bound)" if mentions.partial else "")
        )
    return "; ".join(parts) or None


def declaration(result: Any) -> set[tuple[Path, int]]:
    return set(locations(result))
