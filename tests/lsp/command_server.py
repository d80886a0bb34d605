"""A pygls server whose code actions are commands, for what a real one does not do on demand:
"Write it myself" writes a file on disk by itself when run; "Edit through the client" sends its
edit back as workspace/applyEdit, as gopls and clangd do. `python command_server.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("command-server", "1.0")
COMMANDS = (("Write it myself", "fake.write"), ("Edit through the client", "fake.edit"))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def publish(ls: LanguageServer, params: Any) -> None:
    """No diagnostics, said as a real server says it (else each diagnostics wait runs out)."""
    doc = params.text_document
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[], version=doc.version)
    )


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
def actions(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    return [
        types.CodeAction(
            title=title,
            kind=types.CodeActionKind.Refactor,
            command=types.Command(title=title, command=name, arguments=[uri]),
        )
        for title, name in (
            ("Write it myself", "fake.write"),
            ("Edit through the client", "fake.edit"),
        )
    ]


@server.command("fake.write")
def write_myself(ls: LanguageServer, uri: str) -> None:  # pygls spreads the arguments
    path = Path(unquote(urlparse(uri).path))
    path.with_name("written-by-the-server.txt").write_text("behind the client's back\n")


@server.command("fake.edit")
async def edit_through_client(ls: LanguageServer, uri: str) -> None:
    start = types.Position(line=0, character=0)
    edit = types.TextEdit(range=types.Range(start=start, end=start), new_text="# edited\n")
    await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=types.WorkspaceEdit(changes={uri: [edit]}))
    )


if __name__ == "__main__":
    server.start_io()
