"""The three tools through a real run: results, skips and their reasons, errors a model can act
on, staged edits accepted / refused / discarded, write wrapping, workers that do not outlive the
run, and the CLI session face."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import livetools_astgrep.plugin
from livetools import Host, hookimpl
from livetools.procs import session_members
from tests.astgrep.oracle import FIXTURES, cli_binary
from tests.support import REPO


def host(*extra: object) -> Host:
    return Host(plugins=[("astgrep", livetools_astgrep.plugin), *extra], entry_points=False)


def project(tmp_path: Path, *langs: str) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for lang in langs:
        shutil.copytree(FIXTURES / lang, root / lang)
    return root


class Observer:
    """A write observer like the LSP plugin's: sees the paths and attaches a note."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    @hookimpl
    def livetools_observe_write(self, run, paths, notes):
        @asynccontextmanager
        async def observe():
            yield
            self.seen.append(sorted(p.name for p in paths))
            notes.append(f"observed {len(paths)} files")

        return observe()


async def test_search_reports_relative_lines_text_and_bindings(tmp_path):
    root = project(tmp_path, "python")
    async with host().open_run(root) as run:
        result = await run.call("ast_grep", {"pattern": "os.path.join($$$A)"})
    assert not result.is_error, result.text
    lines = result.text.splitlines()
    assert lines[0] == "3 matches in 2 files"
    assert "python/more.py:10: os.path.join(root, name)" in lines
    assert "  $$$A=root, name" in lines
    assert "python/shapes.py:9-12:" in lines
    data = result.data
    first = data["matches"][0]
    assert set(first) >= {"file", "line", "end_line", "text", "bindings"}
    assert data["truncated"] is False
    assert data["files_searched"] == 2
    assert data["languages"]["python"]["pattern"].startswith("call")


async def test_max_results_truncates_and_says_so(tmp_path):
    root = project(tmp_path, "python")
    async with host().open_run(root) as run:
        result = await run.call("ast_grep", {"pattern": "$F($$$A)", "max_results": 2})
    assert result.data["truncated"] is True
    assert len(result.data["matches"]) == 2
    assert "truncated: stopped at 2 matches" in result.text


async def test_directory_without_language_searches_what_is_there(tmp_path):
    root = project(tmp_path, "python", "javascript", "go")
    async with host().open_run(root) as run:
        result = await run.call("ast_grep", {"pattern": "$X.dispose()"})
        go_only = await run.call("ast_grep", {"pattern": "fmt.Println($$$A)", "language": "go"})
    assert set(result.data["languages"]) == {"python", "javascript", "go"}
    files = {m["file"] for m in result.data["matches"]}
    assert files == {"python/shapes.py", "javascript/app.js"}
    assert "searched go" in result.text and "javascript (1 files" in result.text
    assert {m["file"] for m in go_only.data["matches"]} == {"go/main.go"}


