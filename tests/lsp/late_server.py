"""A pygls language server that never answers for the text it was opened with — its first
diagnostics come only after a change — and logs every text it receives. What no real server does
on demand: let the baseline wait of diagnostics-on-write run out. `python late_server.py LOG`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

LOG = Path(sys.argv[1])
server = LanguageServer("late-server", "1.0")


def _log(event: str, version: int, text: str) -> None:
    with LOG.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"event": event, "version": version, "text": text}) + "\n")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    _log("open", doc.version, doc.text)  # and no diagnostics: the baseline times out


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = ls.workspace.get_text_document(params.text_document.uri)
    _log("change", params.text_document.version, doc.source)
    found = [
        types.Diagnostic(
            range=types.Range(types.Position(n, 0), types.Position(n, len(line))),
            message=f"bad thing: {line.strip()}",
            severity=types.DiagnosticSeverity.Error,
            code="bad",
        )
        for n, line in enumerate(doc.source.splitlines())
        if "bad" in line
    ]
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=doc.uri, diagnostics=found, version=params.text_document.version
        )
    )


if __name__ == "__main__":
    server.start_io()
