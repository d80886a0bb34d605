"""A pygls language server that misbehaves on demand, for the fault tests: what a real server
cannot be made to do at will. `python fake_server.py MODE MARKER`: while the MARKER file
exists, hover misbehaves per MODE (crash | hang | garbage) and removes the marker, so the
restarted server behaves."""

from __future__ import annotations

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


if __name__ == "__main__":
    server.start_io()
