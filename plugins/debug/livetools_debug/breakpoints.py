"""Breakpoint kinds beyond file:line: a condition, a hit count, a log message (a logpoint prints
through `output` and does not stop), and the exception filters an adapter declares.

Each kind is sent only to an adapter that declares it (`supportsConditionalBreakpoints`,
`supportsHitConditionalBreakpoints`, `supportsLogPoints`, `exceptionBreakpointFilters`): an
adapter that does not would stop unconditionally, which is worse than a refusal that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from livetools import ToolError


class BreakSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: int = Field(ge=1)
    condition: str | None = None
    hit_count: int | None = Field(None, ge=1)
    log_message: str | None = None


@dataclass(frozen=True)
class Want:
    """One breakpoint as asked: a line and what stops (or prints) there."""

    line: int
    condition: str | None = None
    hit_count: int | None = None
    log_message: str | None = None

    def dap(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line}
        if self.condition:
            out["condition"] = self.condition
        if self.hit_count:
            out["hitCondition"] = str(self.hit_count)
        if self.log_message:
            out["logMessage"] = self.log_message
        return out

    def label(self) -> str:
        parts = []
        if self.condition:
            parts.append(f"if {self.condition}")
        if self.hit_count:
            parts.append(f"hit {self.hit_count}")
        if self.log_message:
            parts.append(f"log {self.log_message!r}")
        return f" ({', '.join(parts)})" if parts else ""


def wants_of(lines: list[int | BreakSpec]) -> list[Want]:
    """The asked breakpoints, one per line (a later entry for a line wins), by line."""
    by_line: dict[int, Want] = {}
    for i, item in enumerate(lines):
        if isinstance(item, int):
            if item < 1:
                raise ToolError(f"lines[{i}] is {item}: lines are 1-based")
            by_line[item] = Want(item)
        else:
            for name in ("condition", "log_message"):
                value = getattr(item, name)
                if value is not None and not value.strip():
                    raise ToolError(f"lines[{i}].{name} is empty: give the text or leave it out")
            by_line[item.line] = Want(item.line, item.condition, item.hit_count, item.log_message)
    return [by_line[n] for n in sorted(by_line)]


_SUPPORT = (
    ("condition", "supportsConditionalBreakpoints", "conditions"),
    ("hit_count", "supportsHitConditionalBreakpoints", "hit counts"),
    ("log_message", "supportsLogPoints", "log messages (logpoints)"),
)


def unsupported(adapter: str, capabilities: dict[str, Any], wants: list[Want]) -> None:
    """Refuse kinds the live adapter does not declare, naming them."""
    missing = [
        what
        for attr, capability, what in _SUPPORT
        if any(getattr(w, attr) for w in wants) and not capabilities.get(capability)
    ]
    if missing:
        raise ToolError(
            f"{adapter} does not support breakpoint {', '.join(missing)}; nothing was set. "
            "Use plain lines, or evaluate the condition at a plain breakpoint"
        )


def declared_filters(capabilities: dict[str, Any]) -> dict[str, str]:
    """The adapter's exception filters: name -> its label."""
    out: dict[str, str] = {}
    for item in capabilities.get("exceptionBreakpointFilters") or []:
        if isinstance(item, dict) and isinstance(item.get("filter"), str):
            out[item["filter"]] = str(item.get("label") or item["filter"])
    return out


def check_filters(adapter: str, capabilities: dict[str, Any], filters: list[str]) -> None:
    declared = declared_filters(capabilities)
    if not declared and filters:
        raise ToolError(f"{adapter} declares no exception filters; it stops only where it does")
    unknown = [f for f in filters if f not in declared]
    if unknown:
        listed = ", ".join(f"{k} ({v})" for k, v in declared.items())
        raise ToolError(f"unknown filters for {adapter}: {', '.join(unknown)}; it has: {listed}")
