"""Tiers say what a tool can do; surfaces say which tiers a caller may see.

A tool outside the caller's surface is both hidden from the schema and refused at call time,
so a plan-mode agent cannot reach a write tool by guessing its name.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

# A worker backend passes its spawner's ceiling to the processes it starts; every face honours it
# and no `--surface` lifts it. LIVETOOLS_WORKER marks a worker: its questions go through its parent.
ENV_SURFACE = "LIVETOOLS_SURFACE"
ENV_WORKER = "LIVETOOLS_WORKER"


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

    def spec(self) -> str:
        """The surface as `--surface` / LIVETOOLS_SURFACE spell it, exclusions included, so it
        survives the trip into a worker process: `read,exec,-lsp_rename`."""
        tiers = [t.value for t in Tier if t in self.tiers]
        return ",".join([*tiers, *(f"-{name}" for name in sorted(self.exclude))])

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


def parse_surface(spec: str, known: Mapping[str, Surface] = BUILTIN_SURFACES) -> Surface:
    """`plan`, `read,exec`, `agent,-lsp_rename`: surface names and tiers add up, `-tool` excludes
    a tool. Raises ValueError naming what is accepted."""
    if spec in known:
        return known[spec]
    tiers: set[Tier] = set()
    exclude: set[str] = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part.startswith("-"):
            exclude.add(part[1:])
        elif part in known:
            tiers |= known[part].tiers
            exclude |= known[part].exclude
        elif part in Tier._value2member_map_:
            tiers.add(Tier(part))
        else:
            raise ValueError(
                f"unknown surface or tier {part!r} in {spec!r}; use {', '.join(known)}, or "
                f"tiers ({', '.join(t.value for t in Tier)}) with -tool exclusions"
            )
    return Surface(spec, frozenset(tiers), frozenset(exclude))


def inherited_ceiling(environ: Mapping[str, str] = os.environ) -> Surface | None:
    """The ceiling a process inherited. Fails closed: in a worker (LIVETOOLS_WORKER set) a
    missing or empty LIVETOOLS_SURFACE means `readonly`, not the default `agent`, and a value
    that does not parse means `readonly` with a warning on stderr (a typo must not go unseen,
    nor widen anything)."""
    spec = environ.get(ENV_SURFACE, "").strip()
    if not spec:
        return READONLY if environ.get(ENV_WORKER) else None
    try:
        return parse_surface(spec)
    except ValueError as exc:
        print(f"livetools: {ENV_SURFACE}: {exc}; using readonly", file=sys.stderr)
        return READONLY
