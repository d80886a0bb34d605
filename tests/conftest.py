"""Shared test set-up: async tests run on anyio's asyncio backend; the testkit plugin is importable
in-process (and, via tests.support.plugin_env, discoverable through its entry point in
subprocesses)."""

from __future__ import annotations

import inspect
import sys

import pytest

from tests.support import PLUGINS_DIR

sys.path.insert(0, str(PLUGINS_DIR))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        func = getattr(item, "function", None)
        if func is not None and inspect.iscoroutinefunction(func):
            item.add_marker(pytest.mark.anyio)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
