"""Fixtures of the lsp tests: a fresh copy of a sample project per test (tools write into it),
and a run whose language-server processes are all checked dead after it closes."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from livetools import Host, Run
from livetools.faces import harness
from livetools.procs import session_members

PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "lsp"


@pytest.fixture
def project(tmp_path: Path) -> Callable[[str], Path]:
    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(PROJECTS / name, target)
        return target

    return copy


def server_sessions(run: Run) -> list[int]:
    sup = run.resource("lsp")
    return [s.pid for s in sup.servers.values() if s.pid] if sup else []


@asynccontextmanager
async def lsp_run(
    root: Path,
    prefer: list[str] | None = None,
    plugins: list[tuple[str, object]] | None = None,
    **options: Any,
) -> AsyncIterator[Run]:
    """A run with the entry-point plugins plus the minimal harness (write/edit), asserting that
    no server process outlives it."""
    host = Host(plugins=[("harness", harness), *(plugins or [])])
    lsp_options = {"prefer": prefer or [], **options}
    run = await host.open_run(root, options={"lsp": lsp_options})
    seen: set[int] = set()
    try:
        sup = run.resource("lsp")
        original = sup._get

        async def tracking_get(*args: Any, **kwargs: Any) -> Any:
            server = await original(*args, **kwargs)
            if server.pid:
                seen.add(server.pid)
            return server

        sup._get = tracking_get
        yield run
    finally:
        await run.aclose()
    for sid in seen:
        assert session_members(sid) == [], f"server session {sid} outlived the run"
