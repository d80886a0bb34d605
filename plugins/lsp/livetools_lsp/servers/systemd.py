"""systemd unit files: systemd-language-server (hover on directives and sections)."""

from __future__ import annotations

from ..spec import ServerSpec

UNIT_SUFFIXES = (
    ".service",
    ".socket",
    ".timer",
    ".target",
    ".mount",
    ".automount",
    ".path",
    ".slice",
    ".scope",
    ".swap",
    ".device",
    ".link",
    ".network",
    ".netdev",
)

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="systemd-language-server",
        command=("systemd-language-server",),
        probe=("systemd-language-server", "--help"),  # it has no --version
        extensions={suffix: "systemd" for suffix in UNIT_SUFFIXES},
    ),
)
