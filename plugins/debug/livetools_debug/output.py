"""The debuggee's output: a bounded ring of characters that remembers how much it dropped."""

from __future__ import annotations

import re
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


_FRAME = re.compile(r'^  File "([^"]*)", line \d+')


def trim_traceback(text: str, internal: re.Pattern[str] | None, root: str | None = None) -> str:
    """Python tracebacks as the model needs them: frames whose path is the adapter's own
    (runpy, debugpy/pydevd) are left out and counted; project paths are made relative."""
    if "Traceback (most recent call last):" not in text:
        return text
    out: list[str] = []
    left_out = 0
    dropping = False
    for line in text.splitlines(keepends=True):
        frame = _FRAME.match(line)
        if frame and internal is not None and internal.search(frame.group(1)):
            left_out += 1
            dropping = True
            continue
        if dropping and line.startswith("    ") and not frame:
            continue  # the dropped frame's source line and carets
        dropping = False
        if left_out:
            plural = "s" if left_out > 1 else ""
            out.append(f"  ({left_out} internal frame{plural} of the debugger left out)\n")
            left_out = 0
        if frame and root:
            line = line.replace(f'File "{root.rstrip("/")}/', 'File "', 1)
        out.append(line)
    return "".join(out)
