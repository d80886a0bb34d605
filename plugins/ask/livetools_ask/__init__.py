"""livetools-ask: `ask_user`, the one way a run asks its operator something.

The plugin owns the tool's contract (validation, numbering, what skip and expiry tell the model);
the ports that reach a human — terminal, JSON lines, MCP elicitation, a harness's callable — are
the harness's side and live in the host (`livetools.questions`, `livetools.faces`).
"""

from __future__ import annotations

from typing import Any

from livetools import Resource, Tier, Tool, hookimpl
from livetools.options import Number, Option

from .tool import DEFAULT_EXPIRY, AskArgs, AskDesk, ask_user, expiry_seconds

DESCRIPTION = (
    "Ask the operator a question and wait for the answer (blocks). Use instead of asking in "
    "chat, which would end your turn. Skipped or expired: continue on a stated assumption."
)


@hookimpl
def livetools_options() -> list[Option]:
    return [
        Option(
            "ask_expiry",
            Number(),
            600.0,
            "seconds a question waits for the human (also $LIVETOOLS_ASK_EXPIRY)",
        ),
    ]


@hookimpl
def livetools_resources(run: Any) -> Resource | None:
    # Fail closed: without a port that reaches a human and a space to show the card in, the tool
    # does not exist, rather than blocking forever or answering itself.
    if run.ports.question is None or not run.ports.target_space:
        return None
    return AskDesk(run.ports.question, run.ports.target_space, expiry_seconds(run.options))


@hookimpl
def livetools_register_tools(register: Any, run: Any) -> None:
    try:
        expiry = expiry_seconds(run.options)
    except ValueError:  # the desk did not connect either: the tool says why when called
        expiry = DEFAULT_EXPIRY
    register(
        Tool(
            "ask_user",
            Tier.READ,
            AskArgs,
            ask_user,
            DESCRIPTION,
            resource="ask",
            # The host's wall bound sits above the question's own expiry, which is the real limit.
            timeout=expiry + 30,
        )
    )
