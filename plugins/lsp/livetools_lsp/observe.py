"""Diagnostics on write: after any write of the run (the harness's write/edit/apply_patch, our
lsp_rename, astgrep's resolve), each written file a server handles is synced (didChange with a new
version, didSave) and only the diagnostics it newly introduced are attached to the write's result.

The state before the write is the baseline: known from earlier calls, or taken now by opening
the old text first — so errors that were already there are never blamed on this write. A write
to a file no server handles returns before touching anything.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import PathError, ToolError, cap_items, relpath
from livetools.files import read_text

from .ledger import Item, significant
from .server import Document, LanguageServer, path_uri
from .supervisor import KEY, Supervisor

if TYPE_CHECKING:
    from livetools import Run

WARM_WAIT = 3.0
TOTAL_WAIT = 25.0  # below the host's observer bound
PER_FILE = 10
TOTAL = 30


def observer(run: Run, paths: list[Path], notes: list[str]) -> Any:
    sup = run.resource(KEY)
    if not isinstance(sup, Supervisor) or not sup.on_write:
        return None
    served = [p for p in paths if sup.serves(p)]
    if not served:
        return None
    return _observe(sup, served, notes)


async def _read(path: Path) -> str | None:
    """The file's text; None when it is absent or not a regular file (never blocks on a FIFO)."""
    try:
        return await read_text(path)
    except PathError:
        return None


@contextlib.asynccontextmanager
async def _observe(sup: Supervisor, paths: list[Path], notes: list[str]) -> AsyncIterator[None]:
    before = {path: await _read(path) for path in paths}
    yield
    deadline = asyncio.get_running_loop().time() + TOTAL_WAIT
    # Baselines first, then every new text, then the waits: a file's diagnostics must not be
    # computed against the old version of another file of the same write (a rename).
    steps = [_File(sup, path, before[path], deadline) for path in paths]
    outcomes: list[Any] = await asyncio.gather(
        *(s.prepare() for s in steps), return_exceptions=True
    )
    for index, step in enumerate(steps):
        if outcomes[index] is True:
            try:
                await step.send()
            except Exception as exc:
                outcomes[index] = exc
    waits = [
        s.collect() if outcomes[i] is True else _done(outcomes[i]) for i, s in enumerate(steps)
    ]
    outcomes = await asyncio.gather(*waits, return_exceptions=True)
    found: list[tuple[Path, str, list[Item]]] = []
    for path, outcome in zip(paths, outcomes, strict=True):
        rel = relpath(sup.root, path)
        if isinstance(outcome, ToolError):
            if "no usable language server" not in str(outcome):
                notes.append(f"diagnostics unavailable for {rel}: {outcome}")
        elif isinstance(outcome, BaseException):
            notes.append(f"diagnostics unavailable for {rel}: {type(outcome).__name__}: {outcome}")
        elif isinstance(outcome, str):
            notes.append(outcome)
        elif isinstance(outcome, tuple) and outcome[1]:
            found.append((path, outcome[0], outcome[1]))
    if found:
        notes.append(render(sup, found))


async def _done(outcome: Any) -> Any:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


class _File:
    """One written file: its server and baseline, its new text sent, its new diagnostics."""

    def __init__(self, sup: Supervisor, path: Path, old: str | None, deadline: float) -> None:
        self.sup = sup
        self.path = path
        self.old = old
        self.deadline = deadline
        self.rel = relpath(sup.root, path)
        self.server: LanguageServer | None = None
        self.first = False
        self.doc: Document | None = None
        self.unknown: str | None = None  # why the state before the write is not known

    async def prepare(self) -> bool | str | None:
        """True when the file goes on to `send`; else a note or None (nothing to say)."""
        sup, path = self.sup, self.path
        server = sup.running_for(path)
        if not path.exists():
            if server is not None:
                await server.close(path)
            sup.ledger.forget(path)
            return None
        if server is None:
            server = await asyncio.wait_for(sup.server_for(path), _left(self.deadline))
        self.server = server
        self.first = path_uri(path) not in server.documents
        if not sup.ledger.knows(path):
            if self.old is None:
                sup.ledger.seed(path, [])
            else:
                doc, _ = await server.sync(path, self.old)
                bound = self._bound()
                raw = await server.diagnostics(doc, bound)
                self.first = False
                if raw is None:
                    # The new text is still sent (else the server keeps the old file and every
                    # later answer is wrong); what is new is then unknown, and said so.
                    self.unknown = f"{server.spec.id} sent none for the old text in {bound:.1f}s"
                else:
                    sup.ledger.seed(path, significant(raw))
        return True

    async def send(self) -> None:
        assert self.server is not None
        new = await _read(self.path)
        if new is None:
            return
        self.doc, _ = await self.server.sync(self.path, new)
        with contextlib.suppress(ToolError):
            await self.server.save(self.doc)

    async def collect(self) -> tuple[str, list[Item]] | str | None:
        if self.server is None or self.doc is None:
            return None
        bound = self._bound()
        raw = await self.server.diagnostics(self.doc, bound)
        if raw is None:
            return _not_ready(self.server, self.rel, bound)
        items = significant(raw)
        if self.unknown is not None:
            self.sup.ledger.seed(self.path, items)
            errors = sum(1 for i in items if i.severity == "error")
            return (
                f"diagnostics baseline unknown for {self.rel} ({self.unknown}), so which are new "
                f"is unknown: it has {errors} errors, {len(items) - errors} warnings now; "
                f'see lsp diagnostics file="{self.rel}"'
            )
        return self.server.spec.id, self.sup.ledger.news(self.path, items)

    def _bound(self) -> float:
        assert self.server is not None
        wait = self.server.spec.first_diagnostics if self.first else WARM_WAIT
        return min(wait, _left(self.deadline))


def _left(deadline: float) -> float:
    return max(deadline - asyncio.get_running_loop().time(), 0.1)


def _not_ready(server: LanguageServer, rel: str, bound: float) -> str:
    busy = server.busy()
    extra = f", {busy}" if busy else ""
    return (
        f"diagnostics not ready for {rel} ({server.spec.id} sent none within {bound:.1f}s{extra}); "
        f'ask later with lsp diagnostics file="{rel}"'
    )


def render(sup: Supervisor, found: list[tuple[Path, str, list[Item]]]) -> str:
    servers = sorted({server for _, server, _ in found})
    count = sum(len(items) for _, _, items in found)
    out = [f"new diagnostics after this write ({count}, {', '.join(servers)}):"]
    shown = 0
    for path, _server, items in found:
        rel = relpath(sup.root, path)
        kept, cut = cap_items(items, min(PER_FILE, max(TOTAL - shown, 0)))
        for item in kept:
            code = f" [{item.code}]" if item.code else ""
            out.append(f"{rel}:{item.line}: {item.severity}{code}: {item.message}")
        shown += len(kept)
        if cut:
            out.append(f"{rel}: {cut}")
    return "\n".join(out)
