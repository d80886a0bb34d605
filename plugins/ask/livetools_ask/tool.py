"""The ask_user tool: arguments, the per-run desk that numbers questions, and the handler."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel, Field

from livetools import CallContext, Resource, Result, ToolError
from livetools.questions import Answer, Option, Question, QuestionPort, QuestionPortDetached

DEFAULT_EXPIRY = 600.0  # seconds
ENV_EXPIRY = "LIVETOOLS_ASK_EXPIRY"
CARRY_ON = "continue on a stated assumption (say which) and do not ask this again"


def expiry_seconds(options: dict[str, Any]) -> float:
    """The run option `ask_expiry`, else LIVETOOLS_ASK_EXPIRY (for the CLI and MCP faces), else
    ten minutes."""
    value = options.get("ask_expiry") or os.environ.get(ENV_EXPIRY) or DEFAULT_EXPIRY
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"ask expiry {value!r}: expected a positive number of seconds")
    return seconds


class OptionArg(BaseModel):
    label: str = Field(description="Short answer text.")
    description: str | None = Field(None, description="What choosing it means.")


class AskArgs(BaseModel):
    question: str = Field(description="One clear question.")
    context: str | None = Field(None, description="Why you ask; what you found.")
    options: list[OptionArg] = Field(default_factory=list, max_length=9)
    allow_free_text: bool = Field(False, description="Accept a typed answer.")
    multi_select: bool = Field(False, description="Allow several options.")


class AskDesk(Resource):
    """Per-run question state: the port, where cards are shown, and the question counter."""

    key = "ask"

    def __init__(self, port: QuestionPort, target_space: str, expiry: float) -> None:
        self.port = port
        self.target_space = target_space
        self.expiry = expiry
        self.asked = 0

    async def status(self) -> dict[str, Any]:
        return {"usable": True, "target": self.target_space, "asked": self.asked}


def validate(args: AskArgs) -> None:
    if not args.question.strip():
        raise ToolError("question is empty; ask one clear question")
    labels = [o.label.strip() for o in args.options]
    if any(not label for label in labels):
        raise ToolError("an option has an empty label; give every option a short label")
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise ToolError(f"duplicate option labels: {', '.join(dupes)}; make each label distinct")
    if not args.options and not args.allow_free_text:
        raise ToolError("no options and allow_free_text is false: the human could not answer")
    if args.multi_select and len(args.options) < 2:
        raise ToolError("multi_select needs at least 2 options")


def describe(number: int, answer: Answer) -> str:
    parts = []
    if answer.choices:
        parts.append(", ".join(answer.choices))
    if answer.text:
        parts.append(f'"{answer.text}"' if answer.choices else answer.text)
    return f"Answer to question #{number}: " + " — ".join(parts)


async def ask_user(ctx: CallContext, args: AskArgs) -> Result:
    validate(args)
    desk: AskDesk = ctx.resource
    desk.asked += 1
    question = Question(
        number=desk.asked,
        question=args.question.strip(),
        context=args.context,
        options=tuple(Option(o.label.strip(), o.description) for o in args.options),
        allow_free_text=args.allow_free_text,
        multi_select=args.multi_select,
        expires_in=desk.expiry,
    )
    try:
        async with asyncio.timeout(desk.expiry):
            answer = await desk.port(question)
    except TimeoutError:
        return Result.error(
            f"question #{question.number} expired after {desk.expiry:g}s without an answer; "
            f"{CARRY_ON}",
            data={"number": question.number, "expired": True},
        )
    except QuestionPortDetached as exc:
        return Result.error(
            f"question #{question.number} could not be answered: the human detached ({exc}); "
            f"{CARRY_ON}",
            data={"number": question.number, "detached": True},
        )
    data = {
        "number": question.number,
        "choices": list(answer.choices),
        "text": answer.text,
        "skipped": answer.skipped,
    }
    if answer.skipped:
        return Result(text=f"The human skipped question #{question.number}: {CARRY_ON}.", data=data)
    return Result(text=describe(question.number, answer), data=data)
