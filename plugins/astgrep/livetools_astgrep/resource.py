"""The run's parser pool: grammars, compiled patterns, parse workers (started on the first large
search) with their caches, an in-process engine for small jobs, and the staged edits of the run."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from livetools import Resource

from . import limits
from .engine import BINARY_PROBE, CACHE_BYTES, Engine, FileJob, FileOutcome, FileRewrite
from .gcpause import gc_paused
from .grammar import Grammar
from .pattern import Pattern, PatternError
from .reading import read_regular
from .table import GrammarTable

if TYPE_CHECKING:
    from livetools import Run

    from .pool import Pool

T = TypeVar("T")
PATTERN_CACHE = 256
WARM_POOL_BYTES = 64 * 1024  # once the workers run (caches warm), they take all but tiny jobs
HEAD_BYTES = 512 * 1024  # a limited search tries this much in-process before starting workers
SLICE_BYTES = 128 * 1024  # searched in-process at a time while the workers start


def prefilter(
    jobs: list[FileJob], tokens: tuple[bytes, ...]
) -> tuple[list[FileJob], list[FileOutcome]]:
    """Split jobs into files that hold every literal token of the pattern (to be parsed) and
    files that cannot match (no literal, binary, unreadable): reading is ~100x cheaper than
    parsing, and ast-grep parses every file."""
    if not tokens:  # nothing to look for: the worker that parses the file reads it once
        return list(jobs), []
    kept: list[FileJob] = []
    dropped: list[FileOutcome] = []
    for job in jobs:
        try:
            data = read_whole(job.path, job.size)
        except OSError as exc:
            dropped.append(FileOutcome(job.rel, status="unreadable", note=str(exc.strerror)))
            continue
        if data.find(b"\x00", 0, BINARY_PROBE) >= 0:
            dropped.append(FileOutcome(job.rel, status="binary"))
        elif all(token in data for token in tokens):
            kept.append(job)
        else:
            dropped.append(FileOutcome(job.rel, status="no-literal"))
    return kept, dropped


def read_whole(path: str, size: int) -> bytes:
    """The file's bytes with the fewest system calls, never blocking on a FIFO (see reading)."""
    return read_regular(path, size)


async def _stoppable(work: Callable[[], T], stop: threading.Event) -> T:
    """`work` in a thread; if the call is cancelled (its timeout), the thread is told to stop
    at its next file, so the next call does not wait behind it for the engine."""
    try:
        return await asyncio.to_thread(work)
    except asyncio.CancelledError:
        stop.set()
        raise


def _count_nodes(pattern: Pattern) -> int:
    count, stack = 0, list(pattern.nodes)
    while stack:
        count += 1
        stack.extend(stack.pop().children)
    return count


def _head(jobs: list[FileJob], budget: int) -> int:
    total = 0
    for i, job in enumerate(jobs):
        total += job.size
        if total > budget:
            return max(i, 1)
    return len(jobs)


@dataclass
class Searched:
    """One grammar's part of a search."""

    grammar: str
    pattern: Pattern
    outcomes: list[FileOutcome]
    files: int  # files of this grammar in scope
    searched: int  # how many of them were searched before the limit stopped the search


