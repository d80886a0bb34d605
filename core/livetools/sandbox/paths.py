"""The one mapping between the host's view of the run root and the sandbox's.

Language servers and debug adapters inside a sandbox speak the sandbox's paths; the model and the
run speak the host's. Messages are rewritten at the wire (JSON-RPC and DAP frames alike), so no
family learns a second path space. Identity when both roots are the same path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

# Keys whose values are document contents, never paths: a source file that happens to start with
# the root's path must reach the server byte for byte.
_CONTENT_KEYS = frozenset({"text", "newText", "insertText", "value", "output", "expression"})
# Keys whose values are a program's sentences (a diagnostic, a log line, an error): every path or
# URI under the root in them is mapped, not only a leading one ("Cycle detected in import chain
# /workspace/a.py /workspace/b.py" reads as the host's paths, as without a sandbox).
_PROSE_KEYS = frozenset({"message"})


def _uri_prefix(path: str) -> str:
    return "file://" + quote(path, safe="/")


@dataclass(frozen=True)
class PathMap:
    """`host` is the run root as the host sees it, `inside` the same folder inside the sandbox."""

    host: Path
    inside: PurePosixPath

    @property
    def identity(self) -> bool:
        return str(self.host) == str(self.inside)

    def to_inside(self, path: str | Path) -> str:
        """A host path under the root as the sandbox sees it; anything else unchanged."""
        return _swap(str(path), str(self.host), str(self.inside))

    def to_host(self, path: str | PurePosixPath) -> str:
        """A sandbox path under its root as the host sees it; anything else unchanged."""
        return _swap(str(path), str(self.inside), str(self.host))

    def outbound(self, message: Any) -> Any:
        """A message to a process inside: host paths and file URIs under the root rewritten."""
        if self.identity:
            return message
        host, inside = str(self.host), str(self.inside)
        return _walk(message, self._rewriter(host, inside), _prose(host, inside))

    def inbound(self, message: Any) -> Any:
        """A message from a process inside: its paths and file URIs under its root rewritten."""
        if self.identity:
            return message
        host, inside = str(self.host), str(self.inside)
        return _walk(message, self._rewriter(inside, host), _prose(inside, host))

    @staticmethod
    def _rewriter(old: str, new: str) -> Callable[[str], str]:
        old_uri, new_uri = _uri_prefix(old), _uri_prefix(new)

        def rewrite(value: str) -> str:
            if value.startswith("file://"):
                return _swap(value, old_uri, new_uri)
            return _swap(value, old, new)

        return rewrite


def _swap(value: str, old: str, new: str) -> str:
    """`value` with the leading folder `old` replaced by `new` (whole path segments only)."""
    if value == old:
        return new
    stem = old.rstrip("/")
    if value.startswith(stem + "/") or value.startswith(stem + "#") or value.startswith(stem + "?"):
        return new.rstrip("/") + value[len(stem) :]
    return value


def _prose(old: str, new: str) -> Callable[[str], str]:
    """Every occurrence of the folder `old` (as a path or a file URI) in a sentence, whole
    segments only: not inside a longer path, not a prefix of a longer name."""
    stem = old.rstrip("/")
    if not stem:
        return lambda value: value
    found = re.compile(
        rf"(?<![\w.~%/-])(?:(?P<uri>{re.escape(_uri_prefix(stem))})|{re.escape(stem)})(?![\w.~%-])"
    )
    as_uri, as_path = _uri_prefix(new.rstrip("/")), new.rstrip("/")
    return lambda value: found.sub(lambda m: as_uri if m.group("uri") else as_path, value)


def _walk(
    node: Any, rewrite: Callable[[str], str], prose: Callable[[str], str], key: str | None = None
) -> Any:
    if isinstance(node, str):
        if key in _CONTENT_KEYS:
            return node
        return prose(node) if key in _PROSE_KEYS else rewrite(node)
    if isinstance(node, dict):
        # Keys too: an LSP WorkspaceEdit's `changes` (and a diagnostic report's
        # `relatedDocuments`) are maps keyed by document URI.
        return {rewrite(k): _walk(v, rewrite, prose, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_walk(v, rewrite, prose, key) for v in node]
    return node
