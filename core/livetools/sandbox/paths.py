"""The one mapping between the host's view of the run root and the sandbox's.

Language servers and debug adapters inside a sandbox speak the sandbox's paths; the model and the
run speak the host's. Messages are rewritten at the wire (JSON-RPC and DAP frames alike), so no
family learns a second path space. Identity when both roots are the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

# Keys whose values are document contents, never paths: a source file that happens to start with
# the root's path must reach the server byte for byte.
_CONTENT_KEYS = frozenset({"text", "newText", "insertText", "value", "output", "expression"})


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
        return _walk(message, self._rewriter(str(self.host), str(self.inside)))

    def inbound(self, message: Any) -> Any:
        """A message from a process inside: its paths and file URIs under its root rewritten."""
        if self.identity:
            return message
        return _walk(message, self._rewriter(str(self.inside), str(self.host)))

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


def _walk(node: Any, rewrite: Callable[[str], str], key: str | None = None) -> Any:
    if isinstance(node, str):
        return node if key in _CONTENT_KEYS else rewrite(node)
    if isinstance(node, dict):
        # Keys too: an LSP WorkspaceEdit's `changes` (and a diagnostic report's
        # `relatedDocuments`) are maps keyed by document URI.
        return {rewrite(k): _walk(v, rewrite, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_walk(v, rewrite, key) for v in node]
    return node
