"""Language servers defined by configuration (`[lsp.servers.NAME]` in any configuration layer):
checked when the run opens (one error naming the key and its expected type), turned into the
same `ServerSpec` a built-in or a plugin's server is, so marker, binary, probe, readiness,
sandbox mapping, paging and the ledger all apply. An entry with the id of a known server changes
only the keys it gives; `disabled = true` removes it.

    [lsp.servers.jdtls]
    command = ["jdtls"]
    extensions = [".java"]
    root_markers = ["pom.xml", "build.gradle"]

`filenames = ["Dockerfile"]` serves files by their whole name. `linter = true` makes a server
diagnostics-only, run beside the one that answers navigation; a root marker `NAME:TEXT`
(`pyproject.toml:[tool.ruff`) matches a file NAME that holds TEXT.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from livetools.options import Invalid, entry_table

from .spec import ServerSpec

_LISTS = {
    "command": "a list of strings (the argv)",
    "extensions": 'a list of file suffixes such as [".java"]',
    "filenames": 'a list of whole file names such as ["Dockerfile"]',
    "root_markers": "a list of file names",
    "checker": "a list of strings (the project checker's argv; {file} per file)",
    "probe": "a list of strings (the health check's argv)",
}
_TABLES = {"settings", "init_options", "env", "language_ids"}
_FLAGS = {"disabled", "linter"}
_KEYS = (*_LISTS, *_TABLES, *_FLAGS, "warmup")


def check_entry(value: Any) -> dict[str, Any]:
    """One `[lsp.servers.NAME]` table, checked (the Table's Check kind)."""
    value = entry_table(value, "a table with command, extensions, root_markers, …", _KEYS, _LISTS)
    for key, what in _LISTS.items():
        if value.get(key) == []:
            raise Invalid(f"{key} as {what}")
    for key in _TABLES:
        if key in value and not isinstance(value[key], Mapping):
            raise Invalid(f"{key} as a table")
    for flag in _FLAGS:
        if flag in value and not isinstance(value[flag], bool):
            raise Invalid(f"{flag} as true or false")
    if "warmup" in value and (
        isinstance(value["warmup"], bool) or not isinstance(value["warmup"], int | float)
    ):
        raise Invalid("warmup as a number of seconds")
    for suffix in value.get("extensions") or []:
        if not suffix.startswith("."):
            raise Invalid(f'extensions as suffixes starting with "." (not {suffix!r})')
    for name in value.get("filenames") or []:
        if not name or "/" in name or name.startswith("."):
            raise Invalid(f'filenames as whole file names such as "Dockerfile" (not {name!r})')
    return dict(value)


def apply(specs: list[ServerSpec], entries: Mapping[str, Mapping[str, Any]]) -> list[ServerSpec]:
    """The specs with the configured entries applied: changed in place where the id is known,
    added before the others where new (a configured server is what the user asked for),
    removed where disabled."""
    by_id = {s.id: s for s in specs}
    added: list[ServerSpec] = []
    for name, entry in entries.items():
        if entry.get("disabled"):
            by_id.pop(name, None)
            continue
        known = by_id.get(name)
        if known is None:
            if "command" not in entry or "extensions" not in entry:
                continue  # checked at run open (`missing`): never reached
            spec = _new(name, entry)
            added.append(spec)
            by_id[name] = spec
        else:
            by_id[name] = _changed(known, entry)
    kept = [by_id[s.id] for s in specs if s.id in by_id]
    return added + kept


def missing(entries: Mapping[str, Mapping[str, Any]], known: set[str]) -> list[str]:
    """Entries for servers nobody defines that lack what a new server needs."""
    return [
        f"lsp.servers.{name}: a new server needs command and extensions"
        for name, entry in entries.items()
        if name not in known
        and not entry.get("disabled")
        and ("command" not in entry or "extensions" not in entry)
    ]


def _extensions(entry: Mapping[str, Any]) -> dict[str, str]:
    """Suffixes and whole file names, each with its languageId."""
    ids = dict(entry.get("language_ids") or {})
    keys = [*(entry.get("extensions") or []), *(entry.get("filenames") or [])]
    return {k: str(ids.get(k, k.lstrip(".").lower())) for k in keys}


def _new(name: str, entry: Mapping[str, Any]) -> ServerSpec:
    return ServerSpec(
        id=name,
        command=tuple(entry["command"]),
        extensions=_extensions(entry),
        markers=tuple(entry.get("root_markers") or ()),
        probe=tuple(entry["probe"]) if entry.get("probe") else None,
        init_options=dict(entry["init_options"]) if "init_options" in entry else None,
        settings=dict(entry.get("settings") or {}),
        checker=tuple(entry["checker"]) if entry.get("checker") else None,
        env={str(k): str(v) for k, v in (entry.get("env") or {}).items()},
        warmup=float(entry.get("warmup", 3.0)),
        linter=bool(entry.get("linter", False)),
    )


def _changed(spec: ServerSpec, entry: Mapping[str, Any]) -> ServerSpec:
    changes: dict[str, Any] = {}
    if "command" in entry:
        changes["command"] = tuple(entry["command"])
    if "extensions" in entry:
        changes["extensions"] = _extensions(entry)
    elif "filenames" in entry:  # names added to the server's own suffixes
        changes["extensions"] = {**spec.extensions, **_extensions(entry)}
    if "root_markers" in entry:
        changes["markers"] = tuple(entry["root_markers"])
    if "probe" in entry:
        changes["probe"] = tuple(entry["probe"])
    if "checker" in entry:
        changes["checker"] = tuple(entry["checker"])
    if "init_options" in entry:
        changes["init_options"] = dict(entry["init_options"])
    if "settings" in entry:
        changes["settings"] = {**spec.settings, **entry["settings"]}
    if "env" in entry:
        changes["env"] = {**spec.env, **{str(k): str(v) for k, v in entry["env"].items()}}
    if "warmup" in entry:
        changes["warmup"] = float(entry["warmup"])
    if "linter" in entry:
        changes["linter"] = bool(entry["linter"])
    return dataclasses.replace(spec, **changes)
