"""Edits a write tool staged instead of writing: shown as a diff with an id, written or dropped
later by `resolve`. One ledger per run, so every family that stages (`ast_edit`, `lsp_rename`
with `preview`) hands its edits to the same `resolve`, with the same checks at accept time."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from .edits import StagedEdit

STAGED_EDITS = 32  # unresolved staged edits kept per run (each holds its files twice)


@dataclass
class Staged:
    edit: StagedEdit
    replacements: int
    files: list[str]
    origin: str = "ast_edit"  # the tool that staged it: what to call again
    # Entered around the write at accept (lsp: the ledger reads old diagnostics renamed).
    around: Callable[[], AbstractContextManager[object]] | None = None


@dataclass
class EditLedger:
    staged: dict[str, Staged] = field(default_factory=dict)
    resolved: dict[str, str] = field(default_factory=dict)
    counter: int = 0

    def add(self, staged: Staged) -> str:
        """Keep at most STAGED_EDITS unresolved edits: the oldest expires, and resolving it
        says so."""
        self.counter += 1
        edit_id = f"edit_{self.counter}"
        self.staged[edit_id] = staged
        while len(self.staged) > STAGED_EDITS:
            oldest = next(iter(self.staged))
            origin = self.staged.pop(oldest).origin
            self.resolved[oldest] = (
                f"expired: only the {STAGED_EDITS} most recent staged edits are kept; "
                f"call {origin} again to stage it"
            )
        while len(self.resolved) > 10 * STAGED_EDITS:
            del self.resolved[next(iter(self.resolved))]
        return edit_id

    def issued(self, edit_id: str) -> bool:
        """Whether this run ever gave out `edit_id` (ids count up, so no record is needed)."""
        number = edit_id.removeprefix("edit_")
        return edit_id.startswith("edit_") and number.isdigit() and 0 < int(number) <= self.counter
