"""Tool definitions in the shapes harnesses consume: MCP, OpenAI, Anthropic, or plain JSON."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .tiers import Tier
from .tools import Tool

FORMATS = ("json", "mcp", "openai", "anthropic")
TIER_META_KEY = "livetools/tier"


def tier_annotations(tier: Tier) -> dict[str, bool]:
    """MCP hints from the tier. Clients gate plan modes on readOnlyHint, so read tools must say
    so or every lookup prompts (or is denied)."""
    if tier is Tier.READ:
        return {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
    return {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": tier is Tier.EXEC}


def export_one(tool: Tool, format: str) -> dict[str, Any]:
    params = tool.parameters()
    if format == "json":
        return {
            "name": tool.name,
            "tier": tool.tier.value,
            "description": tool.description,
            "parameters": params,
        }
    if format == "mcp":
        return {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": params,
            "annotations": tier_annotations(tool.tier),
            "_meta": {TIER_META_KEY: tool.tier.value},
        }
    if format == "openai":
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": params},
        }
    if format == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": params}
    raise ValueError(f"unknown schema format {format!r}; formats: {', '.join(FORMATS)}")


def export(tools: Iterable[Tool], format: str) -> list[dict[str, Any]]:
    return [export_one(tool, format) for tool in tools]
