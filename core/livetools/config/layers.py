"""Where configuration comes from, earliest first (a later layer wins key by key): the user's file,
the project's `.lsp.json` (Claude Code's shape, lsp_json.py), its `pyproject.toml`
`[tool.livetools]`, its `.livetools.toml`, the environment (`LIVETOOLS_OPTIONS`, a JSON object),
the run option. Each layer is a nested table of run options under the names the families declare
(`[lsp.servers.NAME]` is `lsp.servers`).

`[eval]` and `[vibe]` tables in the project's files are those families' own settings, not run
options: their readers take them through `project_table`, so every project file is read (bounded,
FIFO-safe) and reported the same way.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import PathError, read_text_sync
from ..options import OptionError
from .lsp_json import LABEL as LSP_JSON
from .lsp_json import read_lsp_json

ENV = "LIVETOOLS_OPTIONS"
FILE_LIMIT = 1 << 20
OWN_TABLES = ("eval", "vibe")  # families that read their table of the project's files themselves


@dataclass
class Layer:
    label: str  # "user file ~/.config/livetools/config.toml", ".livetools.toml", ...
    values: dict[str, Any]
    project: bool = False  # from the checkout: may not start programs when it is untrusted


def user_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME", "")
    home = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return home / "livetools" / "config.toml"


def _toml(path: Path, label: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return tomllib.loads(read_text_sync(path, limit=FILE_LIMIT))
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"{label}: not valid TOML: {exc}") from None
    except (PathError, OSError) as exc:
        raise OptionError(f"{label}: cannot be read: {exc}") from None


def project_table(path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The table at `keys` of a project file (`("tool", "livetools", "vibe")` of pyproject.toml),
    None when the file or the table is absent; OptionError naming the file (and the table when
    it is not one) when it cannot be read."""
    if not path.is_file():
        return None
    try:
        data: Any = tomllib.loads(read_text_sync(path, limit=FILE_LIMIT))
    except (tomllib.TOMLDecodeError, PathError, OSError) as exc:
        raise OptionError(f"{path.name}: cannot read: {exc}") from None
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    if not isinstance(data, dict):
        raise OptionError(f"{path.name} [{'.'.join(keys)}]: expected a table")
    return data


def _options_only(table: Mapping[str, Any]) -> dict[str, Any]:
    """A project file's table without the families' own settings tables (`[eval]`, `[vibe]`);
    `eval = false` (a value, not a table) is a run option and stays."""
    return {k: v for k, v in table.items() if not (k in OWN_TABLES and isinstance(v, Mapping))}


def read_layers(root: Path, options: Mapping[str, Any] | None) -> list[Layer]:
    layers: list[Layer] = []
    user = user_file()
    found = _toml(user, f"user file {user}")
    if found:
        layers.append(Layer(f"user file {user}", found))
    claude = read_lsp_json(root)  # Claude Code's server definitions: below our own files
    if claude:
        layers.append(Layer(LSP_JSON, claude, True))
    pyproject = _toml(root / "pyproject.toml", "pyproject.toml")
    table = ((pyproject or {}).get("tool") or {}).get("livetools")
    if isinstance(table, Mapping) and table:
        layers.append(Layer("pyproject.toml [tool.livetools]", _options_only(table), True))
    dotfile = _toml(root / ".livetools.toml", ".livetools.toml")
    if dotfile:
        layers.append(Layer(".livetools.toml", _options_only(dotfile), True))
    raw = os.environ.get(ENV, "").strip()
    if raw:
        try:
            env = json.loads(raw)
        except ValueError as exc:
            raise OptionError(f"${ENV}: not a JSON object: {exc}") from None
        if not isinstance(env, dict):
            raise OptionError(f"${ENV}: expected a JSON object of options, got {raw[:60]!r}")
        layers.append(Layer(f"${ENV}", env))
    if options:
        layers.append(Layer("run option", dict(options)))
    return layers
