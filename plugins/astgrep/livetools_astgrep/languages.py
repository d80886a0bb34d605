"""Loaded grammars, per process: the tree-sitter Language and parsers behind a `Grammar`.

tree-sitter is imported here, on first use, never at plugin import (the tool list must stay
fast to produce).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Loaded:
    """A grammar loaded in this process."""

    def __init__(self, grammar_id: str, language: Any) -> None:
        from tree_sitter import Parser

        self.id = grammar_id
        self.language = language
        self._parser_cls = Parser
        self._parser: Any = None
        self._queries: dict[str, Any] = {}

    def parser(self) -> Any:
        if self._parser is None:
            self._parser = self._parser_cls(self.language)
        return self._parser

    def parse(self, data: bytes) -> Any:
        return self.parser().parse(data)

    def kind_id(self, kind: str, named: bool = True) -> int | None:
        ident = self.language.id_for_node_kind(kind, named)
        return ident or None

    def query(self, source: str) -> Any | None:
        """A compiled query, or None when the grammar refuses it."""
        if source not in self._queries:
            from tree_sitter import Query

            if len(self._queries) >= 512:  # one per pattern of a long run: cheap to rebuild
                self._queries.clear()

            try:
                self._queries[source] = Query(self.language, source)
            except Exception:
                self._queries[source] = None
        return self._queries[source]


class GrammarLoadError(Exception):
    pass


_LOADED: dict[tuple[str, str], Loaded] = {}


def load(grammar_id: str, loader: Callable[[], Any]) -> Loaded:
    """The process-wide loaded grammar for `grammar_id` (loading it on first use)."""
    key = (grammar_id, repr(loader))
    loaded = _LOADED.get(key)
    if loaded is None:
        try:
            language = loader()
        except Exception as exc:
            raise GrammarLoadError(
                f"grammar {grammar_id!r} failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        if not hasattr(language, "id_for_node_kind"):  # a capsule or an int pointer
            from tree_sitter import Language

            language = Language(language)
        loaded = _LOADED[key] = Loaded(grammar_id, language)
    return loaded
