"""The surface a face serves, shared by every face (cli, session, mcp): the requested surface
capped by the inherited LIVETOOLS_SURFACE ceiling, and the usage error a bad request raises.

It lives apart from `cli` so the MCP faces can resolve a surface without importing the command
line (which imports them to serve)."""

from __future__ import annotations

import os

from ..host import Host
from ..tiers import ENV_WORKER, Surface, inherited_ceiling, parse_surface

WORKER_EXCLUDED = frozenset({"ask_user"})


class UsageError(Exception):
    """A bad command line or request: exit code 2, the message says what to change."""


def resolve_surface(host: Host, requested: str | None) -> Surface:
    """A surface name or spec (`read,exec,-lsp_rename`), capped by the inherited ceiling; a
    worker's surface never offers ask_user."""
    ceiling = inherited_ceiling()
    if requested is None:
        surface = ceiling or host.surfaces["agent"]
    else:
        try:
            surface = parse_surface(requested, host.surfaces)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if ceiling is not None and (
        not surface.tiers <= ceiling.tiers or not ceiling.exclude <= surface.exclude
    ):
        surface = surface.capped_by(ceiling)
    if in_worker() and not surface.exclude >= WORKER_EXCLUDED:
        surface = Surface(surface.name, surface.tiers, surface.exclude | WORKER_EXCLUDED)
    return surface


def in_worker() -> bool:
    return bool(os.environ.get(ENV_WORKER))
