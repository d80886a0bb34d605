"""livetools: tools bound to live resources of one agent run.

The public API for harnesses (Host, Run, Ports, surfaces) and for plugins (hookimpl, Tool,
Resource, Result, Tier)."""

from .files import EditConflict, PathError, StagedEdit, relpath, resolve_path
from .hooks import hookimpl, hookspec
from .host import Host
from .ports import ApprovalRequest, Ports
from .resources import Resource
from .results import Result, ToolError, cap_items, cap_text, cap_value
from .run import Run
from .tiers import AGENT, PLAN, READONLY, Surface, Tier
from .tools import CallContext, Tool

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
