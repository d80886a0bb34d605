"""Shell script servers."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="bash-language-server",
        command=("bash-language-server", "start"),
        extensions={".sh": "shellscript", ".bash": "shellscript"},
        checker=("shellcheck", "-f", "gcc", "{file}"),
    ),
)
