"""Several threads at one breakpoint: every stop is reported (per-thread stop state), on real
debugpy with a thread pool behind a barrier and real dlv with three goroutines."""

from __future__ import annotations

import shutil
from pathlib import Path

from .conftest import copy_project, line_of, require_delve

PROGRAMS = Path(__file__).with_name("programs")


async def _collect_hits(dbg, result) -> tuple[set[int], list[str]]:
    """Launch result then `continue` until the exit: the threads reported stopped at the
    breakpoint, as the stop or as 'also stopped'."""
    seen: set[int] = set()
    texts = []
    for _ in range(10):
        texts.append(result.text)
        if result.data["outcome"] != "stopped":
            break
        stop = result.data["stop"]
        if stop["reason"] == "breakpoint":
            seen.add(stop["thread_id"])
        seen |= {o["thread_id"] for o in result.data["also_stopped"] if o["reason"] == "breakpoint"}
        if len(seen) == 1 or result.data["also_stopped"]:
            threads = await dbg.ok("threads")
            assert "[stopped: breakpoint]" in threads.text
        result = await dbg.ok("continue")
    assert result.data["outcome"] == "exited", result.text
    return seen, texts


async def test_debugpy_pool_threads_all_reported(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    shutil.copy(PROGRAMS / "pool.py", root / "pool.py")
    dbg = await open_debugger(root)
    line = line_of(root / "pool.py", "# all three here")
    await dbg.ok("breakpoints", file="pool.py", lines=[line])
    result = await dbg.ok("launch", program="pool.py")
    seen, texts = await _collect_hits(dbg, result)
    assert len(seen) == 3, "\n---\n".join(texts)


async def test_delve_three_goroutines_all_reported(tmp_path: Path, open_debugger) -> None:
    require_delve()
    root = copy_project("go", tmp_path)
    (root / "main.go").unlink()
    shutil.copy(PROGRAMS / "goroutines.go", root / "main.go")
    dbg = await open_debugger(root)
    line = line_of(root / "main.go", "// all three here")
    await dbg.ok("breakpoints", file="main.go", lines=[line])
    result = await dbg.ok("launch", program=".")
    seen, texts = await _collect_hits(dbg, result)
    assert len(seen) == 3, "\n---\n".join(texts)
