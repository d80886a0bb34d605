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
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import PathError, ToolError, cap_items, relpath
from livetools.files import read_text

from .importers import importers
from .ledger import Item, significant
from .server import SETTLE, Document, LanguageServer, path_uri, uri_path
from .supervisor import KEY, Supervisor

if TYPE_CHECKING:
    from livetools import Run

WARM_WAIT = 3.0
TOTAL_WAIT = 25.0  # below the host's observer bound
PER_FILE = 10
TOTAL = 30
DEPENDENTS = 20  # open documents re-checked per server and write
DEPENDENT_WAIT = 2.0  # push servers: how long to wait for the dependents' re-publishes
QUIET = 0.5  # ... or until no publish came for this long (longer when the server is slow now)
CHECKED_SHOWN = 8
IMPORTERS = 10  # files that import a created, deleted or header file, opened per write
IMPORTER_SEARCH = 1.0  # seconds the search for them may take
PRE_WAIT = 8.0  # seconds a write may wait before it lands, for those importers' baselines
HEADERS = {".h", ".hh", ".hpp", ".hxx", ".inc", ".inl"}


def quiet_for(latency: float) -> float:
    """How long a push server's silence means it has nothing more to publish: QUIET, or
    twice what it took to answer this write when that was longer (a loaded machine)."""
    return max(QUIET, 2 * latency)


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
    # The importers of a file about to be created, and the includers of a header, are opened
    # now, while the disk still holds the old state: their baseline (clangd reads another
    # file's headers from disk, not from our buffer).
    early = [p for p in paths if before[p] is None or p.suffix in HEADERS]
    importing: list[_Importers] = []
    if early:
        pre = asyncio.get_running_loop().time() + PRE_WAIT
        try:
            importing = await _importers(sup, early, set(paths), pre)
        except Exception as exc:  # never in the way of the write itself
            notes.append(f"importers of {relpath(sup.root, early[0])} not checked: {exc}")
    yield
    deadline = asyncio.get_running_loop().time() + TOTAL_WAIT
    gone = [p for p in paths if before[p] is not None and p not in early and not p.exists()]
    if gone:  # a deleted file's importers: the servers have not heard of it yet
        try:
            importing += await _importers(sup, gone, set(paths), deadline, deleted=True)
        except Exception as exc:  # the write's own diagnostics still come
            notes.append(f"importers of {relpath(sup.root, gone[0])} not checked: {exc}")
    # Baselines first, then every new text, then the waits: a file's diagnostics must not be
    # computed against the old version of another file of the same write (a rename).
    steps = [_File(sup, path, before[path], deadline) for path in paths if sup.candidates(path)]
    steps += await _linter_steps(sup, paths, before, deadline, notes)
    outcomes: list[Any] = await asyncio.gather(
        *(s.prepare() for s in steps), return_exceptions=True
    )
    servers = {id(s.server): s.server for i, s in enumerate(steps) if outcomes[i] is True}
    servers |= {id(group.server): group.server for group in importing}  # a deleted file's too
    dependents = [  # a linter judges each file alone: a write breaks no other file for it
        _Dependents(sup, server, set(paths), deadline)
        for server in servers.values()
        if server is not None and not server.spec.linter
    ]
    await asyncio.gather(*(d.baseline() for d in dependents), return_exceptions=True)
    for index, step in enumerate(steps):
        if outcomes[index] is True:
            try:
                await step.send()
            except Exception as exc:
                outcomes[index] = exc
    # Saves only once every new text is out: a save makes some servers (gopls) check again,
    # and that check must see the whole write, not half of it.
    sent = [s for i, s in enumerate(steps) if outcomes[i] is True and s.doc is not None]
    for step in sent:
        await step.save()
    # A file the write created or deleted changes what other files resolve (an import): every
    # server hears of it before their answers are awaited.
    for server in [s for s in sup.servers.values() if s.alive]:
        with contextlib.suppress(ToolError):
            await server.send_watched()
    for group in importing:
        server = group.server
        if not server.watched.registered:  # clangd: an includer is re-read only when reopened
            with contextlib.suppress(ToolError):
                await server.resend(group.docs, reopen=True)
            for dep in dependents:
                if dep.server is server:
                    dep.awaited.update(d.uri for d in group.docs)
    for step in sent:
        mates = [s.doc.sent_at for s in sent if s.server is step.server and s.doc is not None]
        if len(mates) > 1:
            step.since = max(mates)
    waits = [
        s.collect() if outcomes[i] is True else _done(outcomes[i]) for i, s in enumerate(steps)
    ]
    outcomes = await asyncio.gather(*waits, return_exceptions=True)
    found: list[tuple[Path, str, list[Item]]] = []
    clean: set[str] = set()  # servers that checked a written file and found nothing new
    for step, outcome in zip(steps, outcomes, strict=True):
        path, rel = step.path, step.rel
        if isinstance(outcome, ToolError):
            if "no usable language server" not in str(outcome):
                notes.append(f"diagnostics unavailable for {rel}: {outcome}")
        elif isinstance(outcome, BaseException):
            notes.append(f"diagnostics unavailable for {rel}: {type(outcome).__name__}: {outcome}")
        elif isinstance(outcome, str):
            notes.append(outcome)
        elif isinstance(outcome, tuple) and outcome[1]:
            found.append((path, outcome[0], outcome[1]))
        elif isinstance(outcome, tuple):
            clean.add(outcome[0])
    checked: list[str] = []
    latency = max((s.latency for s in sent), default=0.0)
    for dep in dependents:
        try:
            found += await dep.collect(latency)
        except ToolError as exc:
            notes.append(f"diagnostics of the other open files unavailable: {exc}")
            continue
        checked += dep.checked_note()
    for group in importing:
        if group.deleted:
            try:
                found += await group.broken(found, deadline)
            except Exception as exc:
                notes.append(f"importers of a deleted file not checked: {exc}")
    if found:
        notes.append(render(sup, found, checked))
    elif clean:
        # Said, so "clean" never reads like "not checked" (no server, or none answered in time).
        files = [c for c in checked if not c.startswith("(")]
        others = f"; also checked {len(files)} other open files" if files else ""
        notes.append(
            f"checked by {', '.join(sorted(clean))}: the write added no diagnostics{others}"
        )


