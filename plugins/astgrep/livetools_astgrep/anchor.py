"""Why a search found nothing although the pattern's text is in the files.

An empty answer is read as "this code does not exist". When the pattern's anchor (its rarest
literal token) does occur in the files searched, the shape the pattern compiled to is what
failed, and the model should look at those lines instead of concluding the code is absent.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from .pattern import Pattern

READ_BUDGET = 64 << 20  # bytes read to count the anchor; beyond that the count is a lower bound
EXAMPLES = 3


@dataclasses.dataclass
class Anchor:
    token: str
    occurrences: int
    files: int
    examples: list[str]  # file:line of the first occurrences
    pattern: Pattern
    partial: bool

    def sentence(self) -> str:
        at_least = "at least " if self.partial else ""
        where = ", ".join(self.examples)
        return (
            f"0 matches, but the pattern's anchor `{self.token}` occurs {at_least}"
            f"{self.occurrences} times in {self.files} searched files (e.g. {where}), so the "
            f"pattern's shape does not match there (it compiled to "
            f"{self.pattern.describe()}): look at one of those lines and write the pattern as "
            "that code reads, with $NAME where it varies, or search a smaller part of it (such "
            "as the call alone) first"
        )


def find_anchor(root: Path, pattern: Pattern, rels: list[str]) -> Anchor | None:
    """The pattern's rarest literal token counted over the files searched, or None when it has
    none or it occurs nowhere."""
    tokens = [t for t in (*pattern.tokens, *pattern.keywords) if t.strip()]
    if not tokens or not rels:
        return None
    counts = dict.fromkeys(tokens, 0)
    files = dict.fromkeys(tokens, 0)
    seen: dict[bytes, list[str]] = {t: [] for t in tokens}
    read = 0
    partial = False
    for rel in rels:
        if read > READ_BUDGET:
            partial = True
            break
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        read += len(data)
        for token in tokens:
            n = data.count(token)
            if not n:
                continue
            counts[token] += n
            files[token] += 1
            if len(seen[token]) < EXAMPLES:
                line = data.count(b"\n", 0, data.find(token)) + 1
                seen[token].append(f"{rel}:{line}")
    present = [t for t in tokens if counts[t]]
    if not present:
        return None
    token = min(present, key=lambda t: (counts[t], -len(t)))
    text = token.decode("utf-8", "replace")
    return Anchor(text, counts[token], files[token], seen[token], pattern, partial)


def explain_empty(root: Path, parts: list[Any]) -> Anchor | None:
    """For a search with no match: the anchor found in the most files over every language's
    part (each part has `pattern` and `outcomes`, whose parsed files have status "ok")."""
    return _best(
        root, [(p.pattern, [o.rel for o in p.outcomes if o.status == "ok"]) for p in parts]
    )


def explain_unmatched(
    root: Path, groups: dict[str, list[Any]], patterns: dict[str, Pattern]
) -> Anchor | None:
    """The same for `ast_edit`, which has each grammar's files (jobs with `rel`) and pattern."""
    return _best(
        root,
        [(patterns[g], [job.rel for job in jobs]) for g, jobs in groups.items() if g in patterns],
    )


def _best(root: Path, searched: list[tuple[Pattern, list[str]]]) -> Anchor | None:
    best: Anchor | None = None
    for pattern, rels in searched:
        found = find_anchor(root, pattern, rels)
        if found is not None and (best is None or found.occurrences > best.occurrences):
            best = found
    return best