async def test_skips_are_reported_with_reasons(tmp_path):
    root = tmp_path / "proj"
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "x.py").write_text("print(1)\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("print(2)\n")
    (root / ".gitignore").write_text("build/\n*.tmp.py\n")
    (root / "a.tmp.py").write_text("print(3)\n")
    (root / "big.py").write_text("print(4)\n" + "x = 1\n" * 2000)
    (root / "blob.py").write_bytes(b"print(5)\x00\x01")
    (root / "latin.py").write_bytes("s = 'caf\xe9'\nprint(6)\n".encode("latin-1"))
    (root / "ok.py").write_text("print(7)\n")
    options = {"astgrep": {"max_file_bytes": 4096}}
    async with host().open_run(root, options=options) as run:
        result = await run.call("ast_grep", {"pattern": "print($A)"})
    found = {m["file"]: m["bindings"]["A"] for m in result.data["matches"]}
    assert found == {"latin.py": "6", "ok.py": "7"}
    skipped = result.data["skipped"]
    assert skipped["gitignored"] == 2
    assert skipped["vendored"] == ["node_modules/"]
    assert skipped["too_large"] == ["big.py"]
    assert skipped["binary"] == ["blob.py"]
    assert result.data["not_utf8"] == ["latin.py"]
    assert "skipped: 2 gitignored, 1 vendored dirs (node_modules/)" in result.text
    assert "not UTF-8, searched as bytes: latin.py" in result.text


async def test_errors_say_what_to_do(tmp_path):
    root = project(tmp_path, "python")
    (root / "notes.xyz").write_text("print(1)\n")
    async with host().open_run(root) as run:
        bad_lang = await run.call("ast_grep", {"pattern": "f()", "language": "pyton"})
        outside = await run.call("ast_grep", {"pattern": "f()", "path": "../.."})
        unparsed = await run.call("ast_grep", {"pattern": "a $OP b", "path": "python"})
        unknown_ext = await run.call("ast_grep", {"pattern": "f()", "path": "notes.xyz"})
        by_ext = await run.call(
            "ast_grep", {"pattern": "print($A)", "path": "notes.xyz", "language": "py"}
        )
    assert bad_lang.is_error and "did you mean python" in bad_lang.text
    assert outside.is_error and "outside the project root" in outside.text
    assert unparsed.is_error and "contexts tried: top level" in unparsed.text
    assert unknown_ext.is_error and "pass language" in unknown_ext.text
    assert not by_ext.is_error and by_ext.data["matches"][0]["text"] == "print(1)"


INDENTED = """\
def run(flag):
    if flag:
        handler = lambda: compute(
            1,
            2,
        )
    return handler
"""

REWRITTEN = """\
def run(flag):
    if flag:
        def handler():
            return compute(
                1,
                2,
            )
    return handler
"""


async def test_edit_then_accept_rewrites_files_with_indentation(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text(INDENTED)
    (root / "b.py").write_text("go = lambda: stop()\n")
    observer = Observer()
    async with host(("observer", observer)).open_run(root) as run:
        staged = await run.call(
            "ast_edit",
            {"pattern": "$B = lambda: $R", "rewrite": "def $B():\n    return $R"},
        )
        assert not staged.is_error, staged.text
        assert staged.text.startswith("(proposed) 2 replacements in 2 files")
        assert 'edit_id "edit_1"' in staged.text
        assert "+def go():" in staged.text  # the diff preview
        assert (root / "a.py").read_text() == INDENTED  # nothing written yet
        accepted = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        again = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
    assert not accepted.is_error, accepted.text
    assert "observed 2 files" in accepted.text
    assert observer.seen == [["a.py", "b.py"]]
    assert (root / "a.py").read_text() == REWRITTEN
    assert (root / "b.py").read_text() == "def go():\n    return stop()\n"
    assert again.is_error and "already accepted" in again.text


async def test_accept_refuses_everything_when_a_file_moved_on(tmp_path):
    root = project(tmp_path, "python")
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    async with host().open_run(root) as run:
        staged = await run.call(
            "ast_edit", {"pattern": "isinstance($X, $T)", "rewrite": "is_a($X, $T)"}
        )
        assert staged.data["files"] == ["python/more.py", "python/shapes.py"]
        touched = root / "python" / "more.py"
        touched.write_text(touched.read_text() + "# touched\n")
        before[touched] = touched.read_bytes()
        refused = await run.call("resolve", {"edit_id": staged.data["edit_id"], "action": "accept"})
    assert refused.is_error
    assert "python/more.py changed since the edit was staged" in refused.text
    assert {p: p.read_bytes() for p in root.rglob("*.py")} == before


async def test_discard_and_unknown_ids(tmp_path):
    root = project(tmp_path, "python")
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    async with host().open_run(root) as run:
        none = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        staged = await run.call("ast_edit", {"pattern": "print($$$A)", "rewrite": "log($$$A)"})
        discarded = await run.call("resolve", {"edit_id": "edit_1", "action": "discard"})
        again = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        second = await run.call("ast_edit", {"pattern": "print($$$A)", "rewrite": "log($$$A)"})
        unknown = await run.call("resolve", {"edit_id": "edit_9", "action": "accept"})
    assert none.is_error and "no" in none.text and "ast_edit" in none.text
    assert staged.data["edit_id"] == "edit_1" and second.data["edit_id"] == "edit_2"
    assert discarded.text == "discarded edit_1; nothing written"
    assert again.is_error and "already discarded" in again.text
    assert unknown.is_error and "staged edits: edit_2" in unknown.text
    assert {p: p.read_bytes() for p in root.rglob("*.py")} == before


async def test_an_id_past_every_kept_record_says_expired_not_unknown(tmp_path):
    """The run keeps a bounded record of old ids; past it, an id it gave out still reads as
    expired (a model told "unknown" would think it mistyped)."""
    root = project(tmp_path, "python")
    async with host().open_run(root) as run:
        args = {"pattern": "print($$$A)", "rewrite": "log($$$A)"}
        for _ in range(360):
            last = await run.call("ast_edit", args)
        first = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        never = await run.call("resolve", {"edit_id": "edit_999", "action": "accept"})
    assert last.data["edit_id"] == "edit_360"
    assert first.is_error and first.text.startswith("edit_1 expired"), first.text
    assert "ast_edit or lsp_rename again" in first.text
    assert never.is_error and "unknown edit_id 'edit_999'" in never.text


async def test_rewrite_that_breaks_syntax_is_refused(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\nif x:\n    y = f(x)\n")
    async with host().open_run(root) as run:
        result = await run.call("ast_edit", {"pattern": "f($A)", "rewrite": "f($A"})
        unbound = await run.call("ast_edit", {"pattern": "f($A)", "rewrite": "g($B)"})
    assert result.is_error
    assert "refused" in result.text and "a.py line 3" in result.text
    assert unbound.is_error and "does not bind" in unbound.text and "$A" in unbound.text
    assert (root / "a.py").read_text() == "x = 1\nif x:\n    y = f(x)\n"


async def test_nested_matches_are_reported_not_half_applied(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("wrap(wrap(x))\nwrap(y)\n")
    async with host().open_run(root) as run:
        staged = await run.call("ast_edit", {"pattern": "wrap($A)", "rewrite": "box($A)"})
        await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
    assert staged.data["replacements"] == 2
    assert staged.data["skipped"] == [{"file": "a.py", "line": 1, "why": "nested"}]
    assert "not rewritten: 1 matches nested" in staged.text
    assert (root / "a.py").read_text() == "box(wrap(x))\nbox(y)\n"


async def test_workers_search_rewrite_and_die_with_the_run(tmp_path):
    root = project(tmp_path, "python", "javascript")
    options = {"astgrep": {"inline_bytes": 0}}  # force the worker processes
    run = await host().open_run(root, options=options)
    try:
        first = await run.call("ast_grep", {"pattern": "$F($$$A)", "max_results": 0})
        second = await run.call("ast_grep", {"pattern": "isinstance($X, $T)"})
        limited = await run.call("ast_grep", {"pattern": "$F($$$A)", "max_results": 7})
        staged = await run.call("ast_edit", {"pattern": "print($$$A)", "rewrite": "log($$$A)"})
        resource = run.resource("astgrep")
        pool = resource._pool
        assert pool is not None and len(pool.workers) == 2
        stats = [await w.request(("ping",)) for w in pool.workers]
        pids = list(pool.started_pids)
    finally:
        await run.aclose()
    async with host().open_run(root) as inline_run:
        inline = await inline_run.call("ast_grep", {"pattern": "$F($$$A)", "max_results": 0})
    assert inline.data["matches"] == first.data["matches"] and len(inline.data["matches"]) > 30
    assert limited.data["matches"] == first.data["matches"][:7]  # early stop, same prefix
    assert limited.data["truncated"] is True
    assert not first.is_error and first.data["files_searched"] == 3
    assert len(second.data["matches"]) == 4
    assert staged.data["replacements"] == 3
    assert sum(s["cached"] for s in stats) >= 2  # the second query reused parsed trees
    assert all(session_members(pid) == [] for pid in pids)


def test_session_face_edit_then_resolve(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "m.go").write_text('package m\n\nfunc f() {\n\tfmt.Println("x")\n}\n')
    lines = [
        {"tool": "ast_edit", "args": {"pattern": "fmt.Println($A)", "rewrite": "log.Print($A)"}},
        {"tool": "resolve", "args": {"edit_id": "edit_1", "action": "accept"}},
    ]
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "session", "--root", str(root)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["ok"] for r in replies] == [True, True], out.stdout + out.stderr
    assert replies[1]["text"].startswith("accepted edit_1")
    assert (root / "m.go").read_text() == 'package m\n\nfunc f() {\n\tlog.Print("x")\n}\n'


async def test_ellipsis_capture_leaves_the_trailing_comma_to_the_code(tmp_path):
    """`$$$A` ends at its last named node; the CLI also binds the code's trailing comma, so its
    `h($$$A, c)` writes `h(a, b,, c)`. Ours keeps a rewrite that appends after the run valid."""
    (tmp_path / "t.py").write_text("f(a, b,)\n")
    edit = {"pattern": "f($$$A)", "rewrite": "h($$$A, c)", "language": "python"}
    async with host().open_run(tmp_path) as run:
        found = await run.call("ast_grep", {"pattern": "f($$$A)", "language": "python"})
        staged = await run.call("ast_edit", edit)
    assert [m["bindings"] for m in found.data["matches"]] == [{"A": "a, b"}]
    assert "+h(a, b, c)" in staged.text


def test_cli_binds_the_trailing_comma_into_an_ellipsis(tmp_path):
    (tmp_path / "t.py").write_text("f(a, b,)\n")
    cli = subprocess.run(
        [cli_binary(), "run", "-p", "f($$$A)", "-r", "h($$$A, c)", "-l", "python", "t.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "h(a, b,, c)" in cli.stdout


async def test_match_over_code_that_does_not_parse_is_flagged_and_not_rewritten(tmp_path):
    """An unknown macro (`if FMT_CONSTEXPR20 (…)`) is an ERROR node the matcher skips like
    trivia: the match says so, and ast_edit leaves it alone instead of rewriting it silently."""
    code = "void f() {\n  if FMT_CONSTEXPR20 (x > 0) {\n    g(x);\n  }\n"
    code += "  if (y) {\n    g(y);\n  }\n}\n"
    (tmp_path / "t.cpp").write_text(code)
    pattern = {"pattern": "if ($C) { $$$B }", "language": "cpp"}
    async with host().open_run(tmp_path) as run:
        found = await run.call("ast_grep", pattern)
        staged = await run.call("ast_edit", {**pattern, "rewrite": "if (!($C)) { $$$B }"})
    flags = [(m["line"], m.get("unparsed_code", False)) for m in found.data["matches"]]
    assert flags == [(2, True), (5, False)]
    assert "+  if (!(y)) {" in staged.text and "FMT_CONSTEXPR20" not in staged.text.split("@@")[-1]
    assert "does not parse" in staged.text, staged.text


async def test_many_empty_ellipsis_runs_are_counted_not_listed(tmp_path):
    (tmp_path / "s.py").write_text('get_version("Click")\n')
    pattern = "$F(" + ", ".join(f"$$$A{i}" for i in range(300)) + ")"
    huge = "$F(" + ", ".join(f"$$$A{i}" for i in range(1200)) + ")"
    async with host().open_run(tmp_path) as run:
        found = await run.call("ast_grep", {"pattern": pattern, "language": "python"})
        refused = await run.call("ast_grep", {"pattern": huge, "language": "python"})
    assert '$F=get_version  $$$A299="Click"  (299 $$$ runs empty: $$$A0 … $$$A298)' in found.text
    assert refused.is_error and "10,000-character limit" in refused.text
    assert len(refused.text) < 600
