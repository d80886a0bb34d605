"""livetools: tools bound to live resources of one agent run.

The public API for harnesses (Host, Run, Ports, surfaces) and for plugins (hookimpl, Tool,
Resource, Result, Tier).

The names load on first use (PEP 562): the `livetools` command imports this package on its way
to a resident run, and that fast path must not pay for the host, pluggy and pydantic."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself costs ~9 ms to import; checkers honour the name
if TYPE_CHECKING:
    from typing import Any

    from .files import EditConflict, PathError, StagedEdit, relpath, resolve_path
    from .hooks import hookimpl, hookspec
    from .host import Host
    from .ports import ApprovalRequest, Ports
    from .resources import Resource
    from .results import Result, ToolError, cap_items, cap_text, cap_value
    from .run import Run
    from .tiers import AGENT, PLAN, READONLY, Surface, Tier
    from .tools import CallContext, Tool

_WHERE = {
    "AGENT": "tiers",
    "PLAN": "tiers",
    "READONLY": "tiers",
    "ApprovalRequest": "ports",
    "CallContext": "tools",
    "EditConflict": "files",
    "Host": "host",
    "PathError": "files",
    "Ports": "ports",
    "Resource": "resources",
    "Result": "results",
    "Run": "run",
    "StagedEdit": "files",
    "Surface": "tiers",
    "Tier": "tiers",
    "Tool": "tools",
    "ToolError": "results",
    "cap_items": "results",
    "cap_text": "results",
    "cap_value": "results",
    "hookimpl": "hooks",
    "hookspec": "hooks",
    "relpath": "files",
    "resolve_path": "files",
}

__all__ = [
    "AGENT",
    "PLAN",
    "READONLY",
    "ApprovalRequest",
    "CallContext",
    "EditConflict",
    "Host",
    "PathError",
    "Ports",
    "Resource",
    "Result",
    "Run",
    "StagedEdit",
    "Surface",
    "Tier",
    "Tool",
    "ToolError",
    "cap_items",
    "cap_text",
    "cap_value",
    "hookimpl",
    "hookspec",
    "relpath",
    "resolve_path",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'livetools' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
