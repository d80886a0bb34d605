"""The question ports the faces ship: a terminal card, and JSON-lines events for any harness
without a TTY. (MCP elicitation lives with the MCP face.)"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from ..questions import Answer, Question, QuestionPortDetached
from .lines import LineReader


class TerminalPort:
    """Shows the numbered card on stderr (stdout carries results) and reads the reply: option
    numbers, text, or an empty line to skip. A bad reply is explained and asked again."""

    def __init__(self, reader: LineReader, out: TextIO | None = None) -> None:
        self.reader = reader
        self.out = out or sys.stderr

    async def __call__(self, question: Question) -> Answer:
        self._say("\n" + question.card())
        while True:
            self._say("> ", end="")
            line = await self.reader.readline()
            if line is None:
                raise QuestionPortDetached("the terminal closed")
            try:
                return question.parse_reply(line)
            except ValueError as exc:
                self._say(f"{exc}. {question.how_to_reply()}")

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


class JsonLinesPort:
    """Emits a `question` event line and reads the answer from the next input line:
    `{"choices": [...], "text": "..."}`, `{"reply": "1,3"}` (terminal grammar) or
    `{"skip": true}`. A bad line gets a `question_error` event and is asked again; an expired
    question gets `question_expired` so the harness can take its card down."""

    def __init__(self, reader: LineReader, emit: Callable[[dict[str, Any]], None]) -> None:
        self.reader = reader
        self.emit = emit

    async def __call__(self, question: Question) -> Answer:
        self.emit(question_event(question))
        try:
            while True:
                line = await self.reader.readline()
                if line is None:
                    raise QuestionPortDetached("input ended")
                try:
                    return parse_answer_line(question, line)
                except ValueError as exc:
                    self.emit(
                        {"event": "question_error", "number": question.number, "text": str(exc)}
                    )
        except asyncio.CancelledError:
            self.emit({"event": "question_expired", "number": question.number})
            raise


def parse_answer_line(question: Question, line: str) -> Answer:
    try:
        payload = json.loads(line)
    except json.JSONDecodeError:
        raise ValueError(
            'expected a JSON answer like {"choices": ["label"]}, {"text": "..."}, '
            '{"reply": "1"} or {"skip": true}'
        ) from None
    if not isinstance(payload, dict):
        raise ValueError("the answer must be a JSON object")
    if payload.get("skip"):
        return Answer(skipped=True)
    if "reply" in payload:
        return question.parse_reply(str(payload["reply"]))
    choices = payload.get("choices", [])
    if isinstance(choices, str):
        choices = [choices]
    return question.answer(choices=list(choices), text=payload.get("text"))
