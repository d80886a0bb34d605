"""The whole tool path on real code: `ast_grep` called through a run (walk, prefilter and the
in-process search in one thread trip, the run's pattern cache on the second call) finds on a
real-world project what the ast-grep CLI finds in the same copy of its files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import livetools_astgrep.plugin
from livetools import Host
from tests.astgrep.oracle import CLI_LANG, cli_binary
from tests.astgrep.realworld import EXTS, corpus_files

CASES = [("rust", "$F($$$ARGS)"), ("python", "isinstance($X, $T)"), ("java", "$A.equals($B)")]


def copy_of(lang: str, dest: Path) -> Path:
    """The language's sampled corpus files, copied into one folder that both tools walk."""
    root = dest / lang
    for i, path in enumerate(corpus_files(lang)):
        target = root / f"{i:03d}{path.suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return root


def cli_lines(lang: str, pattern: str, root: Path) -> set[tuple[str, int, int]]:
    language = CLI_LANG.get(lang, lang)
    out = subprocess.run(
        [cli_binary(), "run", "-p", pattern, "-l", language, "--json=compact", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    return {
        (
            Path(m["file"]).name,
            m["range"]["start"]["line"] + 1,
            m["range"]["end"]["line"] + 1,
        )
        for m in json.loads(out.stdout or "[]")
    }


@pytest.mark.realworld
@pytest.mark.anyio
@pytest.mark.parametrize(("lang", "pattern"), CASES, ids=[c[0] for c in CASES])
async def test_the_tool_finds_what_the_cli_finds(tmp_path: Path, lang: str, pattern: str) -> None:
    root = copy_of(lang, tmp_path)
    assert all(p.suffix in EXTS[lang] for p in root.iterdir())
    want = cli_lines(lang, pattern, root)
    assert want, "the sample holds no match: pick another pattern"
    host = Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)
    async with host.open_run(root) as run:
        args = {"pattern": pattern, "language": lang, "max_results": 0}
        answers = [await run.call("ast_grep", args) for _ in range(2)]  # then from the cache
        status = await run.resources["astgrep"].status()
        assert status["workers"] == []  # the in-process path, not the parse workers
    for result in answers:
        assert not result.is_error, result.text
        got = {(Path(m["file"]).name, m["line"], m["end_line"]) for m in result.data["matches"]}
        assert got == want


@pytest.mark.realworld
@pytest.mark.anyio
@pytest.mark.parametrize("lang", ["java", "c"])
async def test_a_limited_search_through_warm_workers_is_the_full_searchs_prefix(
    tmp_path: Path, lang: str
) -> None:
    """After a full search through the workers (its first files searched in this process while
    they started, so no worker holds them), a limited search answers the full search's first
    matches: a worker whose batch holds the limit by itself must not end the search before
    the files ahead of that batch are searched. This answered nothing before (0 files)."""
    root = copy_of(lang, tmp_path)
    host = Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)
    options = {"astgrep": {"inline_bytes": 0}}  # the workers, whatever the sample's size
    async with host.open_run(root, options=options) as run:
        full = await run.call("ast_grep", {"pattern": "$F($$$ARGS)", "max_results": 0})
        assert len(full.data["matches"]) > 200, full.text
        for limit in (1, 5, 50, 200):
            args = {"pattern": "$F($$$ARGS)", "max_results": limit}
            limited = await run.call("ast_grep", args)
            assert limited.data["matches"] == full.data["matches"][:limit], limited.text
            assert limited.data["truncated"] is True
        status = await run.resources["astgrep"].status()
    assert len(status["workers"]) == 2


SEQUENCE = [  # the first files of a cold unlimited search are searched while workers start
    ("$F($$$ARGS)", 0),
    ("$X.equals($Y)", 50),
    ("new $C($$$)", 5),
    ("$F($$$ARGS)", 200),
    ("return $X;", 0),
    ("$A == $B", 1),
    ("if ($C) { $$$ }", 50),
    ("new $C($$$)", 0),
    ("$X.equals($Y)", 3),
]


@pytest.mark.realworld
@pytest.mark.anyio
async def test_searches_through_the_workers_answer_what_one_process_answers(tmp_path: Path) -> None:
    """A sequence of limited and unlimited searches, each answered through the parse workers
    (whose caches and batch homes carry over from search to search) as by one process."""
    root = copy_of("java", tmp_path)
    host = Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)
    answers = []
    for inline in (1 << 40, 0):
        async with host.open_run(root, options={"astgrep": {"inline_bytes": inline}}) as run:
            answers.append([])
            for pattern, limit in SEQUENCE:
                args = {"pattern": pattern, "max_results": limit, "language": "java"}
                result = await run.call("ast_grep", args)
                assert not result.is_error, result.text
                answers[-1].append((result.data["matches"], result.data["truncated"]))
            workers = (await run.resources["astgrep"].status())["workers"]
            assert len(workers) == (2 if not inline else 0)
    one, pooled = answers
    assert all(matches for matches, _ in one)
    for (pattern, limit), a, b in zip(SEQUENCE, one, pooled, strict=True):
        assert a == b, f"{pattern} max_results={limit}"
