"""A long run's host memory stays flat: 1,000 cheap calls of every family (after a warm-up) grow
the host's resident set by a bounded amount. Unresolved ast_edits are the state that grew without
bound (each holds its files twice); they are capped, and an expired id says so."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import pytest

from livetools import Host
from livetools.faces import harness

CALLS = 1000
GROWTH_MB = 40.0  # uncapped staged edits alone would add ~200 MB here

LINE = "greet('x' * 40)  # a line long enough that a staged edit weighs something\n"


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def cheap_calls(tools: set[str]) -> list[tuple[str, dict[str, Any]]]:
    menu: list[tuple[str, dict[str, Any]]] = [
        ("write", {"path": "w.txt", "content": "x" * 1000}),
        ("edit", {"path": "w.txt", "old": "x" * 1000, "new": "y" * 1000}),
        ("edit", {"path": "w.txt", "old": "y" * 1000, "new": "x" * 1000}),
        ("ast_grep", {"pattern": "greet($A)", "path": "big.py", "max_results": 5}),
        ("ast_edit", {"pattern": "greet($A)", "rewrite": "hello($A)", "path": "big.py"}),
        ("lsp", {"action": "status"}),
        ("debug", {"op": "status"}),
        ("debug", {"op": "adapters"}),
        ("eval", {"code": "1 + 1", "description": "add two small numbers for a cheap call"}),
        ("vibe_list", {}),
    ]
    return [(tool, args) for tool, args in menu if tool in tools]


@pytest.mark.timeout(900)
async def test_memory_stays_flat_over_a_thousand_calls(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\nversion = "0"\n')
    (tmp_path / "big.py").write_text("def greet(s):\n    return s\n\n\n" + LINE * 2000)
    host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    async with host.open_run(tmp_path, options={"vibe": True}) as run:
        offered = {t.name for t in run.tools()}
        menu = cheap_calls(offered)
        assert {"write", "edit", "vibe_list"} <= {t for t, _ in menu}

        async def burst(n: int) -> list[str]:
            failed = []
            for i in range(n):
                tool, args = menu[i % len(menu)]
                out = await run.call(tool, args)
                if out.is_error:
                    failed.append(f"{tool}: {out.text[:200]}")
            return failed

        await burst(3 * len(menu))  # warm-up: servers, kernels and caches start
        gc.collect()
        before = rss_mb()
        failed = await burst(CALLS)
        gc.collect()
        grown = rss_mb() - before
        assert not failed, failed[:5]
        assert grown < GROWTH_MB, f"host memory grew {grown:.1f} MB over {CALLS} calls"
        if "resolve" in offered:
            expired = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
            assert expired.is_error and "expired" in expired.text, expired.text
        print(f"memory: {grown:+.1f} MB over {CALLS} calls of {sorted({t for t, _ in menu})}")
