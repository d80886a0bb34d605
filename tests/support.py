"""Helpers shared by the test packages."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PLUGINS_DIR = TESTS / "fixtures" / "plugins"
REQUIRE_ENV = "LIVETOOLS_REQUIRE_SERVERS"


def plugin_env(**extra: str) -> dict[str, str]:
    """Environment for a livetools subprocess that discovers the testkit plugin."""
    env = dict(os.environ)
    parts = [str(PLUGINS_DIR), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    env.update(extra)
    return env


def require_binary(name: str, install: str) -> str:
    """The path of `name`, or skip saying how to install it (fail instead in CI)."""
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} not installed: {install}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 turns this skip into a failure)")
    pytest.skip(message)
