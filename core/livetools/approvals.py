"""The approval gate: whether a write/exec call may run, decided before anything is executed.

Policy is the run option `approve` (`allow`, the default, for harnesses that gate on their side;
`deny`; `ask`). A harness's own `Ports(approve=...)` callable is the approver whenever it is set
(except under `deny`). `ask` asks the human through the run's question port, as the same card as
ask_user: a port with an `approve(Approval)` method shows its own approval form (terminal, JSON
lines, MCP elicitation), any other port gets the card as a three-option question. It fails
closed: no port, a port that detaches or breaks, expiry — each is a refusal that says why.

A refusal is a normal result (`data.refused`), never an exception, and nothing ran.

What the card says comes from the tool: a handler may carry an `approval_card(ctx, args)`
attribute (set with `card_by`), else the arguments are shown, capped. A tool whose card needs
work first (lsp_rename stages the rename so the file count is real) is marked `asks_in_call`
and calls `confirm(ctx, summary)` itself right before it writes. A tool whose calls act only for
some arguments says which with `asks_only_if` (the others pass as reads do).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .questions import Approval, Decision, QuestionPortDetached, cap_summary
from .results import Result, ToolError
from .tiers import Tier

if TYPE_CHECKING:
    from .run import Run
    from .tools import CallContext, Tool

MODES = ("allow", "deny", "ask")
OPTION = "approve"
EXPIRY_OPTION = "approve_expiry"
DEFAULT_EXPIRY = 600.0
ENV_EXPIRY = "LIVETOOLS_ASK_EXPIRY"  # the same human, the same patience as ask_user
CARD_ATTR = "approval_card"
IN_CALL_ATTR = "approval_in_call"
ACTS_ATTR = "approval_acts"
_PENDING = "livetools.approval"  # CallContext.extra key: the in-call confirmation still owed
DEADLINE = "livetools.deadline"  # CallContext.extra key: the call's asyncio.Timeout

F = TypeVar("F", bound=Callable[..., Any])
Card = Callable[["CallContext", Any], "str | Awaitable[str]"]


def card_by(card: Card) -> Callable[[F], F]:
    """Decorate a handler with the function that words its approval card."""

    def mark(handler: F) -> F:
        setattr(handler, CARD_ATTR, card)
        return handler

    return mark


def asks_only_if(acts: Callable[[Any], bool]) -> Callable[[F], F]:
    """Decorate a handler whose calls act only for some arguments (`debug launch` runs a
    program, `debug stack` reads): `acts(args)` false means the call is let through unasked,
    under every policy, as a read would be."""

    def mark(handler: F) -> F:
        setattr(handler, ACTS_ATTR, acts)
        return handler

    return mark


def asks_in_call(handler: F) -> F:
    """Mark a handler that asks for approval itself, through `confirm`, once it knows what it
    will write; the gate then does not ask before the call."""
    setattr(handler, IN_CALL_ATTR, True)
    return handler


async def confirm(ctx: CallContext, summary: str) -> None:
    """Ask for the approval an `asks_in_call` tool still owes, right before it writes. Raises
    `Refused` (a ToolError whose result the run returns as is) when it may not go on."""
    owed = ctx.extra.pop(_PENDING, None)
    if owed is None:
        return
    gate: ApprovalGate = ctx.run.approval
    # The human's time is not the tool's: the call's own deadline stands still meanwhile (the
    # approval has its own expiry).
    deadline: asyncio.Timeout | None = ctx.extra.get(DEADLINE)
    loop = asyncio.get_running_loop()
    when = deadline.when() if deadline is not None else None
    left = None if when is None else max(when - loop.time(), 0.0)
    if deadline is not None:
        deadline.reschedule(None)
    try:
        refusal = await gate.decide(ctx.tool, ctx.surface.name, owed, summary)
    finally:
        if deadline is not None and left is not None:
            deadline.reschedule(loop.time() + left)
    if refusal is not None:
        raise Refused(refusal)


class Refused(ToolError):
    """An in-call refusal; the run returns `result` unchanged."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.text)
        self.result = result


def approval_mode(options: dict[str, Any]) -> str:
    mode = str(options.get(OPTION) or "allow").strip().lower()
    if mode not in MODES:
        raise ValueError(f"run option approve={mode!r}: expected one of {', '.join(MODES)}")
    return mode