@dataclass
class _Importers:
    """The files of one server that import a written file, and their import lines."""

    server: LanguageServer
    docs: list[Document]
    lines: dict[str, set[int]]  # uri -> 1-based lines importing the written file
    deleted: bool = False

    async def broken(
        self, found: list[tuple[Path, str, list[Item]]], deadline: float
    ) -> list[tuple[Path, str, list[Item]]]:
        """A deleted file's importers: what is reported now on their import lines is this
        write's doing (the file was there before it), whatever baseline the server gave
        (one that had already noticed the deletion on its own gave no difference)."""
        seen = {(p, i.line, i.message) for p, _, items in found for i in items}
        out: list[tuple[Path, str, list[Item]]] = []
        for doc in self.docs:
            if doc.path is None:
                continue
            raw = await self.server.diagnostics(doc, min(WARM_WAIT, _left(deadline)))
            items = [
                i
                for i in significant(raw or [])
                if i.line in self.lines.get(doc.uri, set())
                and (doc.path, i.line, i.message) not in seen
            ]
            if items:
                out.append((doc.path, self.server.spec.id, items))
        return out


async def _importers(
    sup: Supervisor,
    paths: list[Path],
    written: set[Path],
    deadline: float,
    deleted: bool = False,
) -> list[_Importers]:
    """The files that import `paths`, which servers do not follow by themselves: a created or
    deleted file (an import starts or stops resolving), a C/C++ header (an includer is not
    re-checked). Found by a bounded search, opened with their current state as the baseline,
    at most IMPORTERS per write; a header's server is started for it."""
    found: list[_Importers] = []
    budget = IMPORTERS
    for path in paths:
        server = sup.running_for(path)
        if server is None and path.suffix in HEADERS and sup.candidates(path):
            with contextlib.suppress(ToolError, TimeoutError):
                server = await asyncio.wait_for(sup.server_for(path), _left(deadline))
        if budget <= 0 or server is None:
            continue
        left = min(IMPORTER_SEARCH, _left(deadline))
        hits, _ = await asyncio.to_thread(importers, sup.root, server, path, written, left)
        docs: list[Document] = []
        lines: dict[str, set[int]] = {}
        for other in list(dict.fromkeys(hit[0] for hit in hits))[:budget]:
            opened = path_uri(other) not in server.documents
            try:
                doc, _ = await server.sync(other)
                if opened and not server.pulls:  # its first publish is the baseline
                    await server.diagnostics(doc, min(WARM_WAIT, _left(deadline)))
            except ToolError:
                continue
            docs.append(doc)
            lines[doc.uri] = {line for hit_path, line, _ in hits if hit_path == other}
        budget -= len(docs)
        if docs:
            found.append(_Importers(server, docs, lines, deleted))
    return found


