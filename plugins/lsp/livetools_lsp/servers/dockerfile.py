"""Dockerfiles: docker-langserver (dockerfile-language-server-nodejs). Specs select files by
suffix, so it serves `name.Dockerfile` / `name.dockerfile`; a plain `Dockerfile` (no suffix)
needs name matching in the plugin."""

from __future__ import annotations

from ..spec import ServerSpec
from .json import NODE_PROBE

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="docker-langserver",
        command=("docker-langserver", "--stdio"),
        probe=NODE_PROBE,  # no --version: a missing connection, exit 1
        extensions={
            ".dockerfile": "dockerfile",
            ".Dockerfile": "dockerfile",
            "Dockerfile": "dockerfile",
            "Containerfile": "dockerfile",
        },
    ),
)
