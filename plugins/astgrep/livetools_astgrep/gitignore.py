"""`.gitignore` / `.ignore` rules, enough of git's wildmatch for real projects: `*`, `?`, `[...]`,
`**`, anchoring by a leading or inner `/`, directory-only rules ending in `/`, `!` negation,
last matching rule wins."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .reading import read_regular

IGNORE_FILES = (".gitignore", ".ignore")


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    base: str  # posix path of the ignore file's folder relative to the walk root ("" = root)


def _translate(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = glob.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = glob[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse_rules(text: str, base: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = f"^{body}$" if anchored else f"^(?:.*/)?{body}$"
        try:
            rules.append(Rule(re.compile(regex), negate, dir_only, base))
        except re.error:
            continue
    return rules


def load_rules(folder: Path, base: str) -> list[Rule]:
    rules: list[Rule] = []
    for name in IGNORE_FILES:
        try:  # never blocks: an ignore file that is a FIFO is no ignore file
            text = read_regular(str(folder / name)).decode("utf-8", "replace")
        except OSError:
            continue
        rules.extend(parse_rules(text, base))
    return rules


def ignored(rules: list[Rule], rel: str, is_dir: bool) -> bool:
    """Whether the posix path `rel` (relative to the walk root) is ignored; last match wins."""
    verdict = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.base:
            if not rel.startswith(rule.base + "/"):
                continue
            sub = rel[len(rule.base) + 1 :]
        else:
            sub = rel
        if rule.regex.match(sub):
            verdict = not rule.negate
    return verdict