class AstGrepResource(Resource):
    key = "astgrep"

    def __init__(self, run: Run, builtin_module: str) -> None:
        self.run = run
        self.root = run.root
        self._builtin = builtin_module
        opts = run.options.get("astgrep", {}) if isinstance(run.options, dict) else {}
        self.workers = int(opts.get("workers", min(2, os.cpu_count() or 1)))
        # Below this a cold search runs in-process: two workers cost more CPU than they save
        # wall time (Rust, 1.4 MB cold: 0.19-0.22 s wall either way, 0.20 s CPU in-process,
        # 0.34-0.38 s with them; each starts in ~0.06 s of CPU).
        self.inline_bytes = int(opts.get("inline_bytes", 4 << 20))
        self.cache_bytes = int(opts.get("cache_bytes", CACHE_BYTES))
        self.max_file_bytes = int(opts.get("max_file_bytes", 2 << 20))
        self._table: GrammarTable | None = None
        self._compilers: dict[str, Any] = {}
        self._patterns: OrderedDict[tuple[str, str], Pattern | PatternError] = OrderedDict()
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()
        self._pool: Pool | None = None
        self._pool_lock = asyncio.Lock()
        self.edits = run.staged  # the run's, shared with every family that stages
        self._closed = False

    # -- grammars and patterns -------------------------------------------------------------------

    @property
    def table(self) -> GrammarTable:
        if self._table is None:
            self._table = GrammarTable.gather(self.run.host.plugins.pm, self._builtin)
        return self._table

    def compiled(self, grammar: Grammar, source: str) -> Pattern | None:
        """The pattern if this run compiled it before (no thread needed); raises its
        PatternError if it failed then."""
        cached = self._patterns.get((grammar.id, source))
        if cached is None:
            return None
        self._patterns.move_to_end((grammar.id, source))
        if isinstance(cached, PatternError):
            raise cached
        return cached

    def compile(self, grammar: Grammar, source: str) -> Pattern:
        """The compiled pattern (cached per run); raises PatternError."""
        found = self.compiled(grammar, source)
        if found is not None:
            return found
        from .languages import load
        from .pattern import Compiler

        compiler = self._compilers.get(grammar.id)
        if compiler is None or compiler.grammar is not grammar:
            compiler = self._compilers[grammar.id] = Compiler(
                grammar, load(grammar.id, grammar.loader)
            )
        result: Pattern | PatternError
        try:
            limits.check_pattern_size(source)
            with self._engine_lock:
                compiled = compiler.compile(source)
            limits.check_pattern_nodes(source, _count_nodes(compiled))
            result = compiled
        except PatternError as exc:
            message = limits.capped_message(str(exc), source)
            result = exc if message == str(exc) else PatternError(message)
        self._patterns[(grammar.id, source)] = result
        while len(self._patterns) > PATTERN_CACHE:
            self._patterns.popitem(last=False)
        if isinstance(result, PatternError):
            raise result
        return result

    # -- running -------------------------------------------------------------------------------

    def _inline_engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(cache_bytes=self.cache_bytes)
        return self._engine

    def _use_pool(self, grammar: Grammar, jobs: list[FileJob]) -> bool:
        if self.workers <= 0 or not self.table.shippable(grammar):
            return False
        size = sum(j.size for j in jobs)
        warm = self._pool is not None and bool(self._pool.workers)
        return size > self.inline_bytes or (warm and size > WARM_POOL_BYTES)

    async def pool(self) -> Pool:
        async with self._pool_lock:
            if self._closed:
                raise RuntimeError("the run is closed")
            if self._pool is None:
                from .pool import Pool

                self._pool = Pool(self.root, self.workers, self.cache_bytes)
            return self._pool

    async def search(
        self, grammar: Grammar, pattern: Pattern, jobs: list[FileJob], limit: int
    ) -> Searched:
        """Files without the pattern's literal text never reach a parser; a limited search
        starts in this process and hands the rest to the workers only if it must go on."""
        if not self._use_pool(grammar, jobs):  # nor for what the prefilter keeps of them
            return await self._small_search(grammar, pattern, jobs, limit)
        kept, dropped = await asyncio.to_thread(prefilter, jobs, pattern.tokens)
        outcomes: list[FileOutcome] = []
        searched = 0
        if limit and self._use_pool(grammar, kept) and not self._pool_ready():
            head = _head(kept, HEAD_BYTES)
            outcomes = await self._inline_search(grammar, pattern, kept[:head], limit)
            searched = len(outcomes)
            found = sum(len(o.matches) for o in outcomes)
            if found >= limit or searched < head:
                return Searched(
                    grammar.id, pattern, dropped + outcomes, len(jobs), len(dropped) + searched
                )
            kept, limit = kept[head:], limit - found
        elif self._use_pool(grammar, kept) and not self._pool_ready():
            outcomes = await self._while_pool_starts(grammar, pattern, kept)
            searched = len(outcomes)
            kept = kept[searched:]
        if kept and self._use_pool(grammar, kept):
            more, count = await (await self.pool()).search(kept, pattern, grammar.loader, limit)
        else:
            more = await self._inline_search(grammar, pattern, kept, limit)
            count = len(more)
        outcomes += more
        searched += count
        return Searched(grammar.id, pattern, dropped + outcomes, len(jobs), len(dropped) + searched)

    async def _while_pool_starts(
        self, grammar: Grammar, pattern: Pattern, jobs: list[FileJob]
    ) -> list[FileOutcome]:
        """Search slices of `jobs` in this process while the workers start (a worker takes
        0.1-0.3 s to import and load its grammar); the outcomes of the prefix searched."""
        starting = asyncio.ensure_future(self._start_pool())
        # If this call is cancelled meanwhile, the start goes on (the run closes the workers);
        # its failure is then retrieved here rather than logged as never retrieved.
        starting.add_done_callback(lambda t: t.cancelled() or t.exception())
        done: list[FileOutcome] = []
        while len(done) < len(jobs) and not starting.done():
            rest = jobs[len(done) :]
            done += await self._inline_search(grammar, pattern, rest[: _head(rest, SLICE_BYTES)], 0)
        await starting  # a pool that cannot start says so
        return done

    async def _start_pool(self) -> None:
        await (await self.pool()).ensure()

    def _pool_ready(self) -> bool:
        return self._pool is not None and bool(self._pool.workers)

    async def _small_search(
        self, grammar: Grammar, pattern: Pattern, jobs: list[FileJob], limit: int
    ) -> Searched:
        """A search that stays in this process: prefilter and search in one trip to a thread.
        Each trip waits for the GIL, up to 5 ms while the event loop serves other runs' calls
        (a run server), which is what a small search's latency would be made of."""

        def work(engine: Engine) -> tuple[list[FileOutcome], list[FileOutcome]]:
            kept, dropped = prefilter(jobs, pattern.tokens)
            return dropped, engine.search(kept, pattern, grammar.loader, limit)

        dropped, outcomes = await self._on_engine(work)
        searched = len(dropped) + len(outcomes)
        return Searched(grammar.id, pattern, dropped + outcomes, len(jobs), searched)

    async def _inline_search(
        self, grammar: Grammar, pattern: Pattern, jobs: list[FileJob], limit: int
    ) -> list[FileOutcome]:
        return await self._on_engine(lambda e: e.search(jobs, pattern, grammar.loader, limit))

    async def _on_engine(self, work: Callable[[Engine], T]) -> T:
        """`work` with this process's engine, in a thread, the collector paused; a cancelled
        call (its timeout) tells the engine to stop at its next file."""

        def inline() -> T:
            with self._engine_lock, gc_paused():
                engine = self._inline_engine()
                engine.stop = stop
                try:
                    return work(engine)
                finally:
                    engine.stop = None

        stop = threading.Event()
        return await _stoppable(inline, stop)

    async def rewrite(
        self, grammar: Grammar, pattern: Pattern, jobs: list[FileJob], template: str
    ) -> list[FileRewrite]:
        kept, dropped = await asyncio.to_thread(prefilter, jobs, pattern.tokens)
        skipped = [FileRewrite(o.rel, status=o.status, note=o.note) for o in dropped]
        if self._use_pool(grammar, kept):
            pool = await self.pool()
            return skipped + await pool.rewrite(kept, pattern, grammar.loader, template)

        return skipped + await self._on_engine(
            lambda e: e.rewrite(kept, pattern, grammar.loader, template)
        )

    # -- resource ------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        try:
            import importlib.util

            usable = all(
                importlib.util.find_spec(m) is not None
                for m in ("tree_sitter", "tree_sitter_language_pack")
            )
        except (ImportError, ValueError):
            usable = False
        table = self.table
        info: dict[str, Any] = {
            "usable": usable,
            "reason": "" if usable else "tree-sitter or tree-sitter-language-pack not installed",
            "grammars": len(table.by_id),
            "tuned": [g.id for g in table.by_id.values() if g.tuned],
            "workers": self._pool.pids() if self._pool else [],
            "staged_edits": sorted(self.edits.staged),
        }
        if table.problems:
            info["problems"] = table.problems
        return info

    async def aclose(self) -> None:
        self._closed = True
        async with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()
