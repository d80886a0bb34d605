"""The astgrep family's own hook: grammars. A third party adds a language (or replaces a built-in
one's ladder) with a plugin that implements it; see docs/ast-grep.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from livetools import hookspec

if TYPE_CHECKING:
    from .grammar import Grammar


@hookspec
def livetools_grammars() -> list[Grammar] | Grammar | None:
    """Grammars this plugin offers: `Grammar(id, extensions, loader, contexts, metavar_char)`.
    A grammar from another plugin replaces a built-in one of the same id, and claims its
    extensions."""
