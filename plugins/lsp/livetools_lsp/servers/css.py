"""CSS, SCSS and Less: vscode-css-language-server (vscode-langservers-extracted). Definition and
references stay inside one file (variables, custom properties, mixins)."""

from __future__ import annotations

from ..spec import ServerSpec
from .json import NODE_PROBE

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="vscode-css-language-server",
        command=("vscode-css-language-server", "--stdio"),
        probe=NODE_PROBE,
        extensions={".css": "css", ".scss": "scss", ".less": "less"},
        init_options={"provideFormatter": True},
    ),
)
