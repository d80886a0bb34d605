"""The breadth suite runs one project per server by default (the first its file lists), at 4
positions a case (tests/lsp/differential.py): every server is verified on real code in each
run, and CI's time stays bounded. With LIVETOOLS_CORPUS_SCALE of 2 or more, every project of
every server runs, at each case's own count of positions."""

from __future__ import annotations

import os

import pytest

from tests.corpus import SCALE_ENV


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if float(os.environ.get(SCALE_ENV) or 1) >= 2:
        return
    seen: set[tuple[str, str]] = set()
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("case") if callspec is not None else None
        server = getattr(case, "server", None)
        if server is None or "/breadth/" not in item.nodeid.replace("\\", "/"):
            kept.append(item)
            continue
        key = (item.nodeid.split("[", 1)[0], server)
        (dropped if key in seen else kept).append(item)
        seen.add(key)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
