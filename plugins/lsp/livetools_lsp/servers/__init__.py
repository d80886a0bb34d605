"""The built-in server specs, one module per language, offered through the family hook like any
third party's. Each module holds `SERVERS`; within a language the first usable spec answers
navigation, so a module lists its servers in order of preference. Modules are gathered in name
order (no shared list to edit when a language is added)."""

from __future__ import annotations

import importlib
import pkgutil

from ..spec import ServerSpec


def _gather() -> tuple[ServerSpec, ...]:
    specs: list[ServerSpec] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        specs += getattr(module, "SERVERS", ())
    return tuple(specs)


BUILTIN: tuple[ServerSpec, ...] = _gather()
