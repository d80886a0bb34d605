"""What a tool call returns, and the caps every tool applies before the model reads it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Result:
    """`text` is what the model reads; `data` is structured JSON for programs; `images` are PNG
    bytes. An error result is a normal return value: tools never raise at the model."""

    text: str
    data: Any = None
    images: list[bytes] = field(default_factory=list)
    is_error: bool = False

    @classmethod
    def error(cls, text: str, data: Any = None) -> Result:
        return cls(text=text, data=data, is_error=True)

    def to_json(self) -> dict[str, Any]:
        """The `--json` / session-line shape shared by the CLI faces."""
        import base64

        return {
            "ok": not self.is_error,
            "text": self.text,
            "data": self.data,
            "images": [
                {"mime": "image/png", "base64": base64.b64encode(png).decode("ascii")}
                for png in self.images
            ],
        }


class ToolError(Exception):
    """Raised inside a handler to end the call with an error result the model can act on."""


def truncation_note(more: int, noun: str = "more") -> str:
    return f"truncated: {more} {noun}"


def cap_items(items: Sequence[T], limit: int) -> tuple[list[T], str | None]:
    """Keep the first `limit` items; the note says how many were cut (None when nothing was)."""
    if len(items) <= limit:
        return list(items), None
    return list(items[:limit]), truncation_note(len(items) - limit)


def cap_text(text: str, limit: int, *, tail: int = 0) -> str:
    """Cap a text at `limit` characters, keeping `tail` characters of the end when asked (useful
    for output whose last lines hold the error); the cut is stated in place."""
    if len(text) <= limit:
        return text
    head_len = max(limit - tail, 0)
    cut = len(text) - head_len - tail
    head = text[:head_len]
    end = text[len(text) - tail :] if tail else ""
    return f"{head}\n… [{truncation_note(cut, 'more characters')}] …\n{end}".rstrip("\n")


def cap_value(text: str, limit: int = 400) -> str:
    """One value (a variable, a hover line): cut to `limit` characters with the count cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({truncation_note(len(text) - limit, 'more characters')})"
