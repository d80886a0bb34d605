"""The per-run diagnostics ledger: what the run already knows about each file.

Keyed by (severity, code, message) per file and source (the server that reported it: a linter's
F401 and a type checker's error are separate accounts). Position is deliberately left out, so a
diagnostic that merely moved because lines were inserted above it is not news; counted, so a
second identical error is. Only errors and warnings are kept; hints and "unnecessary" or
"deprecated"-tagged items are noise for an agent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
_UNNECESSARY = 1
# Codes whose items depend on which files the server has checked, not only on the file's text:
# (based)pyright attaches an import cycle to the cycle's first file by whichever open file's
# check finds it, at most 4 a file, so a file's cycles grow as other files are opened and checked
# (on cattrs a rename, and its undo in a fresh run, "introduced" 3-5 cycles the CLI counted before
# and after). So more of them in a file that had some is not news; a file in none before that is
# in one now is (a write that adds the import closing a cycle).
UNATTRIBUTABLE = frozenset({"reportImportCycles"})


@dataclass(frozen=True)
class Item:
    """One diagnostic as the model reads it (1-based line)."""

    line: int
    severity: str
    code: str | None
    message: str
    source: str | None
    again: bool = False  # new to this write, but the file had it when the run first saw it

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.severity, self.code, self.message)


def to_item(raw: dict[str, Any]) -> Item:
    start = (raw.get("range") or {}).get("start") or {}
    code = raw.get("code")
    if isinstance(code, dict):  # some servers send {value, target}
        code = code.get("value")
    return Item(
        line=int(start.get("line", 0)) + 1,
        severity=SEVERITY.get(int(raw.get("severity") or 1), "error"),
        code=str(code) if code not in (None, "") else None,
        message=" ".join(str(raw.get("message", "")).split()),
        source=raw.get("source"),
    )


def significant(raw: list[dict[str, Any]], linter: bool = False) -> list[Item]:
    """Errors and warnings, without items tagged unnecessary (faded-out code), by line. A
    linter's tagged item is its finding (ruff tags F401, the unused import), so it is kept."""
    items = []
    for diag in raw:
        if int(diag.get("severity") or 1) > 2:
            continue
        if not linter and _UNNECESSARY in (diag.get("tags") or []):
            continue
        items.append(to_item(diag))
    return sorted(items, key=lambda i: (i.line, i.severity, i.message))


class Ledger:
    """Per file and source, the counts of each diagnostic key the run has seen."""

    def __init__(self) -> None:
        self._known: dict[tuple[Path, str], Counter[tuple[str, str | None, str]]] = {}
        # What each file had when the run first saw it: an item back to that count is "again"
        # (a warning an error had hidden comes back with the fix; it is not the fix's doing).
        self._first: dict[tuple[Path, str], Counter[tuple[str, str | None, str]]] = {}
        self._renamed: tuple[re.Pattern[str], str] | None = None

    @contextlib.contextmanager
    def renaming(self, old: str, new: str) -> Iterator[None]:
        """During a rename's write, a known diagnostic whose message names `old` is the same
        diagnostic when it names `new` ("make_dict_structure_fn" is not defined → "…_fn2" …):
        cattrs' 307 old errors were reported as 31 new ones."""
        self._renamed = (re.compile(rf"(?<![\w$]){re.escape(old)}(?![\w$])"), new)
        try:
            yield
        finally:
            self._renamed = None

    def knows(self, path: Path, source: str = "") -> bool:
        return (path, source) in self._known

    def seed(self, path: Path, items: list[Item], source: str = "") -> None:
        """Record the state before a write without reporting it."""
        self._known[(path, source)] = Counter(i.key for i in items)
        self._first.setdefault((path, source), Counter(i.key for i in items))

    def since(self, path: Path, old: list[Item], now: list[Item], source: str = "") -> list[Item]:
        """`news` of `now` against `old`, a file's state just before the write (an includer the
        write opened has no other): "again" still against what the run first saw of it, `old`
        if nothing earlier (CLI11's App.hpp, first seen before a header edit that hid its
        warnings: the undo called them new)."""
        self._first.setdefault((path, source), Counter(i.key for i in old))
        self._known[(path, source)] = Counter(i.key for i in old)
        return self.news(path, now, source)

    def news(self, path: Path, items: list[Item], source: str = "") -> list[Item]:
        """The items beyond what was known (per key, the extra occurrences, latest lines
        first counted as new), then remember the current state."""
        known = self._known.get((path, source), Counter())
        if self._renamed is not None:
            pattern, new = self._renamed
            mapped: Counter[tuple[str, str | None, str]] = Counter()
            for (severity, code, message), count in known.items():
                mapped[(severity, code, pattern.sub(new, message))] += count
            known = mapped
        now = Counter(i.key for i in items)
        first = self._first.setdefault((path, source), Counter(known))
        fresh: list[Item] = []
        budget = {key: count - known.get(key, 0) for key, count in now.items()}
        had = {code for (_, code, _), count in known.items() if code in UNATTRIBUTABLE and count}
        for item in reversed(items):
            if budget.get(item.key, 0) > 0 and item.code not in had:
                again = now[item.key] - budget[item.key] < first.get(item.key, 0)
                fresh.append(dataclasses.replace(item, again=again))
                budget[item.key] -= 1
        self._known[(path, source)] = now
        return sorted(fresh, key=lambda i: (i.line, i.severity, i.message))

    def forget(self, path: Path) -> None:
        for key in [k for k in self._known if k[0] == path]:
            del self._known[key]
        for key in [k for k in self._first if k[0] == path]:
            del self._first[key]

    def clear(self) -> None:
        self._known.clear()
        self._first.clear()
