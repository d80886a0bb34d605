"""A pygls language server that misbehaves on demand, for the fault tests: what a real server
cannot be made to do at will. `python fake_server.py MODE MARKER`: while the MARKER file
exists, hover misbehaves per MODE (crash | hang | garbage) and removes the marker, so the
restarted server behaves. MODE slow / slow-busy: a changed file's diagnostics come 5 s late,
with slow-busy inside an "indexing" progress (clangd rebuilding a preamble on a loaded
machine); an opened file's come at once."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

MODE, MARKER = sys.argv[1], Path(sys.argv[2])
server = LanguageServer("fake-server", "1.0")


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LanguageServer, params: types.HoverParams) -> types.Hover:
    if MARKER.exists():
        MARKER.unlink()
        if MODE == "crash":
            sys.stderr.write("fatal: the fake server fell over\n")
            sys.stderr.flush()
            os._exit(3)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "garbage":
            sys.stdout.buffer.write(b"Content-Length: 12\r\n\r\nthis is junk")
            sys.stdout.buffer.flush()
            time.sleep(3600)
    return types.Hover(contents=types.MarkupContent(kind="markdown", value="fake hover text"))


def _publish(ls: LanguageServer, uri: str, version: int, message: str) -> None:
    where = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
    )
    error = types.Diagnostic(range=where, message=message, severity=types.DiagnosticSeverity.Error)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=[error])
    )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    _publish(ls, doc.uri, doc.version, "there before")


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = params.text_document
    busy = MODE == "slow-busy"
    if busy:
        await ls.work_done_progress.create_async("index")
        ls.work_done_progress.begin("index", types.WorkDoneProgressBegin(title="indexing"))
    await asyncio.sleep(5.0)
    _publish(ls, doc.uri, doc.version, "came late")
    if busy:
        ls.work_done_progress.end("index", types.WorkDoneProgressEnd())


if __name__ == "__main__":
    server.start_io()
