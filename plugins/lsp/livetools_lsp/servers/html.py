"""HTML: vscode-html-language-server (vscode-langservers-extracted): the outline, hover on tags
and attributes (with the CSS and JavaScript embedded in the page)."""

from __future__ import annotations

from ..spec import ServerSpec
from .json import NODE_PROBE

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="vscode-html-language-server",
        command=("vscode-html-language-server", "--stdio"),
        probe=NODE_PROBE,
        extensions={".html": "html", ".htm": "html"},
        init_options={"provideFormatter": True},
    ),
)
