"""Checking a run's options against what the installed families declare, before anything starts.

Every face calls `validate` through `Host.open_run`: the CLI's `--option`, the session and stdio
server's command line, POST /runs, a resident's spec, the Python API. What it returns is what the
run keeps in `run.options` (values coerced: `"false"` is False, `"60"` is 60.0), so a family's
code reads proper types. Anything wrong raises OptionError with one sentence naming every bad
option, which the faces turn into their usage error (exit 2, HTTP 400).

Unknown names are refused with the nearest known name. A name whose first word is a built-in
family that is not installed is refused naming the distribution to install; the options of a
family that is installed but blocked (LIVETOOLS_DISABLE_PLUGINS / LIVETOOLS_PLUGINS) or failed to
load pass unchecked: they have no effect, and a shared configuration should not break on them."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..results import scrub
from .spec import Invalid, Option, Settings, Table

# The families of this repository, by the first word of their options: a name starting with one
# of them while its plugin is absent is a missing install, not a misspelling.
BUILTIN_FAMILIES = {
    "lsp": "livetools-lsp",
    "astgrep": "livetools-astgrep",
    "debug": "livetools-debug",
    "eval": "livetools-eval",
    "ask": "livetools-ask",
    "vibe": "livetools-vibe",
}


class OptionError(ValueError):
    """Run options the installed families do not accept; the text is one sentence naming each
    bad option and what was expected."""


@dataclass
class Declared:
    """Every declared option by dotted name, and the families whose options pass unchecked."""

    options: dict[str, Option] = field(default_factory=dict)
    families: set[str] = field(default_factory=set)  # plugins that are loaded
    inactive: set[str] = field(default_factory=set)  # blocked or failed to load
    problems: list[str] = field(default_factory=list)  # declarations that clash or fail

    def add(self, option: Option, family: str) -> None:
        option = Option(option.name, option.kind, option.default, option.doc, family)
        known = self.options.get(option.name)
        if known is not None and known.family != family:
            self.problems.append(
                f"plugin {family}: option {option.name} is already declared by {known.family}"
            )
            return
        self.options[option.name] = option

    def children(self, name: str) -> list[str]:
        """The next words under section `name` ("" for the top level)."""
        prefix = f"{name}." if name else ""
        found = {n[len(prefix) :].split(".")[0] for n in self.options if n.startswith(prefix)}
        return sorted(found)

    def section(self, name: str) -> bool:
        return any(n.startswith(name + ".") for n in self.options)


def declared_by(impls: Iterable[Any], loaded: Iterable[str], inactive: Iterable[str]) -> Declared:
    """The declarations of every `livetools_options` implementation, each stamped with its
    plugin's name; a plugin whose hook fails is recorded and its options pass unchecked."""
    out = Declared(families=set(loaded), inactive=set(inactive))
    for impl in impls:
        try:
            answer = impl.function()
        except Exception as exc:
            out.problems.append(
                f"plugin {impl.plugin_name}: livetools_options failed: {type(exc).__name__}: {exc}"
            )
            out.inactive.add(impl.plugin_name)
            continue
        items = [] if answer is None else [answer] if isinstance(answer, Option) else answer
        for option in items:
            if isinstance(option, Option):
                out.add(option, impl.plugin_name)
    return out


def validate(options: Mapping[str, Any] | None, declared: Declared) -> dict[str, Any]:
    """The options as the run keeps them (coerced), or OptionError naming every bad one."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise OptionError(f"run options must be an object of name = value, got {_got(options)}")
    problems: list[str] = []
    checked = _section((), options, declared, problems)
    if problems:
        raise OptionError(scrub("; ".join(problems[:8]) + _more(len(problems) - 8)))
    return checked


def _section(
    prefix: tuple[str, ...], values: Mapping[Any, Any], declared: Declared, problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        word = str(key)
        name = ".".join((*prefix, word))
        option = declared.options.get(name)
        if option is not None and isinstance(option.kind, Table) and isinstance(value, Mapping):
            out[word] = _table(name, option, value, problems)
        elif option is not None and isinstance(option.kind, Settings):
            out[word] = _coerce(name, option, value, problems)
        elif isinstance(value, Mapping) and declared.section(name):
            out[word] = _section((*prefix, word), value, declared, problems)
        elif option is not None:
            out[word] = _coerce(name, option, value, problems)
        elif declared.section(name):
            inside = ", ".join(declared.children(name))
            problems.append(f"option {name}: expected a table of {inside}, got {_got(value)}")
        elif _unchecked(prefix, word, declared):
            out[word] = value
        else:
            problems.append(_unknown(prefix, word, declared))
    return out


def _table(
    name: str, option: Option, value: Mapping[Any, Any], problems: list[str]
) -> dict[str, Any]:
    kind = option.kind
    assert isinstance(kind, Table)
    out: dict[str, Any] = {}
    for key, item in value.items():
        try:
            out[str(key)] = kind.of.coerce(item)
        except Invalid as exc:
            problems.append(f"option {name}.{str(key)[:60]}: expected {exc}, got {_got(item)}")
    return out


def _coerce(name: str, option: Option, value: Any, problems: list[str]) -> Any:
    try:
        return option.kind.coerce(value)
    except Invalid as exc:
        problems.append(f"option {name}: expected {exc}, got {_got(value)}")
        return value


def _family(word: str) -> str:
    return re.split(r"[._]", word, maxsplit=1)[0]


def _unchecked(prefix: tuple[str, ...], word: str, declared: Declared) -> bool:
    """An option of a family that is installed but blocked or failed to load."""
    first = prefix[0] if prefix else word
    return _family(first) in declared.inactive or first in declared.inactive


def _unknown(prefix: tuple[str, ...], word: str, declared: Declared) -> str:
    name = ".".join((*prefix, word))
    family = _family(prefix[0] if prefix else word)
    if family in BUILTIN_FAMILIES and family not in declared.families:
        return (
            f"option {name}: the {family} family is not installed (install "
            f"{BUILTIN_FAMILIES[family]}, or drop the option)"
        )
    section = ".".join(prefix)
    words = declared.children(section)
    near = difflib.get_close_matches(word, words, n=1, cutoff=0.6)
    where = f" in section {section}" if section else ""
    if near:
        return f"unknown option {name}{where}: did you mean {'.'.join((*prefix, near[0]))}?"
    listed = ", ".join(words[:40]) + (", …" if len(words) > 40 else "")
    return f"unknown option {name}{where}; known: {listed or 'none'}"


def nearest(word: str, known: list[str], what: str = "name") -> str:
    """ "no such tool; did you mean X?" or the list of known names (capped)."""
    near = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if near:
        return f"no such {what}; did you mean {near[0]}?"
    listed = ", ".join(sorted(known)[:40]) + (", …" if len(known) > 40 else "")
    return f"no such {what}; known: {listed or 'none'}"


def _got(value: Any) -> str:
    if isinstance(value, str):
        text = repr(value if len(value) <= 60 else value[:60] + "…")
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (ValueError, RecursionError):
            text = type(value).__name__
        text = text if len(text) <= 60 else text[:60] + "…"
    return text


def _more(n: int) -> str:
    return f"; and {n} more" if n > 0 else ""


def describe(declared: Declared) -> list[dict[str, Any]]:
    """Every declared option as plain data (name, family, expected, default, doc): for docs,
    `status --json` and the configuration loader."""
    return [
        {
            "name": o.name,
            "family": o.family,
            "expected": o.kind.expected,
            "default": o.default,
            "doc": o.doc,
        }
        for o in sorted(declared.options.values(), key=lambda o: o.name)
    ]
