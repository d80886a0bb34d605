"""The Python environment a pyright-family server sees: the project's interpreter and the project's
own config, never ours over theirs.

Measured on click 8.1.7 (src layout, no config of its own): pyright reads a client's
`analysis` section with `autoSearchPaths` defaulting to *false* once the section exists, so pushing
any analysis setting (even `diagnosticMode` alone) dropped the automatic `src` search path and
`definition` of click's own `echo` answered the copy installed in the interpreter's site-packages.
So the search-path defaults are pushed explicitly, and only where the project has no config."""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livetools.files import read_text_sync

_TOOL_TABLES = ("pyright", "basedpyright")
# What a project config decides; ours are only defaults for a project that has none.
_CONFIG_DECIDES = ("typeCheckingMode",)
_SEARCH_DEFAULTS = {"autoSearchPaths": True, "useLibraryCodeForTypes": True}


@dataclass(frozen=True)
class PythonEnv:
    interpreter: str | None  # absolute path, or None when none was found
    source: str  # ".venv", "venv", "VIRTUAL_ENV", "PATH" or "none"
    config: str | None  # the project file holding pyright settings, relative to the root
    config_venv: bool  # that config names its own venv: our interpreter must not override it

    def describe(self) -> str:
        where = f"{self.interpreter} (from {self.source})" if self.interpreter else "none found"
        own = f"; project config {self.config} wins" if self.config else ""
        return f"python: {where}{own}"


def _venv_python(venv: Path) -> Path | None:
    for rel in ("bin/python", "Scripts/python.exe"):
        candidate = venv / rel
        if candidate.is_file():
            return candidate
    return None


def find_interpreter(root: Path) -> tuple[str | None, str]:
    """The debug family's rule: project `.venv`/`venv`, then $VIRTUAL_ENV, then PATH."""
    for name in (".venv", "venv"):
        hit = _venv_python(root / name)
        if hit:
            return str(hit), name
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        hit = _venv_python(Path(active))
        if hit:
            return str(hit), "VIRTUAL_ENV"
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found:
            return found, "PATH"
    return None, "none"


def _pyproject_table(root: Path) -> dict[str, Any] | None:
    path = root / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(read_text_sync(path))
    except (OSError, ValueError, tomllib.TOMLDecodeError):
        return None
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return None
    for name in _TOOL_TABLES:
        table = tool.get(name)
        if isinstance(table, dict):
            return table
    return None


def project_config(root: Path) -> tuple[str | None, bool]:
    """(the file holding the project's pyright settings, whether it names a venv)."""
    path = root / "pyrightconfig.json"
    if path.is_file():
        try:
            text = read_text_sync(path)
        except (OSError, ValueError):
            text = ""
        return "pyrightconfig.json", '"venv' in text
    table = _pyproject_table(root)
    if table is not None:
        return "pyproject.toml", "venv" in table or "venvPath" in table
    return None, False


def python_env(root: Path) -> PythonEnv:
    interpreter, source = find_interpreter(root)
    config, config_venv = project_config(root)
    return PythonEnv(interpreter, source, config, config_venv)


def pyright_settings(settings: Mapping[str, Any], env: PythonEnv) -> dict[str, Any]:
    """`settings` as the project allows: search-path defaults restored in every `analysis`
    section, our defaults dropped where the project's config decides, and the interpreter
    pushed unless the config names its own venv."""
    out: dict[str, Any] = {}
    for section, value in settings.items():
        value = dict(value) if isinstance(value, Mapping) else value
        if isinstance(value, dict) and isinstance(value.get("analysis"), Mapping):
            analysis = {**_SEARCH_DEFAULTS, **value["analysis"]}
            if env.config:
                for key in _CONFIG_DECIDES:
                    analysis.pop(key, None)
            value["analysis"] = analysis
        out[section] = value
    if env.interpreter and not env.config_venv:
        python = dict(out.get("python") or {})
        python.setdefault("pythonPath", env.interpreter)
        out["python"] = python
    return out
