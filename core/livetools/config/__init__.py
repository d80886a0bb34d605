"""The run's configuration: the user's file, the project's `pyproject.toml` `[tool.livetools]`
and `.livetools.toml`, the environment and the run option, read the same way for every family
(layers.py) and checked against the options the families declare (loader.py). docs/configuration.md
says what each source may hold."""

from __future__ import annotations

from .layers import ENV, project_table, user_file
from .loader import PROGRAM_OPTIONS, TRUST, Loaded, load_config

__all__ = ["ENV", "PROGRAM_OPTIONS", "TRUST", "Loaded", "load_config", "project_table", "user_file"]
