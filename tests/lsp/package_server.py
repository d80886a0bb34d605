"""A pygls language server that checks a whole package the way gopls does: a change is checked
at once against the texts the server holds *then*, and the other open files are re-checked a
moment later. So when a write changes two files, the first file's first publish for its new
version was computed against the second file's old text. `python package_server.py`.

The language: `def NAME` defines a name for every file; `use NAME` of an undefined name is
the error "undeclared name: NAME"."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.lsp.server import LanguageServer

RECHECK_AFTER = 0.1  # seconds before the other open files are re-checked (gopls: a few ms)
server = LanguageServer("package-server", "1.0")
versions: dict[str, int] = {}


def _publish(ls: LanguageServer, uri: str) -> None:
    texts = {u: ls.workspace.get_text_document(u).source for u in versions}
    defined = {
        line.split()[1]
        for text in texts.values()
        for line in text.splitlines()
        if line.startswith("def ") and len(line.split()) > 1
    }
    found = [
        types.Diagnostic(
            range=types.Range(types.Position(n, 4), types.Position(n, len(line))),
            message=f"undeclared name: {line.split()[1]}",
            severity=types.DiagnosticSeverity.Error,
            code="UndeclaredName",
        )
        for n, line in enumerate(texts[uri].splitlines())
        if line.startswith("use ") and len(line.split()) > 1 and line.split()[1] not in defined
    ]
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=versions[uri])
    )


def _checked(ls: LanguageServer, uri: str, version: int) -> None:
    versions[uri] = version
    _publish(ls, uri)
    others = [u for u in versions if u != uri]

    def recheck() -> None:
        for other in others:
            _publish(ls, other)

    asyncio.get_running_loop().call_later(RECHECK_AFTER, recheck)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    _checked(ls, params.text_document.uri, params.text_document.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    _checked(ls, params.text_document.uri, params.text_document.version)


if __name__ == "__main__":
    server.start_io()
