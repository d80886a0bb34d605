"""TOML: tombi (`tombi lsp`). taplo would be the other choice, but its npm and PyPI builds leave
the language server out ("the LSP is not part of this build")."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="tombi",
        # --offline: schemas from its cache and the ones it embeds (pyproject.toml, Cargo.toml).
        # Without it, the catalog fetch of a closed network held back answers: seen one run in
        # two on maturin, where our first outlines came back empty.
        command=("tombi", "lsp", "--offline"),
        extensions={".toml": "toml"},
        # No markers: one server at the run root serves every TOML file (a netlify.toml or a
        # config.toml has no project around it; tombi finds its tombi.toml itself).
        checker=("tombi", "lint", "--offline", "{file}"),
    ),
)
