"""Metavariable syntax: `$NAME` (one named node), `$$NAME` (one node, named or not), `$$$NAME`
(a run of siblings), `$_` / `$$$` (match without binding). Names are `[A-Z_][A-Z0-9_]*`; a name
starting with `_` does not bind (as in ast-grep), so `$_F($_F)` may capture different things."""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = r"[A-Z_][A-Z0-9_]*"
_SOURCE = re.compile(r"\$\$\$(?:" + NAME + r")?|\$\$" + NAME + r"|\$" + NAME)
_LOWER = re.compile(r"\$+[a-z][A-Za-z0-9_]*")

SINGLE = 1  # $A: one named node
ANY = 2  # $$A: one node, named or unnamed
MULTI = 3  # $$$A: zero or more sibling nodes


@dataclass(frozen=True)
class MetaVar:
    kind: int
    name: str  # "" for `$$$`; names starting with "_" never bind

    @property
    def binds(self) -> bool:
        return bool(self.name) and not self.name.startswith("_")

    def source(self) -> str:
        return "$" * self.kind + self.name


def preprocess(pattern: str, char: str) -> str:
    """Rewrite metavariables into identifiers the grammar accepts (`$A` -> `µA` in Python)."""
    if char == "$":
        return pattern
    return _SOURCE.sub(lambda m: m.group(0).replace("$", char), pattern)


def detector(char: str) -> re.Pattern[str]:
    """Matches the whole text of a pattern node that is a metavariable, after `preprocess`."""
    c = re.escape(char)
    return re.compile(rf"^(?:({c}{c}{c})({NAME})?|({c}{c})({NAME})|({c})({NAME}))$")


def parse(text: str, pattern: re.Pattern[str]) -> MetaVar | None:
    m = pattern.match(text)
    if m is None:
        return None
    if m.group(1):
        return MetaVar(MULTI, m.group(2) or "")
    if m.group(3):
        return MetaVar(ANY, m.group(4))
    return MetaVar(SINGLE, m.group(6))


def lowercase_hint(pattern: str) -> str:
    """A hint when the pattern holds `$name`: metavariable names are upper case."""
    m = _LOWER.search(pattern)
    if m is None:
        return ""
    upper = "$" + m.group(0).lstrip("$").upper()
    return f" ({m.group(0)} is not a metavariable: names are upper case, like {upper})"


TEMPLATE = _SOURCE


def template_names(template: str) -> list[str]:
    """The metavariable names a rewrite template uses, in order."""
    return [m.group(0).lstrip("$") for m in TEMPLATE.finditer(template)]
