"""Turning a cell's iopub messages into what the model reads: text in notebook order, PNGs sent
once each, rich bundles (HTML tables, SVG) kept for programs in `data`."""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from livetools import cap_text
from livetools.results import truncation_note

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_DEFAULT_REPR = re.compile(r"^<[\w.]+ (object|at 0x)[^>]*>$")
_BLOCK_END = re.compile(r"</(p|div|tr|h\d|li|table|thead|tbody|pre)>|<br\s*/?>", re.I)
_CELL_END = re.compile(r"</t[dh]>", re.I)
_TAG = re.compile(r"<[^>]+>")
# Frames inside the kernel's own machinery, and the helpers livetools defines in the kernel
# (`tool()` raising ToolError: "Cell In[1], line 89, in _livetools_setup.<locals>.tool").
_KERNEL_FRAME = re.compile(
    r"^(File \S*[/\\](ipykernel|IPython)[/\\]|.*\bin _livetools_setup\.<locals>\.)"
)
_DROP = re.compile(r"<(script|style)\b.*?</\1>", re.I | re.S)


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def settle_carriage_returns(text: str) -> str:
    """What a terminal would show: a progress bar redrawn with `\\r` keeps its last state."""
    if "\r" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        parts = [p for p in line.split("\r") if p]
        lines.append(parts[-1] if parts else "")
    return "\n".join(lines)


def html_to_text(markup: str) -> str:
    text = _DROP.sub("", markup)
    text = _CELL_END.sub("\t", _BLOCK_END.sub("\n", text))
    text = html.unescape(_TAG.sub("", text))
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def png_size(png: bytes) -> tuple[int, int] | None:
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR":
        width, height = struct.unpack(">II", png[16:24])
        return width, height
    return None


@dataclass
class _Item:
    kind: str  # stream | display | error
    text: str
    name: str = ""


