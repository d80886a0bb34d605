"""TOML: tombi (`tombi lsp`). taplo would be the other choice, but its npm and PyPI builds leave
the language server out ("the LSP is not part of this build")."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="tombi",
        command=("tombi", "lsp", "--offline"),
        extensions={".toml": "toml"},
        markers=("tombi.toml", "pyproject.toml", "Cargo.toml"),
        checker=("tombi", "lint", "{file}"),
    ),
)
