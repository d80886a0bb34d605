"""Partial answers are never presented as complete (issue 12 §2). Cold, on corpus projects big
enough to show it: the first references answer equals the answer once the server has loaded its
project (basedpyright answered 1 of 286 on click before it had enumerated the files;
typescript-language-server 18 of 393 on rxjs while "Initializing JS/TS language features"), or
it says it may be incomplete. A server whose loading never ends (a fake: no real server does
that on demand) gets the note."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from livetools import hookimpl
from livetools_lsp import ServerSpec
from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.lsp.test_other_servers import INSTALL
from tests.support import require_binary


def _rxjs(root: Path) -> None:
    # The npm package ships src/ with tsconfig.base.json but no tsconfig.json of its own.
    (root / "src" / "tsconfig.json").write_text(
        '{"extends": "./tsconfig.base.json", "include": ["./**/*.ts"]}'
    )


def _cobra(root: Path) -> None:
    # No module proxy here: without its requirements the module still loads (imports unresolved).
    (root / "go.mod").write_text("module github.com/spf13/cobra\n\ngo 1.15\n")
    (root / "go.sum").unlink()


# project -> (server, binary, prepare, file, line, symbol)
COLD = {
    "click": ("basedpyright", "basedpyright-langserver", None, "src/click/utils.py", 219, "echo"),
    "rxjs": (
        "typescript-language-server",
        "typescript-language-server",
        _rxjs,
        "src/internal/Observable.ts",
        15,
        "Observable",
    ),
    "cobra": ("gopls", "gopls", _cobra, "command.go", 48, "Command"),
}


@realworld
@pytest.mark.parametrize("name", sorted(COLD))
async def test_first_cold_references_are_complete(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, binary, prepare, file, line, symbol = COLD[name]
    require_binary(binary, INSTALL)
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    root = corpus_copy(name, tmp_path)
    if prepare:
        prepare(root)
    args = {"action": "references", "file": file, "line": line, "symbol": symbol}
    async with lsp_run(root, [server]) as run:
        first = await run.call("lsp", args)
        assert not first.is_error, first.text
        sup = run.resource("lsp")
        live = sup.running_for(root / file)
        assert live is not None and await live.ready(60.0) is None
        later = await run.call("lsp", args)
    assert not later.is_error and "may be incomplete" not in later.text, later.text
    print(f"{name}: first {first.text.splitlines()[0]!r}; later {later.text.splitlines()[0]!r}")
    if "may be incomplete" in first.text:
        assert first.data.get("complete") is False
        return
    assert first.text.splitlines()[0] == later.text.splitlines()[0]
    assert first.data["locations"] == later.data["locations"]
    assert len(first.data["locations"]) > 20  # big enough to show a partial answer


LOADING = """
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("loading-forever", "1.0")


@server.feature(types.INITIALIZED)
def initialized(ls, params):
    ls.work_done_progress.create("load")
    ls.work_done_progress.begin("load", types.WorkDoneProgressBegin(title="Indexing"))


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
def references(ls, params):
    return [types.Location(params.text_document.uri, types.Range(params.position, params.position))]


@server.feature(types.TEXT_DOCUMENT_RENAME)
def rename(ls, params):
    start = types.Position(params.position.line, 6)
    end = types.Position(params.position.line, 11)
    edit = types.TextEdit(types.Range(start, end), params.new_name)
    return types.WorkspaceEdit(changes={params.text_document.uri: [edit]})


server.start_io()
"""


class Loading:
    def __init__(self, script: Path) -> None:
        self.script = script

    @hookimpl
    def livetools_lsp_servers(self) -> ServerSpec:
        return ServerSpec(
            id="loading-forever",
            command=(sys.executable, str(self.script)),
            extensions={".fake": "fake"},
            probe=(sys.executable, "--version"),
        )


async def test_answer_while_still_loading_says_so(tmp_path: Path) -> None:
    script = tmp_path / "loading.py"
    script.write_text(LOADING)
    (tmp_path / "a.fake").write_text("hello world\n")
    plugin = Loading(script)
    args = {"action": "references", "file": "a.fake", "line": 1, "symbol": "world"}
    async with lsp_run(tmp_path, plugins=[("loading", plugin)], ready_timeout=1.0) as run:
        r = await run.call("lsp", args)
        assert not r.is_error, r.text
        assert "a.fake:1: hello world" in r.text
        assert "may be incomplete: loading-forever was still busy (Indexing) after 1s" in r.text
        assert r.data["complete"] is False
        # Once the wait ran out, later calls wait at most a second more (an index can take
        # hours), and still say so.
        server = run.resource("lsp").running_for(tmp_path / "a.fake")
        assert server is not None and server.readiness.waited_out
        r = await run.call("lsp", {**args, "offset": 0})
        assert r.data["complete"] is False, r.text
        r = await run.call(
            "lsp",
            {
                "action": "hover",
                **{k: args[k] for k in ("file", "line")},
                "symbol": "world",
                "path": "x",
            },
        )
        assert r.is_error and "hover takes neither" in r.text, r.text


async def test_rename_while_still_loading_is_refused(tmp_path: Path) -> None:
    """A rename is written to disk: one that could miss uses in files not loaded yet is
    refused (nothing changes), not applied with a note."""
    script = tmp_path / "loading.py"
    script.write_text(LOADING)
    (tmp_path / "a.fake").write_text("hello world\n")
    plugin = Loading(script)
    args = {"file": "a.fake", "line": 1, "symbol": "world", "new_name": "earth"}
    async with lsp_run(tmp_path, plugins=[("loading", plugin)], ready_timeout=1.0) as run:
        r = await run.call("lsp_rename", args)
    assert r.is_error, r.text
    assert "loading-forever was still busy (Indexing) after 1s" in r.text
    assert "nothing was changed" in r.text
    assert (tmp_path / "a.fake").read_text() == "hello world\n"


async def test_a_load_that_failed_is_not_called_loading(tmp_path: Path) -> None:
    """gopls keeps an "Error loading workspace" progress open when a module's dependencies are
    missing: the note says the load failed, not that it is still going."""
    script = tmp_path / "loading.py"
    script.write_text(LOADING.replace('title="Indexing"', 'title="Error loading workspace"'))
    (tmp_path / "a.fake").write_text("hello world\n")
    args = {"action": "references", "file": "a.fake", "line": 1, "symbol": "world"}
    async with lsp_run(tmp_path, plugins=[("loading", Loading(script))], ready_timeout=1.0) as run:
        r = await run.call("lsp", args)
    assert not r.is_error and r.data["complete"] is False, r.text
    assert "could not load its project" in r.text and "still loading" not in r.text, r.text
