"""The vibe settings of a run: which command runs a worker at each tier, how many run at once, how
long an attempt may take.

Sources, later ones winning key by key: `[tool.livetools.vibe]` in the root's pyproject.toml,
`[vibe]` in the root's .livetools.toml (for projects without a pyproject), the environment
(LIVETOOLS_VIBE_*), and the harness's run option `vibe_config` (a dict with the file's keys).
A bad value is reported (status, and the error of vibe_spawn) and the key ignored; it never stops
the run from opening.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livetools.config import project_table
from livetools.options import OptionError

TIERS = ("fast", "good")
ENV_PREFIX = "LIVETOOLS_VIBE_"
DEFAULT_MAX_WORKERS = 2
DEFAULT_TIMEOUT = 1800.0
MAX_WORKERS_LIMIT = 64

# The keys of a config table; `readonly` is a sub-table with the template keys only.
TEMPLATE_KEYS = ("command", *TIERS)
KEYS = (*TEMPLATE_KEYS, "readonly", "honours_surface", "max_workers", "timeout", "backend", "env")


@dataclass
class VibeConfig:
    """`templates[tier]`: argv template of a worker that may do everything its spawner may.
    `readonly[tier]`: the template used when the spawner is not the full agent surface (plan,
    readonly, custom), for worker CLIs with edit tools of their own. `honours_surface`: the
    command edits only through livetools faces (serve/session), which obey LIVETOOLS_SURFACE, so
    the ordinary template is safe for restricted spawners too."""

    templates: dict[str, list[str]] = field(default_factory=dict)
    readonly: dict[str, list[str]] = field(default_factory=dict)
    honours_surface: bool = False
    max_workers: int = DEFAULT_MAX_WORKERS
    timeout: float = DEFAULT_TIMEOUT
    backend: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def load(root: Path, options: Mapping[str, Any], environ: Mapping[str, str]) -> VibeConfig:
    config = VibeConfig()
    if options.get("trust_project_config") is False:
        # worker commands are programs: an untrusted checkout's files may not name them
        config.sources.append("project files ignored (trust_project_config = false)")
        return _rest(config, options, environ)
    pyproject = root / "pyproject.toml"
    table = _toml_table(pyproject, ("tool", "livetools", "vibe"), config)
    if table is not None:
        _apply(config, table, "pyproject.toml [tool.livetools.vibe]")
    dotfile = root / ".livetools.toml"
    table = _toml_table(dotfile, ("vibe",), config)
    if table is not None:
        _apply(config, table, ".livetools.toml [vibe]")
    return _rest(config, options, environ)


def _rest(config: VibeConfig, options: Mapping[str, Any], environ: Mapping[str, str]) -> VibeConfig:
    """The layers after the project's files: the environment, then the run option."""
    env_table = _env_table(environ, config)
    if env_table:
        _apply(config, env_table, "environment")
    option = options.get("vibe_config")
    if option is not None:
        if isinstance(option, Mapping):
            _apply(config, dict(option), "run option vibe_config")
        else:
            config.problems.append("run option vibe_config: expected a dict of settings")
    return config


def _toml_table(path: Path, keys: tuple[str, ...], config: VibeConfig) -> dict[str, Any] | None:
    try:  # FIFO-safe: a pipe named pyproject.toml must not block run start
        return project_table(path, keys)
    except OptionError as exc:
        config.problems.append(str(exc))
        return None


def _env_table(environ: Mapping[str, str], config: VibeConfig) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for key in ("command", *TIERS, "max_workers", "timeout", "backend", "honours_surface"):
        value = environ.get(ENV_PREFIX + key.upper())
        if value is None or not value.strip():
            continue
        if key in TEMPLATE_KEYS:
            table[key] = _words(value, ENV_PREFIX + key.upper(), config)
        elif key == "honours_surface":
            table[key] = value.strip().lower() in ("1", "true", "yes")
        else:
            table[key] = value.strip()
    return {k: v for k, v in table.items() if v is not None}


def _words(value: str, where: str, config: VibeConfig) -> list[str] | None:
    """A command from the environment: a JSON array, or shell words."""
    try:
        words = json.loads(value) if value.lstrip().startswith("[") else shlex.split(value)
    except ValueError as exc:
        config.problems.append(f"{where}: not a JSON array nor shell words: {exc}")
        return None
    return words


def _template(value: Any, where: str, config: VibeConfig) -> list[str] | None:
    if isinstance(value, str):
        value = shlex.split(value)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        config.problems.append(
            f"{where}: expected a non-empty list of strings (argv), e.g. "
            '["claude", "-p", "--model", "haiku"]'
        )
        return None
    return list(value)


def _apply_templates(
    target: dict[str, list[str]], table: dict[str, Any], where: str, config: VibeConfig
) -> None:
    if "command" in table:
        argv = _template(table["command"], f"{where} command", config)
        if argv is not None:
            for tier in TIERS:
                target[tier] = argv
    for tier in TIERS:
        if tier in table:
            argv = _template(table[tier], f"{where} {tier}", config)
            if argv is not None:
                target[tier] = argv


def _apply(config: VibeConfig, table: dict[str, Any], where: str) -> None:
    config.sources.append(where)
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        config.problems.append(
            f"{where}: unknown key(s) {', '.join(unknown)}; keys are {', '.join(KEYS)}"
        )
    _apply_templates(config.templates, table, where, config)
    if "readonly" in table:
        sub = table["readonly"]
        if isinstance(sub, dict):
            _apply_templates(config.readonly, sub, f"{where} readonly", config)
        else:
            config.problems.append(f"{where} readonly: expected a table with fast/good/command")
    if "honours_surface" in table:
        if isinstance(table["honours_surface"], bool):
            config.honours_surface = table["honours_surface"]
        else:
            config.problems.append(f"{where} honours_surface: expected true or false")
    if "max_workers" in table:
        value = _number(table["max_workers"], int)
        if value is None or not 1 <= value <= MAX_WORKERS_LIMIT:
            config.problems.append(
                f"{where} max_workers: expected a whole number 1..{MAX_WORKERS_LIMIT}, "
                f"got {table['max_workers']!r}"
            )
        else:
            config.max_workers = value
    if "timeout" in table:
        seconds = _number(table["timeout"], float)
        if seconds is None or seconds <= 0:
            config.problems.append(
                f"{where} timeout: expected seconds > 0, got {table['timeout']!r}"
            )
        else:
            config.timeout = seconds
    if "backend" in table:
        name = table["backend"]
        if isinstance(name, str) and name.strip():
            config.backend = name.strip()
        else:
            config.problems.append(f"{where} backend: expected a backend name")
    if "env" in table:
        env = table["env"]
        if isinstance(env, dict) and all(isinstance(v, str) for v in env.values()):
            config.env.update({str(k): v for k, v in env.items()})
        else:
            config.problems.append(f"{where} env: expected a table of strings")


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    if isinstance(value, bool):
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        return None
    if kind is int and isinstance(value, float) and value != number:
        return None
    return number
