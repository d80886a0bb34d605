"""YAML: yaml-language-server (Red Hat)."""

from __future__ import annotations

from ..spec import ServerSpec

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="yaml-language-server",
        command=("yaml-language-server", "--stdio"),
        extensions={".yaml": "yaml", ".yml": "yaml"},
        # The schema store is a download: without a network every file waits for it to fail.
        settings={
            "yaml": {"schemaStore": {"enable": False}, "validate": True, "hover": True},
            "redhat": {"telemetry": {"enabled": False}},
        },
    ),
)
