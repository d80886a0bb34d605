"""The debuggee's output: a bounded ring of characters that remembers how much it dropped."""

from __future__ import annotations

from collections import deque


class OutputRing:
    """Keeps the last `max_chars` characters written; `dropped` counts what fell off the front.
    `mark()`/`since(mark)` give what arrived during one call (a step, a continue)."""

    def __init__(self, max_chars: int = 256 * 1024) -> None:
        self._chunks: deque[str] = deque()
        self._chars = 0
        self._max = max_chars
        self.total = 0  # characters ever written
        self.dropped = 0

    def write(self, text: str) -> None:
        if not text:
            return
        text = text.replace("\r\n", "\n")  # lldb's pty output
        self._chunks.append(text)
        self._chars += len(text)
        self.total += len(text)
        while self._chars > self._max and self._chunks:
            first = self._chunks[0]
            excess = self._chars - self._max
            if len(first) <= excess:
                self._chunks.popleft()
                self._chars -= len(first)
                self.dropped += len(first)
            else:
                self._chunks[0] = first[excess:]
                self._chars -= excess
                self.dropped += excess

    def text(self) -> str:
        return "".join(self._chunks)

    def mark(self) -> int:
        return self.total

    def since(self, mark: int) -> str:
        """What was written after `mark` (as much of it as the ring still holds)."""
        new = self.total - mark
        if new <= 0:
            return ""
        held = self.text()
        return held[-new:] if new < len(held) else held
