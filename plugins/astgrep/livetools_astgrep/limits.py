"""Bounds on what one call may ask for, checked before any work: a pattern is a piece of code an
agent types (a few hundred characters), and a 100 KB one costs minutes to compile and match
while saying nothing a smaller one would not."""

from __future__ import annotations

from .pattern import PatternError

MAX_PATTERN_CHARS = 10_000
MAX_PATTERN_NODES = 2_000
ECHO_CHARS = 200


def echo(text: str, cap: int = ECHO_CHARS) -> str:
    """`text` quoted for an error message: at most `cap` characters of it, and its length."""
    text = text.strip()
    return repr(text) if len(text) <= cap else repr(text[:cap]) + f"… ({len(text):,} characters)"


def check_pattern_size(source: str) -> None:
    if len(source) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"the pattern is {len(source):,} characters, over the {MAX_PATTERN_CHARS:,}-character "
            f"limit (it starts {echo(source, 80)}); match a smaller piece of code: the part that "
            "tells the matches apart, with $$$ for the rest"
        )


def check_pattern_nodes(source: str, nodes: int) -> None:
    if nodes > MAX_PATTERN_NODES:
        raise PatternError(
            f"the pattern {echo(source, 80)} has {nodes:,} syntax nodes, over the "
            f"{MAX_PATTERN_NODES:,}-node limit; match a smaller piece of code, with $$$ for "
            "the rest"
        )


def capped_message(message: str, source: str) -> str:
    """An error message that quotes a long pattern whole, with the quote cut to ECHO_CHARS."""
    if len(source) <= ECHO_CHARS or len(message) <= 2 * ECHO_CHARS + 400:
        return message
    for quoted in (repr(source), repr(source.strip()), source.strip(), source):
        if quoted in message:
            return message.replace(quoted, echo(source))
    return message[: 2 * ECHO_CHARS] + f"… ({len(message) - 2 * ECHO_CHARS:,} more characters)"