async def _linter_steps(
    sup: Supervisor,
    paths: list[Path],
    before: dict[Path, str | None],
    deadline: float,
    notes: list[str],
) -> list[_File]:
    """A step per written file and linter that lints it (ruff beside basedpyright): started if
    need be; one that cannot start is said once, the write's other checks go on."""
    steps: list[_File] = []
    said: set[str] = set()
    for path in paths:
        if not sup.linter_specs(path):
            continue
        if not path.exists():  # deleted: the linters that had it open close it
            servers, problems = sup.running_linters(path), []
        else:
            try:
                servers, problems = await asyncio.wait_for(sup.linters_for(path), _left(deadline))
            except (TimeoutError, ToolError) as exc:
                servers, problems = [], [f"linters: {exc or 'no start in time'}"]
        for problem in problems:
            if problem not in said:
                said.add(problem)
                notes.append(f"not linted ({relpath(sup.root, path)}): {problem}")
        steps += [_File(sup, path, before[path], deadline, server) for server in servers]
    return steps


class _Dependents:
    """The other files a write can break: the documents this server holds open (pulled again
    where the server pulls, else its next publishes) and, for push servers, any file it
    re-published after the write whose earlier publish we hold, or in a folder it had published
    for (gopls re-publishes a package).
    Compared with their own state just before the new text was sent, so nothing that was
    already broken is blamed on the write."""

    def __init__(
        self, sup: Supervisor, server: LanguageServer, written: set[Path], deadline: float
    ) -> None:
        self.sup = sup
        self.server = server
        self.deadline = deadline
        skip = {path_uri(p) for p in written}
        docs = [
            d
            for d in server.documents.values()
            if d.path is not None and d.uri not in skip and d.path.exists()
        ]
        docs.sort(key=lambda d: d.sent_at, reverse=True)  # the most recently used first
        self.open_count = len(docs)
        self.docs: list[Document] = docs[:DEPENDENTS]
        self.before: dict[str, list[Item] | None] = {}
        self.published: dict[str, Any] = {}
        self.sent_at = 0.0
        self.unknown: list[str] = []
        self.extra: list[str] = []  # re-published files that are not open
        self.awaited: set[str] = set()  # uris resent after the write: a publish will come

    async def baseline(self) -> None:
        server = self.server
        self.published = dict(server.published)
        if server.pulls:
            results = await asyncio.gather(
                *(self._pull(doc) for doc in self.docs), return_exceptions=True
            )
            for doc, result in zip(self.docs, results, strict=True):
                self.before[doc.uri] = result if isinstance(result, list) else None
        else:
            for doc in self.docs:
                entry = server.published.get(doc.uri)
                self.before[doc.uri] = significant(entry.items) if entry else None
        self.sent_at = time.monotonic()

    async def _pull(self, doc: Document) -> list[Item] | None:
        raw = await self.server.diagnostics(doc, min(WARM_WAIT, _left(self.deadline)))
        return significant(raw) if raw is not None else None

    async def collect(self, latency: float = 0.0) -> list[tuple[Path, str, list[Item]]]:
        """`latency`: how long the server took to answer the written files just now."""
        server = self.server
        after: dict[str, list[Item] | None] = {}
        if server.pulls:
            results = await asyncio.gather(
                *(self._pull(doc) for doc in self.docs), return_exceptions=True
            )
            for doc, result in zip(self.docs, results, strict=True):
                after[doc.uri] = result if isinstance(result, list) else None
        else:
            await self._quiet(quiet_for(latency))
            for doc in self.docs:
                entry = server.published.get(doc.uri)
                if doc.uri in self.awaited and not self._current(doc):
                    entry = None  # its answer did not come in time: unknown, not clean
                after[doc.uri] = significant(entry.items) if entry else None
            open_uris = {doc.uri for doc in self.docs} | set(server.documents)
            # A folder the server had already published for was checked as a whole (a Go
            # package): a file of it with no earlier publish had nothing to report then.
            folders = {uri.rsplit("/", 1)[0] for uri in self.published}
            for uri, entry in server.published.items():
                old = self.published.get(uri)
                if uri in open_uris or entry.at < self.sent_at:
                    continue
                if old is None and uri.rsplit("/", 1)[0] not in folders:
                    continue
                self.before[uri] = significant(old.items) if old else []
                after[uri] = significant(entry.items)
                self.extra.append(uri)
        found: list[tuple[Path, str, list[Item]]] = []
        for uri, now in after.items():
            path = uri_path(uri)
            old = self.before.get(uri)
            if path is None:
                continue
            if now is None or old is None:
                self.unknown.append(relpath(self.sup.root, path))
                continue
            news = self.sup.ledger.since(path, old, now, server.spec.id)
            if news:
                found.append((path, server.spec.id, news))
        return found

    async def _quiet(self, quiet: float) -> None:
        """Push servers: until every open dependent was re-published after the write, or no
        publish came for `quiet` seconds, at most DEPENDENT_WAIT or two quiet spells (an
        unchanged file may never be re-published: typescript-language-server publishes only on
        change)."""
        loop = asyncio.get_running_loop()
        longest = max(DEPENDENT_WAIT, 2 * quiet)
        if self.awaited:  # resent files will publish: a rebuild may take a while
            longest = max(longest, self.server.spec.first_diagnostics)
        end = min(self.deadline, loop.time() + longest)
        last = max((e.at for e in self.server.published.values()), default=0.0)
        last = max(last, self.sent_at)
        while (remaining := end - loop.time()) > 0:
            waiting = [d for d in self.docs if d.uri in self.awaited and not self._current(d)]
            fresh = [self.server.published.get(d.uri) for d in self.docs]
            if not waiting and all(e is not None and e.at >= self.sent_at for e in fresh):
                return
            if time.monotonic() - last >= quiet and not waiting:
                return
            await self.server.wait_change(min(remaining, quiet))
            last = max([last, *(e.at for e in self.server.published.values())])

    def _current(self, doc: Document) -> bool:
        """A publish for the version sent last (a server clears a closed file's diagnostics
        with an unversioned publish, which is not the reopened file's answer). A server that
        never says versions (typescript-language-server): the last publish since the reopen,
        once its settle spell has passed with no other (else the wait ran out its 15 s)."""
        entry = self.server.published.get(doc.uri)
        if entry is None or entry.at < max(self.sent_at, doc.sent_at):
            return False
        if entry.version is None and not self.server.versioned:
            spell = max(SETTLE, self.server.spec.settle)
            return time.monotonic() - entry.at >= spell
        return entry.version == doc.version

    def checked_note(self) -> list[str]:
        """Relative paths of the files this check covered (for the line saying which)."""
        rels = [relpath(self.sup.root, d.path) for d in self.docs if d.path is not None]
        rels += [relpath(self.sup.root, p) for u in self.extra if (p := uri_path(u))]
        if self.open_count > len(self.docs):
            rels.append(f"(first {len(self.docs)} of {self.open_count} open files)")
        if self.unknown:
            rels.append(f"(no answer in time for {', '.join(self.unknown[:5])})")
        return rels


