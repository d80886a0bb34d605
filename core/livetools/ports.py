"""What a harness hands to a run: the ways a tool reaches outside it (an approver, a human,
worker backends, a sandbox). Each port is optional; a plugin whose port is absent offers nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .tiers import Tier


@dataclass(frozen=True)
class ApprovalRequest:
    tool: str
    tier: Tier
    args: dict[str, Any]
    surface: str
    summary: str = ""  # what the call will do, as the approval card words it


Approve = Callable[[ApprovalRequest], "Awaitable[bool] | bool"]


@dataclass
class Ports:
    """`approve` gates write/exec calls (False = a clean refusal); without it, the run option
    `approve=ask` asks the human through `question` instead (see approvals). `question` +
    `target_space` reach a human (ask plugin); `workers` are vibe backends; `sandbox` is where
    every process of the run starts (a `livetools.sandbox.Sandbox`, or the older `wrap(argv)`
    launcher); None starts them on the host."""

    approve: Approve | None = None
    question: Any = None
    target_space: str | None = None
    workers: Any = None
    sandbox: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
