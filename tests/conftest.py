"""Shared test set-up: async tests run on anyio's asyncio backend; the testkit plugin is importable
in-process (and, via tests.support.plugin_env, discoverable through its entry point in
subprocesses)."""

from __future__ import annotations

import inspect
import sys

import pytest

from tests.support import PLUGINS_DIR

sys.path.insert(0, str(PLUGINS_DIR))


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Mark every `async def test_*` for anyio before anyio's own collector looks for the mark
    (so parametrized async tests get the backend fixture too)."""
    if (
        inspect.iscoroutinefunction(obj)
        and isinstance(collector, pytest.Module | pytest.Class)
        and collector.istestfunction(obj, name)
    ):
        pytest.mark.anyio(obj)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "realworld: checks a tool against an oracle on the fetched real-world corpus"
    )
