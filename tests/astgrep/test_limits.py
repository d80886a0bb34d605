"""Timeouts and big inputs (issue 13 §5): a timed-out search stops its work (the in-process
engine at its next file, parse workers killed at once) and the run answers the next call; a
pattern's size and compile cost are bounded with a clear error that echoes at most ~200
characters of it; an explicit path over the size limit is said, not parsed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import livetools_astgrep.plugin
from livetools import Host
from livetools_astgrep.limits import ECHO_CHARS, MAX_PATTERN_CHARS, MAX_PATTERN_NODES
from livetools_astgrep.resource import AstGrepResource
from tests.support import assert_gone

BOUND = 60.0


def host() -> Host:
    return Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)


def small_tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("print(compute(1))\n")
    return root


def big_tree(root: Path, files: int) -> None:
    """Files with many calls and no shared literal: a full enumeration parses every one."""
    body = "".join(f"v{i} = f{i}(a, g(b, h(c)), [k(d) for d in e])\n" for i in range(200))
    folder = root / "gen"
    folder.mkdir()
    for n in range(files):
        (folder / f"m{n:04}.py").write_text(body)


async def call(run, tool: str, args: dict):
    return await asyncio.wait_for(run.call(tool, args), BOUND)


async def test_a_huge_pattern_is_refused_at_once_with_a_short_echo(tmp_path):
    root = small_tree(tmp_path)
    pattern = "compute(" + " + ".join(f"x{i}" for i in range(20_000)) + ")"  # ~130 KB
    assert len(pattern) > 100_000
    async with host().open_run(root) as run:
        started = time.monotonic()
        for tool, args in (
            ("ast_grep", {"pattern": pattern}),
            ("ast_edit", {"pattern": pattern, "rewrite": "x"}),
        ):
            result = await call(run, tool, args)
            assert result.is_error
            assert f"over the {MAX_PATTERN_CHARS:,}-character limit" in result.text
            assert len(result.text) < 600, len(result.text)
        assert time.monotonic() - started < 30  # refused before any parse, not after 120 s
        after = await call(run, "ast_grep", {"pattern": "compute($A)"})
    assert not after.is_error and after.data["matches"], after.text


async def test_a_pattern_with_too_many_nodes_is_refused(tmp_path):
    root = small_tree(tmp_path)
    pattern = "[" + ", ".join(["1"] * 3000) + "]"  # 9 KB, ~6000 nodes
    assert len(pattern) < MAX_PATTERN_CHARS
    async with host().open_run(root) as run:
        result = await call(run, "ast_grep", {"pattern": pattern, "language": "python"})
    assert result.is_error
    assert f"over the {MAX_PATTERN_NODES:,}-node limit" in result.text
    assert len(result.text) < 600


async def test_an_unparseable_long_pattern_echoes_at_most_200_characters(tmp_path):
    root = small_tree(tmp_path)
    pattern = "def (" + "x" * 5000 + " ) ) )"
    async with host().open_run(root) as run:
        result = await call(run, "ast_grep", {"pattern": pattern, "language": "python"})
    assert result.is_error
    assert "x" * (ECHO_CHARS + 1) not in result.text, result.text[:400]


async def test_an_explicit_file_over_the_size_limit_is_said_not_parsed(tmp_path):
    root = small_tree(tmp_path)
    (root / "big.py").write_text("x = f(1)\n" * 2000)  # 18 KB
    options = {"astgrep": {"max_file_bytes": 4096}}
    async with host().open_run(root, options=options) as run:
        result = await call(run, "ast_grep", {"pattern": "f($A)", "path": "big.py"})
        walked = await call(run, "ast_grep", {"pattern": "f($A)"})
    assert result.is_error
    assert "big.py is 18,000 bytes, over the 4,096-byte limit" in result.text
    assert walked.data["skipped"]["too_large"] == ["big.py"]


async def test_a_timed_out_in_process_search_stops_and_the_next_call_runs(tmp_path):
    root = small_tree(tmp_path)
    files = 1500
    big_tree(root, files)
    options = {"astgrep": {"workers": 0}, "call_timeouts": {"ast_grep": 0.5}}
    async with host().open_run(root, options=options) as run:
        timed_out = await call(run, "ast_grep", {"pattern": "$F($$$A)", "max_results": 0})
        assert timed_out.is_error and "timed out" in timed_out.text
        # The next call is not held behind the abandoned one; its own bound is a loaded
        # machine's, not the 0.5 s that made the first one time out.
        run.options["call_timeouts"]["ast_grep"] = BOUND
        after = await call(run, "ast_grep", {"pattern": "compute($A)", "path": "a.py"})
        assert not after.is_error, after.text
        res = run.resources["astgrep"]
        assert isinstance(res, AstGrepResource)
        engine = res._inline_engine()
        # The abandoned thread stopped at its next file instead of parsing all 1500 first.
        assert engine.stats["parsed"] < files, engine.stats


async def test_a_timed_out_pool_search_kills_its_workers_and_the_next_call_runs(tmp_path):
    root = small_tree(tmp_path)
    big_tree(root, 1500)
    options = {
        "astgrep": {"workers": 2, "inline_bytes": 1024},
        "call_timeouts": {"ast_grep": BOUND},
    }
    async with host().open_run(root, options=options) as run:
        res = run.resources["astgrep"]
        assert isinstance(res, AstGrepResource)
        # Workers up first, so the long search runs in them (not in this process meanwhile).
        first = {"pattern": "$F($$$A)", "path": "gen/m0000.py", "max_results": 0}
        warm = await call(run, "ast_grep", first)
        assert not warm.is_error and res._pool_ready(), warm.text
        run.options["call_timeouts"]["ast_grep"] = 1.0  # far less than 15 MB of enumeration
        timed_out = await call(run, "ast_grep", {"pattern": "$F($$$A)", "max_results": 0})
        assert timed_out.is_error and "timed out" in timed_out.text
        pool = res._pool
        assert pool is not None and pool.started_pids
        assert_gone(pool.started_pids, within=10.0)  # killed at the timeout, not left parsing
        run.options["call_timeouts"]["ast_grep"] = BOUND
        after = await call(run, "ast_grep", {"pattern": "compute($A)", "max_results": 0})
        assert not after.is_error, after.text
        assert [m["file"] for m in after.data["matches"]] == ["a.py"]


def test_the_parse_cache_counts_tree_nodes_not_only_source(tmp_path):
    """A tree holds 10-30x its source in memory, so the cache's budget counts nodes: two
    standard-library modules whose sources fit the budget many times over are not both kept
    once their trees would exceed it, and the one dropped is parsed again when searched."""
    import json as stdlib_json

    from livetools_astgrep.engine import NODE_BYTES, Engine
    from tests.astgrep.oracle import compile_pattern, grammars, jobs_for

    files = []
    for name in ("decoder.py", "encoder.py"):
        target = tmp_path / name
        target.write_bytes((Path(stdlib_json.__file__).parent / name).read_bytes())
        files.append(target)
    source = sum(f.stat().st_size for f in files)
    pattern = compile_pattern("python", "$F($$$ARGS)")
    loader = grammars()["python"].loader

    roomy = Engine()
    roomy.search(jobs_for(files), pattern, loader, 0)
    assert roomy.held > 10 * source and roomy.stats["parsed"] == 2
    tree = roomy._cache[str(files[0])].trees["python"]
    assert roomy._cache[str(files[0])].weight >= tree.root_node.descendant_count * NODE_BYTES

    tight = Engine(cache_bytes=roomy.held - 1)  # both sources fit 10 times over
    tight.search(jobs_for(files), pattern, loader, 0)
    assert tight.held <= tight.cache_bytes
    assert list(tight._cache) == [str(files[1])]  # the older entry went
    again = tight.search(jobs_for(files[:1]), pattern, loader, 0)
    assert tight.stats["parsed"] == 3 and again[0].matches