def approval_expiry(options: dict[str, Any]) -> float:
    value = (
        options.get(EXPIRY_OPTION)
        or options.get("ask_expiry")
        or os.environ.get(ENV_EXPIRY)
        or DEFAULT_EXPIRY
    )
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = 0.0
    return seconds if 0 < seconds < float("inf") else DEFAULT_EXPIRY


class ApprovalGate:
    """Per-run approval state: the policy, the tools allowed for the rest of the run, and the
    approval counter. One card at a time (the terminal and JSON-lines ports share one input),
    unless the port says it is `concurrent` (MCP: each form rides its own request)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.problem: str | None = None
        try:
            self.mode = approval_mode(run.options)
        except ValueError as exc:  # fail closed: a policy nobody can read refuses everything
            self.mode = "deny"
            self.problem = str(exc)
            run.problems.append(self.problem)
        self.expiry = approval_expiry(run.options)
        self.always: list[str] = []
        self.asked = 0
        self.allowed = 0
        self.refused = 0
        self._lock = asyncio.Lock()

    def status(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "always": list(self.always),
            "asked": self.asked,
            "allowed": self.allowed,
            "refused": self.refused,
            "human": self.run.ports.question is not None,
        }

    def needed(self, tool: Tool) -> bool:
        if tool.tier is Tier.READ:
            return False
        return self.mode != "allow" or self.run.ports.approve is not None

    async def check(self, ctx: CallContext, args: dict[str, Any], model: Any) -> Result | None:
        """Before the call: None when it may run, else the refusal. An `asks_in_call` tool is
        only refused up front by policy; its question waits for `confirm`."""
        tool = ctx.tool
        if not self.needed(tool):
            return None
        acts = getattr(tool.handler, ACTS_ATTR, None)
        if acts is not None and not acts(model):
            return None
        if self.mode == "deny":
            return self._refuse_by_policy(tool)
        if getattr(tool.handler, IN_CALL_ATTR, False) and tool.name not in self.always:
            ctx.extra[_PENDING] = args
            return None
        summary = await self._summary(ctx, args, model)
        return await self.decide(tool, ctx.surface.name, args, summary)

    async def decide(
        self, tool: Tool, surface: str, args: dict[str, Any], summary: str
    ) -> Result | None:
        if self.mode == "deny":
            return self._refuse_by_policy(tool)
        approve = self.run.ports.approve
        if approve is not None:
            return await self._by_callable(tool, surface, args, summary)
        if tool.name in self.always:
            self.allowed += 1
            return None
        if getattr(self.run.ports.question, "concurrent", False):
            return await self._ask(tool, cap_summary(summary))
        async with self._lock:
            if tool.name in self.always:  # granted while this call waited for the card
                self.allowed += 1
                return None
            return await self._ask(tool, cap_summary(summary))

    async def _by_callable(
        self, tool: Tool, surface: str, args: dict[str, Any], summary: str
    ) -> Result | None:
        from .ports import ApprovalRequest
        from .run import maybe_await

        request = ApprovalRequest(tool.name, tool.tier, dict(args), surface, summary)
        try:
            approved = await maybe_await(self.run.ports.approve(request))  # type: ignore[misc]
        except Exception as exc:  # fail closed: an approver that breaks is a refusal
            return self._refusal(
                tool,
                f"approval failed: {type(exc).__name__}: {str(exc)[:200]}; nothing was done. "
                f"The {tool.name} call was refused; tell the operator their approval step is "
                "failing",
                "failed",
            )
        if approved:
            self.allowed += 1
            return None
        return self._refusal(
            tool,
            f"the operator declined this {tool.name} call; nothing was done. "
            "Ask what they want instead, or try a different approach.",
            "declined",
        )

    async def _ask(self, tool: Tool, summary: str) -> Result | None:
        port = self.run.ports.question
        if port is None:
            return self._refusal(
                tool,
                f"{tool.name} needs the operator's approval (approve=ask) but no human is "
                f"attached to this run, so it was refused; nothing was done. {_next(tool)}, "
                "or have the run started with a human attached (a terminal, a session harness "
                "that answers approval events, an MCP client that elicits) or with approve=allow",
                "no_human",
            )
        self.asked += 1
        approval = Approval(self.asked, tool.name, tool.tier.value, summary, self.expiry)
        data = {"number": approval.number}
        try:
            async with asyncio.timeout(self.expiry):
                decision = await ask_port(port, approval)
        except TimeoutError:
            return self._refusal(
                tool,
                f"approval #{approval.number} for {tool.name} expired after {self.expiry:g}s "
                f"without an answer, so it was refused; nothing was done. {_next(tool)}",
                "expired",
                data,
            )
        except QuestionPortDetached as exc:
            return self._refusal(
                tool,
                f"approval #{approval.number} for {tool.name} could not be answered: the human "
                f"detached ({exc}), so it was refused; nothing was done. {_next(tool)}",
                "detached",
                data,
            )
        except Exception as exc:
            return self._refusal(
                tool,
                f"approval #{approval.number} for {tool.name} failed ({type(exc).__name__}: "
                f"{str(exc)[:200]}), so it was refused; nothing was done. {_next(tool)}",
                "failed",
                data,
            )
        if decision is Decision.ALWAYS:
            self.always.append(tool.name)
        if decision in (Decision.ALLOW, Decision.ALWAYS):
            self.allowed += 1
            return None
        return self._refusal(
            tool,
            f"the operator declined {tool.name} (approval #{approval.number}): "
            f"{summary.splitlines()[0][:120]}; nothing was {_done(tool)}. {_next(tool)}, "
            "or ask why with ask_user.",
            "declined",
            data,
        )

    def _refuse_by_policy(self, tool: Tool) -> Result:
        why = f" ({self.problem})" if self.problem else ""
        return self._refusal(
            tool,
            f"{tool.name} is {_article(tool.tier.value)} {tool.tier.value} tool and this run "
            f"refuses every write/exec call (approve=deny{why}); nothing was done. "
            f"{_next(tool)}: use read tools, or tell the operator you need {tool.name}.",
            "policy",
        )

    def _refusal(
        self, tool: Tool, text: str, reason: str, extra: dict[str, Any] | None = None
    ) -> Result:
        self.refused += 1
        data = {"refused": True, "tool": tool.name, "reason": reason, **(extra or {})}
        return Result(text=text, data=data, is_error=True)

    async def _summary(self, ctx: CallContext, args: dict[str, Any], model: Any) -> str:
        card = getattr(ctx.tool.handler, CARD_ATTR, None)
        if card is not None:
            try:
                value = card(ctx, model)
                if asyncio.iscoroutine(value):
                    value = await value
                if isinstance(value, str) and value.strip():
                    return value
            except Exception as exc:  # the card is advisory; the arguments still say enough
                return f"{describe_args(ctx.tool.name, args)}\n(card failed: {exc})"
        return describe_args(ctx.tool.name, args)


async def ask_port(port: Any, approval: Approval) -> Decision:
    """Ask through the port's own approval form when it has one, else as a question."""
    own = getattr(port, "approve", None)
    if own is not None:
        return Decision(await own(approval))
    return approval.from_answer(await port(approval.as_question()))


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _done(tool: Tool) -> str:
    return "run" if tool.tier is Tier.EXEC else "written"