@dataclass
class Outputs:
    """Collects one cell's outputs in order; `render()` gives the capped text."""

    max_images: int = 8
    items: list[_Item | None] = field(default_factory=list)
    images: list[bytes] = field(default_factory=list)
    rich: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, str] | None = None
    execution_count: int | None = None
    images_dropped: int = 0
    _seen: dict[str, int] = field(default_factory=dict)
    _displays: dict[str, int] = field(default_factory=dict)
    _clear_on_next: bool = False
    store: int = 1_000_000
    store_tail: int = 50_000
    _stored: int = 0
    _dropped: int = 0
    _flood: _Item | None = None

    def add(self, msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "clear_output":
            if content.get("wait"):
                self._clear_on_next = True
            else:
                self._clear()
            return
        if self._clear_on_next and kind != "update_display_data":
            self._clear()
        if kind == "stream":
            self._stream(content.get("name", "stdout"), str(content.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            if kind == "execute_result":
                self.execution_count = content.get("execution_count")
            item = self._bundle(content.get("data") or {})
            display_id = (content.get("transient") or {}).get("display_id")
            if display_id:
                self._displays[display_id] = len(self.items)
            self.items.append(item)
        elif kind == "update_display_data":
            display_id = (content.get("transient") or {}).get("display_id")
            index = self._displays.get(display_id) if display_id else None
            if index is not None:
                self.items[index] = self._bundle(content.get("data") or {})
        elif kind == "error":
            self._error(content)

    def add_payloads(self, payloads: list[dict[str, Any]]) -> None:
        """Help pages (`len?`) come back in the execute_reply, not on iopub."""
        for payload in payloads or []:
            if payload.get("source") == "page":
                data = payload.get("data") or {}
                text = data.get("text/plain") or html_to_text(data.get("text/html", ""))
                if text:
                    self.items.append(_Item("display", strip_ansi(str(text)).rstrip()))

    def _clear(self) -> None:
        self.items.clear()
        self._flood, self._stored, self._dropped = None, 0, 0
        self._displays.clear()
        self._clear_on_next = False

    def _stream(self, name: str, text: str) -> None:
        """Stream text is kept up to `store` characters; past that only a tail is kept, so a
        cell printing without end cannot grow the host's memory (the render cuts far less).
        The chunk that crosses the limit is split: its start stays in the head."""
        if self._flood is not None:
            self._flood.text = (self._flood.text + text)[-self.store_tail :]
            self._dropped += len(text)
            return
        room = self.store - self._stored
        if len(text) > room:
            if room > 0:
                self._append_stream(name, text[:room])
            self._stored = self.store
            self._flood = _Item("flood", "")
            self.items.append(self._flood)
            self._stream(name, text[max(room, 0) :])
            return
        self._stored += len(text)
        self._append_stream(name, text)

    def _append_stream(self, name: str, text: str) -> None:
        last = self.items[-1] if self.items else None
        if last is not None and last.kind == "stream" and last.name == name:
            last.text += text
        else:
            self.items.append(_Item("stream", text, name))

    def _error(self, content: dict[str, Any]) -> None:
        ename, evalue = str(content.get("ename", "Error")), str(content.get("evalue", ""))
        self.error = {"ename": ename, "evalue": evalue}
        lines = [strip_ansi(str(line)) for line in content.get("traceback") or []]
        # Frames inside the kernel's own machinery (input() → raw_input → _input_request) say
        # nothing about the user's code.
        lines = [line for line in lines if not _KERNEL_FRAME.match(line)]
        if not lines and not ename.strip() and evalue.strip().lstrip("-").isdigit():
            # bash_kernel's error for a failed command: no name, the exit status as the value
            text = f"(exit status {evalue.strip()})"
        else:
            text = "\n".join(lines).strip() or f"{ename}: {evalue}"
        self.items.append(_Item("error", text))

    def _bundle(self, data: dict[str, Any]) -> _Item | None:
        png = data.get("image/png")
        if isinstance(png, str):
            return self._image(png)
        rich = {
            k: v for k, v in data.items() if k not in ("text/plain", "image/png") and v is not None
        }
        if rich:
            self.rich.append(rich)
        plain = data.get("text/plain")
        plain = strip_ansi(str(plain)) if plain is not None else None
        if "text/markdown" in data:
            # Unescaped: IRkernel's markdown of a data frame escapes its column types
            # (`mpg &lt;dbl&gt;`), which the model would read as written.
            return _Item("display", html.unescape(str(data["text/markdown"])))
        if "text/html" in data and (plain is None or _DEFAULT_REPR.match(plain.strip())):
            return _Item("display", html_to_text(str(data["text/html"])))
        if plain is not None:
            return _Item("display", plain)
        if "application/json" in data:
            return _Item("display", json.dumps(data["application/json"], default=str))
        if "text/latex" in data:
            return _Item("display", str(data["text/latex"]))
        kinds = ", ".join(sorted(rich)) or "nothing"
        return _Item("display", f"[output of type {kinds}: kept in data, not shown as text]")

    def _image(self, encoded: str) -> _Item | None:
        try:
            png = base64.b64decode(encoded)
        except (binascii.Error, ValueError):
            return _Item("display", "[an image/png output that is not valid base64]")
        digest = hashlib.sha1(png).hexdigest()
        if digest in self._seen:
            return None  # the same figure again (e.g. a Figure as last expression): sent once
        if len(self.images) >= self.max_images:
            self.images_dropped += 1
            return _Item("display", f"[image not sent: {self.max_images} images per cell at most]")
        self.images.append(png)
        self._seen[digest] = len(self.images)
        size = png_size(png)
        shape = f" {size[0]}x{size[1]}" if size else ""
        return _Item("display", f"[image {len(self.images)}: PNG{shape}]")

    def render(self, limit: int, tail: int) -> str:
        """The cell's text, cut once: `limit` characters at most, the last `tail` of them from
        the end, one marker counting everything left out (a flood's dropped middle included)."""
        parts: list[str] = []
        before: str | None = None  # the text ahead of a flood's dropped middle
        for item in self.items:
            if item is None:
                continue
            if item.kind == "flood":
                before, parts = "".join(parts), []
                parts.append(settle_carriage_returns(strip_ansi(item.text)))
            elif item.kind == "stream":
                text = settle_carriage_returns(strip_ansi(item.text))
                if item.name == "stderr" and text.strip():
                    text = text if text.endswith("\n") else text + "\n"
                parts.append(text)
            else:
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n")
                parts.append(item.text.rstrip("\n") + "\n")
        if before is None:
            return cap_text("".join(parts).rstrip("\n"), limit, tail=tail)
        after = "".join(parts).rstrip("\n")
        dropped = max(self._dropped - len(self._flood.text if self._flood else ""), 0)
        head = before[: max(limit - tail, 0)]
        end = after[max(len(after) - tail, 0) :] if tail else ""
        cut = len(before) - len(head) + dropped + len(after) - len(end)
        if cut <= 0:
            return (before + after).rstrip("\n")
        return f"{head}\n… [{truncation_note(cut, 'more characters')}] …\n{end}".rstrip("\n")
