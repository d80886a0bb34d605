"""One configuration for a run: every layer checked against the families' option declarations,
then merged key by key, each value remembering where it came from.

A bad entry is one error naming its file, the option (its section and key) and the expected
type: `.livetools.toml: option lsp.servers.jdtls: expected command as a list of strings, got
…`. `trust_project_config = false` (user file, environment or run option: never the project's
own files) drops what the checkout's files say about programs to start (`PROGRAM_OPTIONS`) and
says so in the notes, so a harness can open an untrusted checkout without running what it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..options import Declared, OptionError, validate
from .layers import Layer, read_layers

TRUST = "trust_project_config"
# Options whose values name a program the run would start.
PROGRAM_OPTIONS = ("lsp.servers", "debug.adapters")


@dataclass
class Loaded:
    options: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)  # dotted name -> layer label
    notes: list[str] = field(default_factory=list)


def load_config(root: Path, options: Any, declared: Declared) -> Loaded:
    """The run's options from every layer (see layers.py), or OptionError naming the first
    layer with a bad entry."""
    checked_run = validate(options, declared)  # the run option's own errors, as before
    layers = read_layers(root, checked_run)
    checked: list[tuple[Layer, dict[str, Any]]] = []
    for layer in layers:
        try:
            values = validate(layer.values, declared)
        except OptionError as exc:
            if layer.label == "run option":
                raise
            raise OptionError(f"{layer.label}: {exc}") from None
        checked.append((layer, values))
    trusted = True
    for layer, values in checked:
        if not layer.project and TRUST in values:
            trusted = bool(values[TRUST])
    notes: list[str] = []
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for layer, values in checked:
        if layer.project and TRUST in values:
            values = {k: v for k, v in values.items() if k != TRUST}
            notes.append(f"{layer.label}: {TRUST} is taken from the user file or the run only")
        if layer.project and not trusted:
            values, dropped = _without_programs(values)
            if dropped:
                notes.append(
                    f"{layer.label}: ignored {', '.join(dropped)} ({TRUST} = false: the "
                    "project's files may not name programs to start)"
                )
        _merge(merged, values, sources, layer.label, ())
    return Loaded(merged, sources, notes)


def _without_programs(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    out = dict(values)
    dropped: list[str] = []
    for name in PROGRAM_OPTIONS:
        section, key = name.split(".")
        table = out.get(section)
        if isinstance(table, Mapping) and key in table:
            out[section] = {k: v for k, v in table.items() if k != key}
            dropped.append(name)
    return out, dropped


def _merge(
    into: dict[str, Any],
    values: Mapping[str, Any],
    sources: dict[str, str],
    label: str,
    prefix: tuple[str, ...],
) -> None:
    """Key by key: a table merges into a table, anything else replaces."""
    for key, value in values.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value, sources, label, path)
            continue
        into[key] = _copy(value)
        for leaf in _leaves(value, path):
            sources[".".join(leaf)] = label


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _leaves(value: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(value, Mapping) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, str(k)))]
    return [path]
