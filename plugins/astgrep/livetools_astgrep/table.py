"""The grammars of one run, gathered from every plugin implementing `livetools_grammars`."""

from __future__ import annotations

import difflib
import pickle
from dataclasses import dataclass, field
from typing import Any

from .grammar import Grammar


class UnknownLanguage(Exception):
    pass


@dataclass
class GrammarTable:
    by_id: dict[str, Grammar] = field(default_factory=dict)
    by_name: dict[str, Grammar] = field(default_factory=dict)
    by_ext: dict[str, Grammar] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    _shippable: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def gather(cls, pm: Any, builtin_module: str) -> GrammarTable:
        """Built-in grammars first; any other plugin's grammar replaces one of the same id."""
        table = cls()
        hook = getattr(pm.hook, "livetools_grammars", None)
        impls = hook.get_hookimpls() if hook is not None else []
        ordered = sorted(impls, key=lambda i: i.function.__module__ != builtin_module)
        for impl in ordered:
            try:
                offered = impl.function()
            except Exception as exc:
                table.problems.append(
                    f"plugin {impl.plugin_name}: livetools_grammars failed: "
                    f"{type(exc).__name__}: {exc}"
                )
                continue
            items = [offered] if isinstance(offered, Grammar) else list(offered or [])
            for grammar in items:
                if isinstance(grammar, Grammar):
                    table.add(grammar)
                else:
                    table.problems.append(
                        f"plugin {impl.plugin_name}: livetools_grammars returned {grammar!r}, "
                        "not a Grammar"
                    )
        return table

    def add(self, grammar: Grammar) -> None:
        old = self.by_id.get(grammar.id)
        if old is not None:
            for ext in old.extensions:
                if self.by_ext.get(ext) is old:
                    del self.by_ext[ext]
        self.by_id[grammar.id] = grammar
        self.by_name[grammar.id.lower()] = grammar
        for alias in grammar.aliases:
            self.by_name[alias.lower()] = grammar
        for ext in grammar.extensions:
            self.by_ext[ext] = grammar

    def lookup(self, name: str) -> Grammar:
        key = name.strip().lower().lstrip(".")
        grammar = self.by_name.get(key) or self.by_ext.get("." + key)
        if grammar is not None:
            return grammar
        close = difflib.get_close_matches(key, list(self.by_name), n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        tuned = ", ".join(g.id for g in self.by_id.values() if g.tuned)
        raise UnknownLanguage(
            f"unknown language {name!r}; {hint}tuned: {tuned} "
            f"({len(self.by_id)} grammars in all; a file extension works too, like 'py')"
        )

    def shippable(self, grammar: Grammar) -> bool:
        """Whether worker processes can receive this grammar's loader (module-level function)."""
        if grammar.id not in self._shippable:
            try:
                pickle.loads(pickle.dumps(grammar.loader))
                ok = True
            except Exception:
                ok = False
            self._shippable[grammar.id] = ok
        return self._shippable[grammar.id]
