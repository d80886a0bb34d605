"""Questions to the human: the card every port shows, the answer every port returns, and the
reply grammar shared by the terminal and JSON-lines ports.

These live in the host, not in the ask plugin, because the ports are the harness's side: the
faces (terminal, JSON lines, MCP elicitation) and any harness implement `QuestionPort`, and a
harness may reuse `Question.card()` for its own permission prompts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True)
class Option:
    label: str
    description: str | None = None


@dataclass(frozen=True)
class Question:
    number: int  # question #N of this run
    question: str
    context: str | None = None
    options: tuple[Option, ...] = ()
    allow_free_text: bool = False
    multi_select: bool = False
    expires_in: float | None = None  # seconds

    def card(self) -> str:
        """The numbered card: the same text on a terminal, in a JSON-lines event and in an MCP
        elicitation message (where option descriptions have no slot of their own)."""
        lines = [f"Question #{self.number}: {self.question}"]
        if self.context:
            lines += ["", self.context]
        if self.options:
            lines.append("")
            for i, option in enumerate(self.options, start=1):
                detail = f" — {option.description}" if option.description else ""
                lines.append(f"  {i}. {option.label}{detail}")
        lines += ["", self.how_to_reply()]
        return "\n".join(lines)

    def how_to_reply(self) -> str:
        ways = []
        if self.options:
            ways.append(
                "numbers separated by commas" if self.multi_select else "the number of an option"
            )
        if self.allow_free_text:
            ways.append("your own text")
        return f"Reply with {' or '.join(ways)}; an empty reply skips."

    def parse_reply(self, reply: str) -> Answer:
        """Terminal/JSON-lines grammar: option numbers, free text, or empty = skip. Raises
        ValueError with what to type instead."""
        text = reply.strip()
        if not text:
            return Answer(skipped=True)
        parts = [p.strip() for p in text.split(",")]
        if self.options and all(p.isdigit() for p in parts):
            numbers = [int(p) for p in parts]
            if len(numbers) > 1 and not self.multi_select:
                raise ValueError("pick one option only")
            bad = [n for n in numbers if not 1 <= n <= len(self.options)]
            if bad:
                raise ValueError(f"no option {bad[0]}; options are 1-{len(self.options)}")
            labels = tuple(dict.fromkeys(self.options[n - 1].label for n in numbers))
            return Answer(choices=labels)
        return self.answer(text=text)

    def answer(self, choices: tuple[str, ...] | list[str] = (), text: str | None = None) -> Answer:
        """Check an answer given as labels and/or text (JSON lines, MCP, a harness)."""
        labels = {o.label for o in self.options}
        unknown = [c for c in choices if c not in labels]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not one of the options")
        if len(choices) > 1 and not self.multi_select:
            raise ValueError("pick one option only")
        if text and not self.allow_free_text:
            raise ValueError("this question takes one of the listed options, not free text")
        if not choices and not text:
            return Answer(skipped=True)
        return Answer(choices=tuple(choices), text=text or None)


@dataclass(frozen=True)
class Answer:
    choices: tuple[str, ...] = field(default_factory=tuple)
    text: str | None = None
    skipped: bool = False


class QuestionPortDetached(Exception):
    """The human went away mid-question (terminal closed, client disconnected)."""


QuestionPort = Callable[[Question], Awaitable[Answer]]


# -- permission prompts ---------------------------------------------------------------------
# The second human gate beside ask_user: "may this write/exec call run?". Same card shape, same
# ports; a port that has no approval form of its own gets the card as a three-option question.


class Decision(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ALWAYS = "always"  # allow this tool for the rest of the run


SUMMARY_LINES = 12  # lines of "what will happen" a card shows
SUMMARY_WIDTH = 200  # characters per line


def cap_summary(text: str, lines: int = SUMMARY_LINES, width: int = SUMMARY_WIDTH) -> str:
    """A card's "what will happen" block, capped in lines and width, saying how much was cut."""
    rows = text.splitlines() or [""]
    shown = [r if len(r) <= width else r[: width - 1] + "…" for r in rows[:lines]]
    if len(rows) > lines:
        shown.append(f"… truncated: {len(rows) - lines} more lines")
    return "\n".join(shown)


_REPLIES = {
    Decision.ALLOW: ("y", "yes", "allow", "1"),
    Decision.DENY: ("n", "no", "deny", "2"),
    Decision.ALWAYS: ("a", "always", "3"),
}


@dataclass(frozen=True)
class Approval:
    number: int  # approval #N of this run
    tool: str
    tier: str
    summary: str  # what will happen, already capped
    expires_in: float | None = None  # seconds

    def card(self) -> str:
        lines = [f"Approval #{self.number}: allow {self.tool} ({self.tier})?", "", self.summary]
        lines += ["", self.how_to_reply()]
        return "\n".join(lines)

    def how_to_reply(self) -> str:
        return f"Reply y to allow, n to deny, or a to allow {self.tool} for the rest of this run."

    def labels(self) -> dict[Decision, str]:
        return {
            Decision.ALLOW: "Allow",
            Decision.DENY: "Deny",
            Decision.ALWAYS: f"Allow {self.tool} for the rest of this run",
        }

    def parse_reply(self, reply: str) -> Decision:
        """Terminal grammar: y / n / a (or the words, or 1-3). Raises ValueError otherwise:
        an empty or unclear reply is asked again, never taken as either answer."""
        text = reply.strip().lower()
        for decision, words in _REPLIES.items():
            if text in words:
                return decision
        if not text:
            raise ValueError("an empty reply decides nothing")
        raise ValueError(f"{reply.strip()[:40]!r} is not y, n or a")

    def as_question(self) -> Question:
        """The card as a question, for a question port that has no approval form of its own."""
        labels = self.labels()
        return Question(
            number=self.number,
            question=f"Allow {self.tool} ({self.tier})?",
            context=self.summary,
            options=tuple(Option(labels[d]) for d in Decision),
            expires_in=self.expires_in,
        )

    def from_answer(self, answer: Answer) -> Decision:
        """A question port's answer to `as_question`; a skip denies."""
        by_label = {label: d for d, label in self.labels().items()}
        if answer.skipped or not answer.choices:
            return Decision.DENY
        return by_label.get(answer.choices[0], Decision.DENY)


ApprovalPort = Callable[[Approval], Awaitable[Decision]]
