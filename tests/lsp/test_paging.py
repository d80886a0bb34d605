"""Capped answers are reachable and their counts add up (issue 12 §6): the truncation note names
the next offset, following it visits every line exactly once, `path` keeps only that folder or
file, and a server that cut its own answer (gopls: 100 workspace symbols) is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.lsp.test_other_servers import INSTALL
from tests.lsp.test_readiness import _cobra
from tests.support import require_binary

ECHO = {"action": "references", "file": "src/click/utils.py", "line": 219, "symbol": "echo"}
NEXT = re.compile(r"truncated: (\d+) more lines; next page: offset=(\d+)")
HEAD = re.compile(r'^(\d+) references to "echo"(?: under (\S+))?(?: on (\d+) lines)? ')


@realworld
async def test_reference_pages_add_up(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", INSTALL)
    root = corpus_copy("click", tmp_path)
    async with lsp_run(root, ["basedpyright"]) as run:
        seen: list[tuple[str, int]] = []
        offset, total = 0, None
        while True:
            r = await run.call("lsp", {**ECHO, "offset": offset})
            assert not r.is_error, r.text
            head = HEAD.match(r.text)
            assert head, r.text
            lines = int(head.group(3) or head.group(1))
            total = total or lines
            assert lines == total  # the same total on every page
            rows = [(d["path"], d["line"]) for d in r.data["locations"]]
            seen += rows
            more = NEXT.search(r.text)
            if not more:
                break
            assert int(more.group(1)) == total - offset - len(rows), r.text
            offset = int(more.group(2))
            assert offset == len(seen)
        assert len(seen) == len(set(seen)) == total, (len(seen), len(set(seen)), total)

        r = await run.call("lsp", {**ECHO, "path": "src/click"})
        assert not r.is_error, r.text
        assert r.text.startswith('37 references to "echo" under src/click'), r.text
        assert all(d["path"].startswith("src/click/") for d in r.data["locations"])
        r = await run.call("lsp", {**ECHO, "path": "src/click/termui.py"})
        assert {d["path"] for d in r.data["locations"]} == {"src/click/termui.py"}, r.text

        r = await run.call("lsp", {**ECHO, "offset": 10_000})
        assert r.is_error and "offset 10000 is past the end" in r.text, r.text
        r = await run.call("lsp", {**ECHO, "path": "no/such/folder"})
        assert r.is_error and r.text.startswith("path:"), r.text

        r = await run.call("lsp", {"action": "symbols", "query": "echo", "path": "tests"})
        assert not r.is_error, r.text
        assert all(d["path"].startswith("tests/") for d in r.data["symbols"]), r.text
        assert "searched by basedpyright (.py .pyi)" in r.text


@realworld
async def test_server_cap_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_binary("gopls", INSTALL)
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    root = corpus_copy("cobra", tmp_path)
    _cobra(root)
    async with lsp_run(root, ["gopls"]) as run:
        r = await run.call("lsp", {"action": "symbols", "query": "c", "file": "command.go"})
        assert not r.is_error, r.text
        assert len(r.data["symbols"]) == 100, r.text
        assert "gopls cut its answer at 100 symbols (its own limit" in r.text, r.text
        r = await run.call("lsp", {"action": "symbols", "file": "command.go", "offset": 20})
        assert not r.is_error, r.text
        assert re.search(r"^\d+ symbols in command.go, 21-", r.text), r.text