async def _done(outcome: Any) -> Any:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


class _File:
    """One written file: its server and baseline, its new text sent, its new diagnostics."""

    def __init__(
        self,
        sup: Supervisor,
        path: Path,
        old: str | None,
        deadline: float,
        linter: LanguageServer | None = None,
    ) -> None:
        self.sup = sup
        self.path = path
        self.linter = linter  # this step is that linter's; else the navigating server's
        self.old = old
        self.deadline = deadline
        self.rel = relpath(sup.root, path)
        self.server: LanguageServer | None = None
        self.first = False
        self.doc: Document | None = None
        self.unknown: str | None = None  # why the state before the write is not known
        self.since: float | None = None  # when the last text of a multi-file write went out
        self.latency = 0.0  # how long the server took to answer the new text

    async def prepare(self) -> bool | str | None:
        """True when the file goes on to `send`; else a note or None (nothing to say)."""
        sup, path = self.sup, self.path
        server = self.linter or sup.running_for(path)
        if not path.exists():
            if server is not None:
                await server.close(path)
            sup.ledger.forget(path)
            return None
        if server is None:
            server = await asyncio.wait_for(sup.server_for(path), _left(self.deadline))
        self.server = server
        source = server.spec.id
        self.first = path_uri(path) not in server.documents
        if not sup.ledger.knows(path, source):
            if self.old is None:
                sup.ledger.seed(path, [], source)
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
                    sup.ledger.seed(path, significant(raw, server.spec.linter), source)
        return True

    async def send(self) -> None:
        assert self.server is not None
        new = await _read(self.path)
        if new is None:
            return
        self.doc, _ = await self.server.sync(self.path, new)

    async def save(self) -> None:
        if self.server is not None and self.doc is not None:
            with contextlib.suppress(ToolError):
                await self.server.save(self.doc)

    async def collect(self) -> tuple[str, list[Item]] | str | None:
        if self.server is None or self.doc is None:
            return None
        bound = self._bound()
        raw = await self.server.diagnostics(self.doc, bound)
        if raw is None and not self.first and self.server.busy():
            # A server at work (clangd indexing while it rebuilds a header's preamble for a
            # changed include, on a loaded machine) gets the first-open bound before "not ready".
            more = min(self.server.spec.first_diagnostics - bound, _left(self.deadline))
            if more > 0.5:
                raw = await self.server.diagnostics(self.doc, more)
                bound += more
        if raw is None:
            return _not_ready(self.server, self.rel, bound)
        entry = self.server.published.get(self.doc.uri)
        if entry is not None and not self.server.pulls:
            self.latency = max(entry.at - self.doc.sent_at, 0.0)
            if self.since is not None:
                raw = await self._whole_write(raw)
        items = significant(raw, self.server.spec.linter)
        source = self.server.spec.id
        if self.unknown is not None:
            self.sup.ledger.seed(self.path, items, source)
            errors = sum(1 for i in items if i.severity == "error")
            return (
                f"diagnostics baseline unknown for {self.rel} ({self.unknown}), so which are new "
                f"is unknown: it has {errors} errors, {len(items) - errors} warnings now; "
                f'see lsp diagnostics file="{self.rel}"'
            )
        return source, self.sup.ledger.news(self.path, items, source)

    async def _whole_write(self, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A push server's first answer to one file of a multi-file write may predate the
        write's other files (gopls checked main.go against the old shapes.go of a rename:
        "undeclared name: Box") and it publishes again once it has them. So the file's newest
        publish for this version is taken once none came for a quiet spell after the last
        text went out (a server that has nothing new stays silent)."""
        assert self.server is not None and self.doc is not None and self.since is not None
        server, doc = self.server, self.doc
        quiet = quiet_for(self.latency)
        end = time.monotonic() + _left(self.deadline)
        while True:
            entry = server.published.get(doc.uri)
            last = max(self.since, entry.at if entry is not None else 0.0)
            now = time.monotonic()
            wait = min(last + quiet, end) - now
            if wait <= 0:
                break
            await server.wait_change(wait)
        entry = server.published.get(doc.uri)
        if entry is None or (entry.version is not None and entry.version < doc.version):
            return raw
        return entry.items

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


def render(
    sup: Supervisor, found: list[tuple[Path, str, list[Item]]], checked: list[str] | None = None
) -> str:
    """The write's new diagnostics, errors first, capped; then those that came back: new to
    this write but there when the run first saw the file (a warning an error had hidden comes
    back with the fix: gopls drops its vet findings while a file has type errors)."""
    servers = sorted({server for _, server, _ in found})
    fresh = [(p, s, [i for i in items if not i.again]) for p, s, items in found]
    back = [(p, s, [i for i in items if i.again]) for p, s, items in found]
    count = sum(len(items) for _, _, items in fresh)
    also = ""
    if checked:
        files = [c for c in checked if not c.startswith("(")]
        extra = " ".join(c for c in checked if c.startswith("("))
        more = len(files) - CHECKED_SHOWN
        noun = "file" if len(files) == 1 else "files"
        also = f"; also checked {len(files)} other {noun}: {', '.join(files[:CHECKED_SHOWN])}"
        also += (f", … {more} more" if more > 0 else "") + (f" {extra}" if extra else "")
    labelled = len(servers) > 1  # each line says whose it is (ruff's F401, basedpyright's error)
    if count:
        out = [f"new diagnostics after this write ({count}, {', '.join(servers)}{also}):"]
        out += _lines(sup, fresh, labelled, TOTAL)
    else:
        out = [f"checked by {', '.join(servers)}: the write added no new diagnostics{also}"]
    returned = sum(len(items) for _, _, items in back)
    if returned:
        out.append(
            f"back again ({returned}; there when the run first saw the file, hidden meanwhile):"
        )
        out += _lines(sup, back, labelled, PER_FILE)
    return "\n".join(out)


def _lines(
    sup: Supervisor, found: list[tuple[Path, str, list[Item]]], labelled: bool, total: int
) -> list[str]:
    out: list[str] = []
    shown = 0
    for path, server, items in found:
        if not items:
            continue
        rel = relpath(sup.root, path)
        whose = f" ({server})" if labelled else ""
        # Errors first: a broken call's follow-on warnings ("type is unknown") must not push
        # the errors themselves out of the cap.
        ranked = sorted(items, key=lambda i: (i.severity != "error", i.line))
        kept, cut = cap_items(ranked, min(PER_FILE, max(total - shown, 0)))
        for item in kept:
            code = f" [{item.code}]" if item.code else ""
            out.append(f"{rel}:{item.line}: {item.severity}{code}{whose}: {item.message}")
        shown += len(kept)
        if cut:
            out.append(f"{rel}: {cut}")
    return out
