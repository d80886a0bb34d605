"""Tiers say what a tool can do; surfaces say which tiers a caller may see.

A tool outside the caller's surface is both hidden from the schema and refused at call time,
so a plan-mode agent cannot reach a write tool by guessing its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Tier(StrEnum):
    READ = "read"  # no side effects
    WRITE = "write"  # modifies files
    EXEC = "exec"  # starts or controls a process


@dataclass(frozen=True)
class Surface:
    """Who sees a schema: a set of tiers, minus tools a surface must never offer (e.g. ask_user
    on a worker surface, whose questions go through its parent)."""

    name: str
    tiers: frozenset[Tier]
    exclude: frozenset[str] = field(default_factory=frozenset)

    def admits(self, tool_name: str, tier: Tier) -> bool:
        return tier in self.tiers and tool_name not in self.exclude

    def capped_by(self, ceiling: Surface) -> Surface:
        """The surface a spawned worker gets: never more than its spawner's."""
        return Surface(
            f"{self.name}<={ceiling.name}",
            self.tiers & ceiling.tiers,
            self.exclude | ceiling.exclude,
        )


AGENT = Surface("agent", frozenset(Tier))
PLAN = Surface("plan", frozenset({Tier.READ}))
READONLY = Surface("readonly", frozenset({Tier.READ}))

BUILTIN_SURFACES: dict[str, Surface] = {s.name: s for s in (AGENT, PLAN, READONLY)}


def parse_tiers(spec: str) -> frozenset[Tier]:
    """`read,write` → {READ, WRITE}; lets a harness name a custom surface on the command line."""
    try:
        return frozenset(Tier(part.strip()) for part in spec.split(",") if part.strip())
    except ValueError:
        raise ValueError(
            f"unknown tier in {spec!r}; tiers are {', '.join(t.value for t in Tier)}"
        ) from None
