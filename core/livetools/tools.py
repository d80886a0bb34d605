"""The tool record plugins register, and the context a handler receives."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .results import Result
from .tiers import Surface, Tier

if TYPE_CHECKING:
    from .run import Run

Handler = Callable[["CallContext", Any], Awaitable["Result | str"]]


@dataclass(frozen=True)
class Tool:
    """One tool. `resource` names the run resource it needs: the tool is exposed only while that
    resource is connected, so an absent server means an absent tool, not a failing one."""

    name: str
    tier: Tier
    args: type[BaseModel]
    handler: Handler
    description: str
    resource: str | None = None
    parallel_safe: bool = True
    timeout: float = 120.0
    plugin: str = ""

    def parameters(self) -> dict[str, Any]:
        return compact_schema(self.args.model_json_schema())


@dataclass
class CallContext:
    """What a handler gets besides its arguments: the run, the caller's surface (so a tool that
    re-enters the registry, like eval's bridge, cannot escalate), and its resource."""

    run: Run
    tool: Tool
    surface: Surface
    resource: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Result:
        """Call another tool of the run with this caller's surface and approval."""
        return await self.run.call(name, args or {}, surface=self.surface)


def compact_schema(schema: Any) -> Any:
    """Drop pydantic's auto-generated titles, and spell an optional argument (`X | None = None`)
    as plain `X`: the model reads names and descriptions, omitting an argument already means
    "none", and both roughly double the schema bytes every call pays for. Validation still
    accepts an explicit null."""
    if isinstance(schema, dict):
        schema = _unwrap_optional(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: compact_schema(v) for k, v in value.items()}
            else:
                out[key] = compact_schema(value)
        return out
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    return schema


def _unwrap_optional(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [X, {"type": "null"}], "default": null, …}` → `{**X, …}`."""
    options = schema.get("anyOf")
    if "default" not in schema or schema["default"] is not None or not isinstance(options, list):
        return schema
    kept = [o for o in options if o != {"type": "null"}]
    if len(options) != 2 or len(kept) != 1 or not isinstance(kept[0], dict):
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    if set(rest) & set(kept[0]):
        return schema
    return {**kept[0], **rest}


class DuplicateToolError(Exception):
    pass


class Registry:
    """Collects tools per run; keeps plugin attribution and refuses a second tool of one name."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool, plugin: str) -> None:
        if tool.name in self._tools:
            other = self._tools[tool.name].plugin
            raise DuplicateToolError(
                f"tool {tool.name!r} from plugin {plugin!r} is already registered by {other!r}"
            )
        self._tools[tool.name] = replace(tool, plugin=plugin)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def all(self) -> list[Tool]:
        return list(self._tools.values())
