"""livetools plugin astgrep: structural search and rewrite (ast_grep, ast_edit, resolve) on
tree-sitter grammars from tree-sitter-language-pack, through a per-language context ladder.

The hooks live in `livetools_astgrep.plugin` (the entry point); this package itself imports only
the standard library, so the search workers start without loading the host."""

from .grammar import Grammar

__all__ = ["Grammar"]
