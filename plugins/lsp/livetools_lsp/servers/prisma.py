"""Prisma schemas: @prisma/language-server."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="prisma-language-server",
        command=("prisma-language-server", "--stdio"),
        extensions={".prisma": "prisma"},
        # It reads its section at once and exits on a null answer (the section unset).
        settings={"prisma": {}},
    ),
)
