"""Line input shared by the session loop and the question ports that read from the same stdin."""

from __future__ import annotations

import asyncio
import threading
from typing import TextIO


class LineReader:
    """Reads lines on a daemon thread into a queue, so an abandoned read (a question that
    expired) neither blocks interpreter exit nor swallows the next line: every line goes to
    whichever reader asks next. `None` means end of input."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[str | None] | None = None
        self._eof = False

    def _start(self) -> asyncio.Queue[str | None]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def pump() -> None:
            while True:
                try:
                    line = self._stream.readline()
                except (OSError, ValueError):
                    line = ""
                loop.call_soon_threadsafe(queue.put_nowait, line or None)
                if not line:
                    return

        threading.Thread(target=pump, name="livetools-stdin", daemon=True).start()
        return queue

    async def readline(self) -> str | None:
        if self._eof:
            return None
        if self._queue is None:
            self._queue = self._start()
        line = await self._queue.get()
        if line is None:
            self._eof = True
        return line
