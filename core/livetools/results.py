"""What a tool call returns, and the caps every tool applies before the model reads it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

# A Python str can hold lone surrogates (JSON's legal "\ud800", a file name decoded with
# surrogateescape); UTF-8 cannot, so every face replaces them before it writes.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


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
        """The `--json` / session-line shape shared by the CLI faces (written with `json_line`,
        which makes it plain JSON that encodes)."""
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


def scrub(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8. Most texts
    are ASCII (a flag of the str, free to read) or encode as they are, either of which is
    cheaper than the regular expression's scan (2.4 ms for a 0.66 MB search answer)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def scrub_json(value: Any) -> Any:
    """A parsed JSON value with lone surrogates replaced everywhere (keys included): what the
    text faces hand a run, so no tool sees a str that UTF-8 cannot hold. RecursionError for a
    value nested past the encoder."""
    return json.loads(scrub(json.dumps(value, ensure_ascii=False)))


def plain_json(value: Any) -> Any:
    """`value` as plain JSON (str for anything json cannot hold, surrogates replaced). Faces
    put tool data on a wire that must never fail on it; a value json cannot walk (nested past
    the recursion limit) becomes its notice."""
    if value is None or isinstance(value, bool | int | float):
        return value
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as exc:
        return f"[unserializable data: {type(exc).__name__}]"
    return json.loads(scrub(text))


def json_line(obj: Any) -> str:
    """One JSON line that always encodes as UTF-8: the session and `call --json` output."""
    try:
        text = json.dumps(obj, default=str, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as exc:
        text = json.dumps({"ok": False, "text": f"unserializable output: {type(exc).__name__}"})
    return scrub(text)


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
