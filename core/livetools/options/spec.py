"""How a family declares its run options: one `Option` per name, each with a kind (how a value
is checked and coerced), a default and a one-line doc.

Names are dotted paths: `debug_ttl` is a top-level option, `lsp.request_timeout` lives in the
`lsp` section (given as `--option lsp.request_timeout=5`, `{"lsp": {"request_timeout": 5}}`, or
later `[lsp]` in a configuration file). A section is implied by the names under it; a name may
be both a value and a section (`lsp=false` turns the family off, `lsp.prefer=[...]` configures
it). A `Table` holds keys nobody can list in advance (`call_timeouts.ast_grep`, one per tool).

Kinds are small and typed so the same declaration serves the run-option check on every face and
the configuration loader (user file, pyproject, .livetools.toml, environment): both hand in
strings as often as JSON values, so every kind accepts the string spelling of its values."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class Invalid(ValueError):
    """A value of the wrong type or range; the text completes "expected ...", e.g. "a number of
    seconds"."""


FLAG_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class Kind:
    """How one option's value is checked: `coerce` returns the value the run keeps, or raises
    Invalid whose text says what was expected."""

    expected: str = "a value"

    def coerce(self, value: Any) -> Any:
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.expected!r})"


@dataclass(frozen=True, repr=False)
class Flag(Kind):
    """A boolean: JSON true/false, 1/0, or the strings true/false/yes/no/1/0 (any case), so
    `--option eval=False` means what it says on every face."""

    expected: str = "true or false"

    def coerce(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in FLAG_WORDS:
            return FLAG_WORDS[value.strip().lower()]
        raise Invalid(self.expected)


@dataclass(frozen=True, repr=False)
class Number(Kind):
    """A finite number (a JSON number or a numeric string) above `minimum` (or at it when
    `inclusive`); `unit` words the message ("a number of seconds")."""

    unit: str = "seconds"
    minimum: float = 0.0
    inclusive: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        what = f"a number of {self.unit}" if self.unit else "a number"
        if self.minimum == 0 and not self.inclusive:
            return f"{what} above 0"
        return (
            f"{what} of at least {self.minimum:g}"
            if self.inclusive
            else f"{what} above {self.minimum:g}"
        )

    def coerce(self, value: Any) -> float:
        number = _number(value)
        if number is None or not math.isfinite(number):
            raise Invalid(self.expected)
        if number < self.minimum or (number == self.minimum and not self.inclusive):
            raise Invalid(self.expected)
        return number


@dataclass(frozen=True, repr=False)
class Integer(Kind):
    """A whole number (JSON or string) of at least `minimum`."""

    minimum: int = 0
    unit: str = ""

    @property
    def expected(self) -> str:  # type: ignore[override]
        unit = f" of {self.unit}" if self.unit else ""
        return f"a whole number{unit} of at least {self.minimum}"

    def coerce(self, value: Any) -> int:
        number = _number(value)
        if number is None or not math.isfinite(number) or number != int(number):
            raise Invalid(self.expected)
        if number < self.minimum:
            raise Invalid(self.expected)
        return int(number)


@dataclass(frozen=True, repr=False)
class Text(Kind):
    """A non-empty string."""

    expected: str = "a string"

    def coerce(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Invalid(self.expected)
        return value


@dataclass(frozen=True, repr=False)
class Choice(Kind):
    """One of fixed words (any case; kept lower-case)."""

    choices: tuple[str, ...] = ()

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(self.choices)

    def coerce(self, value: Any) -> str:
        if isinstance(value, str) and value.strip().lower() in self.choices:
            return value.strip().lower()
        raise Invalid(self.expected)


@dataclass(frozen=True, repr=False)
class Names(Kind):
    """A list of names: a JSON array of strings or one comma-separated string."""

    expected: str = 'a list of names, e.g. ["pylsp"] or pylsp,ruff'

    def coerce(self, value: Any) -> list[str]:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        raise Invalid(self.expected)


@dataclass(frozen=True, repr=False)
class Table(Kind):
    """Keys nobody lists in advance, each value of one kind: `call_timeouts.ast_grep=60`."""

    of: Kind = field(default_factory=Number)
    key: str = "NAME"

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"a table of {self.key} = {self.of.expected}"

    def coerce(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise Invalid(self.expected)
        out: dict[str, Any] = {}
        for key, item in value.items():
            try:
                out[str(key)] = self.of.coerce(item)
            except Invalid as exc:
                raise Invalid(f"{self.key} {str(key)[:40]!r}: {exc}") from None
        return out


@dataclass(frozen=True, repr=False)
class Settings(Kind):
    """A table its family checks itself (a worker backend's settings, a sandbox's shape)."""

    expected: str = "a table of settings"

    def coerce(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise Invalid(self.expected)
        return dict(value)


@dataclass(frozen=True, repr=False)
class OffOr(Kind):
    """`false` (any spelling of it) turns the thing off; anything else is `then`'s to check."""

    then: Kind = field(default_factory=Text)

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"false or {self.then.expected}"

    def coerce(self, value: Any) -> Any:
        if value is False or (isinstance(value, str) and value.strip().lower() in ("false", "no")):
            return False
        try:
            return self.then.coerce(value)
        except Invalid:
            raise Invalid(self.expected) from None


@dataclass(frozen=True, repr=False)
class Check(Kind):
    """Anything else: `check(value)` returns the value to keep or raises ValueError whose text
    completes "expected ..."."""

    check: Callable[[Any], Any] = lambda v: v
    expected: str = "a value"

    def coerce(self, value: Any) -> Any:
        try:
            return self.check(value)
        except Invalid:
            raise
        except ValueError as exc:
            raise Invalid(str(exc) or self.expected) from None


def entry_table(
    value: Any, shape: str, keys: tuple[str, ...], lists: Mapping[str, str]
) -> dict[str, Any]:
    """A configuration entry (`[lsp.servers.NAME]`, `[debug.adapters.NAME]`): a table of known
    keys whose `lists` are lists of non-empty strings; Invalid names the first key that is not."""
    if not isinstance(value, Mapping):
        raise Invalid(shape)
    unknown = [k for k in value if k not in keys]
    if unknown:
        raise Invalid(f"only the keys {', '.join(keys)} (not {', '.join(map(str, unknown))})")
    for key, what in lists.items():
        item = value.get(key)
        if item is not None and not (
            isinstance(item, list) and all(isinstance(x, str) and x for x in item)
        ):
            raise Invalid(f"{key} as {what}")
    return dict(value)


@dataclass(frozen=True)
class Option:
    """One run option a family reads. `family` is filled in by the host from the plugin that
    declared it (it names the family in messages and, later, in the configuration's status)."""

    name: str
    kind: Kind
    default: Any = None
    doc: str = ""
    family: str = ""

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None
