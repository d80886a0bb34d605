"""The `.lsp.json` a Claude Code plugin uses to define language servers, read as a project layer
of `lsp.servers` so an existing definition works unchanged:

    {"go": {"command": "gopls", "args": ["serve"], "extensionToLanguage": {".go": "go"}}}

Each entry becomes `[lsp.servers.NAME]` (command + args, extensions with their language ids,
env, settings, initializationOptions). What only Claude Code can honour is refused by name, never
silently dropped: a transport other than stdio, `${CLAUDE_PLUGIN_ROOT}`-style variables."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..files import PathError, read_text_sync
from ..options import OptionError

LABEL = ".lsp.json"
FILE_LIMIT = 1 << 20
# Keys Claude Code reads that mean nothing here (its own restart and timeout policy).
_IGNORED = {"workspaceFolder", "startupTimeout", "shutdownTimeout", "restartOnCrash", "maxRestarts"}
_KNOWN = {"command", "args", "extensionToLanguage", "transport", "env", "settings"}
_KNOWN |= {"initializationOptions", *_IGNORED}
_VARIABLE = re.compile(r"\$\{[A-Z_]+\}")


def read_lsp_json(root: Path) -> dict[str, Any] | None:
    """`{"lsp": {"servers": {...}}}` from the root's `.lsp.json`, None when there is none;
    OptionError naming the entry and key when it cannot be used."""
    path = root / LABEL
    if not path.is_file():
        return None
    try:
        data = json.loads(read_text_sync(path, limit=FILE_LIMIT))
    except ValueError as exc:
        raise OptionError(f"{LABEL}: not valid JSON: {exc}") from None
    except (PathError, OSError) as exc:
        raise OptionError(f"{LABEL}: cannot be read: {exc}") from None
    if isinstance(data, Mapping) and isinstance(data.get("lspServers"), Mapping):
        data = data["lspServers"]  # the plugin.json shape, pasted whole
    if not isinstance(data, Mapping):
        raise OptionError(f"{LABEL}: expected an object of servers by name")
    return {"lsp": {"servers": {str(k): _entry(str(k), v) for k, v in data.items()}}}


def _entry(name: str, value: Any) -> dict[str, Any]:
    def bad(key: str, what: str) -> OptionError:
        return OptionError(f"{LABEL}: server {name!r}: {key} {what}")

    if not isinstance(value, Mapping):
        raise bad("entry", "must be an object")
    unknown = sorted(set(value) - _KNOWN)
    if unknown:
        raise bad(unknown[0], f"is not a key of .lsp.json (known: {', '.join(sorted(_KNOWN))})")
    command, args = value.get("command"), value.get("args", [])
    if not isinstance(command, str) or not command:
        raise bad("command", "must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise bad("args", "must be a list of strings")
    for word in [command, *args]:
        if found := _VARIABLE.search(word):
            raise bad("command", f"uses {found.group()}, which only Claude Code expands")
    if value.get("transport", "stdio") != "stdio":
        raise bad("transport", f"{value['transport']!r} is not supported here (only stdio)")
    languages = value.get("extensionToLanguage")
    if not isinstance(languages, Mapping) or not languages:
        raise bad("extensionToLanguage", 'must map suffixes to language ids ({".go": "go"})')
    entry: dict[str, Any] = {
        "command": [command, *args],
        "extensions": list(languages),
        "language_ids": dict(languages),
    }
    for ours, theirs in (("env", "env"), ("settings", "settings")):
        if theirs in value:
            entry[ours] = value[theirs]
    if "initializationOptions" in value:
        entry["init_options"] = value["initializationOptions"]
    return entry