def _next(tool: Tool) -> str:
    if tool.tier is Tier.EXEC:
        return "Continue without running it"
    return "Continue without writing"


CODE_LINES = 8


def describe_args(name: str, args: dict[str, Any]) -> str:
    """What a call will do, from its arguments: `TOOL ACTION` (or `TOOL OP`) first, a
    description next, then every other argument; multi-line text shows its first lines."""
    head = name
    verb = next((k for k in ("action", "op") if isinstance(args.get(k), str)), None)
    if verb is not None:
        head += f" {args[verb]}"
    lines = [head]
    description = args.get("description")
    if isinstance(description, str) and description.strip():
        lines.append(description.strip())
    for key, value in args.items():
        if key in (verb, "description") or value is None:
            continue
        if isinstance(value, str) and "\n" in value.strip():
            rows = value.strip("\n").splitlines()
            lines.append(f"{key}:")
            lines += [f"  {row}" for row in rows[:CODE_LINES]]
            if len(rows) > CODE_LINES:
                lines.append(f"  … {len(rows) - CODE_LINES} more lines")
        elif isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            lines.append(f"{key}: {' '.join(str(v) for v in value)}")
        elif isinstance(value, str):
            lines.append(f"{key}: {value}" if value.strip() else f"{key}: (empty)")
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False, default=str)[:200]}")
    return "\n".join(lines)
