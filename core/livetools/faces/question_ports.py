"""The question ports the faces ship: a terminal card, and JSON-lines events for any harness
without a TTY. (MCP elicitation lives with the MCP face.) Each also has `approve(Approval)`,
the permission prompt of `--approve ask`: its own answers, the same reading rules."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from ..questions import Answer, Approval, Decision, Question, QuestionPortDetached
from .lines import LineReader

T = TypeVar("T")


class TerminalPort:
    """Shows the numbered card on stderr (stdout carries results) and reads the reply: option
    numbers, text, or an empty line to skip. A bad reply is explained and asked again."""

    def __init__(self, reader: LineReader, out: TextIO | None = None) -> None:
        self.reader = reader
        self.out = out or sys.stderr

    async def __call__(self, question: Question) -> Answer:
        return await self._until_replied(
            question.card(), question.parse_reply, question.how_to_reply
        )

    async def approve(self, approval: Approval) -> Decision:
        """The approval card: y, n or a; anything else (an empty line too) is asked again."""
        try:
            return await self._until_replied(
                approval.card(), approval.parse_reply, approval.how_to_reply
            )
        except asyncio.CancelledError:
            self._say(f"\napproval #{approval.number} expired: {approval.tool} was refused")
            raise

    async def _until_replied(
        self, card: str, parse: Callable[[str], T], how_to_reply: Callable[[], str]
    ) -> T:
        self._say("\n" + card)
        while True:
            self._say("> ", end="")
            line = await self.reader.readline()
            if line is None:
                raise QuestionPortDetached("the terminal closed")
            try:
                return parse(line)
            except ValueError as exc:
                self._say(f"{exc}. {how_to_reply()}")

    def _say(self, text: str, end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()


def question_event(question: Question) -> dict[str, Any]:
    return {
        "event": "question",
        "number": question.number,
        "card": question.card(),
        "question": question.question,
        "context": question.context,
        "options": [{"label": o.label, "description": o.description} for o in question.options],
        "allow_free_text": question.allow_free_text,
        "multi_select": question.multi_select,
        "expires_in": question.expires_in,
    }


ANSWER_KEYS = ("choices", "text", "reply", "skip")
ANSWER_SHAPES = '{"choices": ["label"]}, {"text": "..."}, {"reply": "1"} or {"skip": true}'


class JsonLinesPort:
    """Emits a `question` event line and reads the answer from the next input lines:
    `{"choices": [...], "text": "..."}`, `{"reply": "1,3"}` (terminal grammar) or
    `{"skip": true}`. Only such an answer object answers: anything else (`{}`, a tool line, not
    JSON) gets a `question_error` event, carrying the line's `id` when it had one, and the
    question stays open. A tool line is refused, not queued: it never runs, and the harness
    sends it again after answering. An expired question gets `question_expired` so the harness
    can take its card down."""

    def __init__(self, reader: LineReader, emit: Callable[[dict[str, Any]], None]) -> None:
        self.reader = reader
        self.emit = emit

    async def __call__(self, question: Question) -> Answer:
        self.emit(question_event(question))
        return await self._until_answered(
            "question", question.number, lambda line: parse_answer_line(question, line)
        )

    async def approve(self, approval: Approval) -> Decision:
        """Emits an `approval` event (not a question: it has its own answers) and reads
        `{"approve": true|false}` or `{"always": true}`. Any other line gets `approval_error`
        and the approval stays open; a tool line is refused, not run. Expiry emits
        `approval_expired`."""
        self.emit(approval_event(approval))
        return await self._until_answered(
            "approval", approval.number, lambda line: parse_approval_line(approval, line)
        )

    async def _until_answered(self, kind: str, number: int, parse: Callable[[str], T]) -> T:
        """Read lines until `parse` accepts one; each refused line gets a `<kind>_error` event
        (with the line's `id`), and a cancelled wait (expiry) a `<kind>_expired` event."""
        try:
            while True:
                line = await self.reader.readline()
                if line is None:
                    raise QuestionPortDetached("input ended")
                if not line.strip():
                    continue
                try:
                    return parse(line)
                except ValueError as exc:
                    event: dict[str, Any] = {
                        "event": f"{kind}_error",
                        "number": number,
                        "text": str(exc),
                    }
                    rid = _line_id(line)
                    if rid is not None:
                        event["id"] = rid
                    self.emit(event)
        except asyncio.CancelledError:
            self.emit({"event": f"{kind}_expired", "number": number})
            raise


def _line_id(line: str) -> Any:
    try:
        payload = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return payload.get("id") if isinstance(payload, dict) else None


def parse_answer_line(question: Question, line: str) -> Answer:
    """The answer an input line gives; ValueError (saying what to send) for anything that is not
    an answer object."""
    try:
        payload = json.loads(line)
    except (ValueError, RecursionError):
        raise ValueError(f"question #{question.number} is open: expected {ANSWER_SHAPES}") from None
    if isinstance(payload, dict) and "tool" in payload:
        raise ValueError(
            f"question #{question.number} is open, so this tool line was refused (not run); "
            f"answer first with {ANSWER_SHAPES}, then send the line again"
        )
    if not isinstance(payload, dict) or not any(k in payload for k in ANSWER_KEYS):
        raise ValueError(f"question #{question.number} is open: expected {ANSWER_SHAPES}")
    if payload.get("skip") is True:
        return Answer(skipped=True)
    if "skip" in payload and payload["skip"] is not False:
        raise ValueError('"skip" must be true (or leave it out)')
    if "reply" in payload:
        return question.parse_reply(str(payload["reply"]))
    choices = payload.get("choices", [])
    if isinstance(choices, str):
        choices = [choices]
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise ValueError('"choices" must be a list of option labels')
    text = payload.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError('"text" must be a string')
    return question.answer(choices=choices, text=text)


def approval_event(approval: Approval) -> dict[str, Any]:
    return {
        "event": "approval",
        "number": approval.number,
        "tool": approval.tool,
        "tier": approval.tier,
        "summary": approval.summary,
        "card": approval.card(),
        "expires_in": approval.expires_in,
    }


APPROVAL_SHAPES = '{"approve": true}, {"approve": false} or {"always": true}'


def parse_approval_line(approval: Approval, line: str) -> Decision:
    """The decision an input line gives; ValueError (saying what to send) for anything else —
    a question's answer object included: only an approval answer decides an approval."""
    where = f"approval #{approval.number} ({approval.tool}) is open"
    try:
        payload = json.loads(line)
    except (ValueError, RecursionError):
        raise ValueError(f"{where}: expected {APPROVAL_SHAPES}") from None
    if isinstance(payload, dict) and "tool" in payload:
        raise ValueError(
            f"{where}, so this tool line was refused (not run); answer first with "
            f"{APPROVAL_SHAPES}, then send the line again"
        )
    if not isinstance(payload, dict) or not ({"approve", "always"} & payload.keys()):
        raise ValueError(f"{where}: expected {APPROVAL_SHAPES}")
    always, approve = payload.get("always"), payload.get("approve")
    if "always" in payload and not isinstance(always, bool):
        raise ValueError('"always" must be true or false')
    if "approve" in payload and not isinstance(approve, bool):
        raise ValueError('"approve" must be true or false')
    if always:
        if approve is False:
            raise ValueError('"always": true with "approve": false contradicts itself')
        return Decision.ALWAYS
    if approve is None:
        raise ValueError(f'"always": false decides nothing; expected {APPROVAL_SHAPES}')
    return Decision.ALLOW if approve else Decision.DENY
