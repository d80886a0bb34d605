"""Parse workers of one run: N processes (N = cores, 2 here), each owning the parse cache of the
files it parsed.

A search hands out batches in file order and stops handing them out once the files searched so
far, in order, hold `limit` matches: the result is the same as a sequential search, only sooner.
A batch that holds the limit by itself makes every later file unneeded, never an earlier one.
Batches are handed out as workers ask for them: a file goes back to the worker that parsed it
last (its tree is cached there), new files go to whichever worker is free, and a worker with
nothing left takes the last batch of another's queue, so no worker idles while another works.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from livetools.procs import ChildProcess

from .engine import FileJob, FileOutcome, FileRewrite
from .gcpause import gc_paused
from .pattern import Pattern
from .worker import HEADER, decode_reply

BATCH_BYTES = 256 * 1024
BATCH_FILES = 48
DEPTH = 2  # requests in flight per worker


class WorkerError(Exception):
    pass


class Worker:
    def __init__(self, child: ChildProcess) -> None:
        self.child = child
        self.lock = asyncio.Lock()
        self.broken = False

    async def _exited(self) -> WorkerError:
        """The worker's pipe broke: say how it ended, with the end of its stderr."""
        code = await self.child.wait(1.0)
        tail = self.child.stderr_tail(8).strip()
        return WorkerError(
            f"parse worker {self.child.pid} exited (code {code})" + (f": {tail}" if tail else "")
        )

    def _abandon(self) -> None:
        """Give up on this worker: killed now, not at the next search, so a timed-out search
        stops using the cores at once (the next search starts a fresh one)."""
        self.broken = True
        if self.child.returncode is None:
            self.child.kill_session()

    async def request(self, payload: tuple[Any, ...]) -> Any:
        async with self.lock:
            if self.broken:
                raise WorkerError("parse worker is gone")
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            done = False
            try:
                assert self.child.stdin is not None and self.child.stdout is not None
                self.child.stdin.write(len(data).to_bytes(HEADER, "big") + data)
                await self.child.stdin.drain()
                header = await self.child.stdout.readexactly(HEADER)
                body = await self.child.stdout.readexactly(int.from_bytes(header, "big"))
                done = True
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError) as exc:
                raise await self._exited() from exc
            finally:
                if not done:  # cancelled or dead mid-request: its stream state is unknown
                    self._abandon()
            with gc_paused():
                status, value = decode_reply(body)
            if status != "ok":
                raise WorkerError(f"parse worker failed: {value}")
            return value

    async def pipeline(
        self,
        take: Callable[[], tuple[list[int], tuple[Any, ...]] | None],
        handle: Callable[[list[int], Any], bool],
    ) -> None:
        """Send what `take()` hands out (None: nothing more) keeping DEPTH requests in flight, so
        the worker parses the next batch while this process decodes the last answer;
        `handle(batch, value)` in order, and no more sends once it returns False (answers in
        flight are read)."""
        async with self.lock:
            if self.broken:
                raise WorkerError("parse worker is gone")
            assert self.child.stdin is not None and self.child.stdout is not None
            sent: deque[list[int]] = deque()
            sending = True
            done = False
            try:
                while True:
                    while sending and len(sent) < DEPTH:
                        item = take()
                        if item is None:
                            sending = False
                            break
                        data = pickle.dumps(item[1], protocol=pickle.HIGHEST_PROTOCOL)
                        self.child.stdin.write(len(data).to_bytes(HEADER, "big") + data)
                        sent.append(item[0])
                    await self.child.stdin.drain()
                    if not sent:
                        break
                    header = await self.child.stdout.readexactly(HEADER)
                    body = await self.child.stdout.readexactly(int.from_bytes(header, "big"))
                    batch = sent.popleft()
                    with gc_paused():
                        status, value = decode_reply(body)
                    if status != "ok":
                        sending = False
                        if not sent:
                            done = True
                        raise WorkerError(f"parse worker failed: {value}")
                    if not handle(batch, value):
                        sending = False
                done = True
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError) as exc:
                raise await self._exited() from exc
            finally:
                if not done:  # cancelled or failed mid-stream: its stream state is unknown
                    self._abandon()


class Pool:
    def __init__(self, root: Path, size: int, cache_bytes: int) -> None:
        self.root = root
        self.size = max(1, size)
        self.cache_bytes = cache_bytes
        self.workers: list[Worker] = []
        self.home: dict[str, Worker] = {}  # path -> the worker whose cache holds its tree
        self._starting: asyncio.Lock = asyncio.Lock()
        self.started_pids: list[int] = []

    async def ensure(self) -> list[Worker]:
        async with self._starting:
            alive = [w for w in self.workers if not w.broken and w.child.returncode is None]
            for w in self.workers:
                if w not in alive:
                    await w.child.aclose(grace=0)
            env = dict(os.environ)
            env["LIVETOOLS_ASTGREP_CACHE_BYTES"] = str(self.cache_bytes)
            env["PYTHONUNBUFFERED"] = "1"
            starts = [
                ChildProcess.start(
                    [sys.executable, "-m", "livetools_astgrep.worker"],
                    cwd=self.root,
                    env=env,
                    name="astgrep-worker",
                )
                for _ in range(self.size - len(alive))
            ]
            for child in await asyncio.gather(*starts):
                self.started_pids.append(child.pid)
                alive.append(Worker(child))
            self.workers = alive
            self.home = {path: w for path, w in self.home.items() if w in alive}
            return list(self.workers)

    def pids(self) -> list[int]:
        return [w.child.pid for w in self.workers if w.child.returncode is None]

    async def aclose(self) -> None:
        workers, self.workers = self.workers, []
        await asyncio.gather(*(w.child.aclose(grace=0.5) for w in workers))

    # -- work ----------------------------------------------------------------------------------

    def _schedule(self, jobs: Sequence[FileJob]) -> _Schedule:
        live = set(self.workers)
        lanes: dict[Worker, list[int]] = {w: [] for w in self.workers}
        free: list[int] = []
        for index, job in enumerate(jobs):
            home = self.home.get(job.path)
            (lanes[home] if home in live else free).append(index)
        return _Schedule(jobs, lanes, free, self.home)

    async def search(
        self, jobs: Sequence[FileJob], pattern: Pattern, loader: Callable[[], Any], limit: int
    ) -> tuple[list[FileOutcome], int]:
        """Outcomes of the searched prefix of `jobs`, in order, and how many files that prefix
        holds (len(jobs) unless the limit stopped the search early)."""
        await self.ensure()
        results: dict[int, FileOutcome] = {}
        # horizon: no file from here on is needed, since a batch before it held the limit.
        state = {"prefix": 0, "found": 0, "stop": False, "horizon": len(jobs)}

        def advance() -> None:
            while state["prefix"] in results:
                state["found"] += len(results[state["prefix"]].matches)
                state["prefix"] += 1
            if limit and state["found"] >= limit:
                state["stop"] = True

        def handle(batch: list[int], outs: list[FileOutcome]) -> bool:
            for index, outcome in zip(batch, outs, strict=False):
                results[index] = outcome
            if limit and outs and sum(len(o.matches) for o in outs) >= limit:
                # The batch held the limit by itself (a worker stops at it: outs may end early).
                state["horizon"] = min(state["horizon"], batch[len(outs) - 1] + 1)
            advance()
            # The lane goes on while files before the horizon wait, in any lane or in none
            # (files a search in this process took while the workers started).
            return not state["stop"]

        schedule = self._schedule(jobs)

        def lane(worker: Worker) -> Any:
            def take() -> tuple[list[int], tuple[Any, ...]] | None:
                batch = None if state["stop"] else schedule.take(worker, state["horizon"])
                if batch is None:
                    return None
                return batch, ("search", [jobs[i] for i in batch], pattern, loader, limit)

            return worker.pipeline(take, handle)

        await _gather(lane(w) for w in self.workers)
        advance()
        prefix = state["prefix"]
        return [results[i] for i in range(prefix)], prefix

    async def rewrite(
        self, jobs: Sequence[FileJob], pattern: Pattern, loader: Callable[[], Any], template: str
    ) -> list[FileRewrite]:
        await self.ensure()
        results: dict[int, FileRewrite] = {}

        def handle(batch: list[int], outs: list[FileRewrite]) -> bool:
            results.update(zip(batch, outs, strict=True))
            return True

        schedule = self._schedule(jobs)

        def lane(worker: Worker) -> Any:
            def take() -> tuple[list[int], tuple[Any, ...]] | None:
                batch = schedule.take(worker)
                if batch is None:
                    return None
                return batch, ("rewrite", [jobs[i] for i in batch], pattern, loader, template)

            return worker.pipeline(take, handle)

        await _gather(lane(w) for w in self.workers)
        return [results[i] for i in range(len(jobs))]


class _Schedule:
    """Hands out batches to workers as they ask: first the files cached in that worker, then
    files no worker holds (in file order), then the last batch of the longest other queue."""

    def __init__(
        self,
        jobs: Sequence[FileJob],
        lanes: dict[Worker, list[int]],
        free: list[int],
        home: dict[str, Worker],
    ) -> None:
        self.jobs = jobs
        self.lanes = {w: deque(q) for w, q in lanes.items()}
        self.free = deque(free)
        self.home = home

    def take(self, worker: Worker, horizon: int | None = None) -> list[int] | None:
        """The next batch for `worker`, of files before `horizon` only (None: all)."""
        if horizon is not None:  # every queue holds file indexes in increasing order
            for queue in (*self.lanes.values(), self.free):
                while queue and queue[-1] >= horizon:
                    queue.pop()
        own = self.lanes.get(worker)
        if own:
            batch = self._cut(own, front=True)
        elif self.free:
            batch = self._cut(self.free, front=True)
        else:
            other = max(self.lanes.values(), key=len, default=None)
            if not other:
                return None
            batch = self._cut(other, front=False)
        for index in batch:
            self.home[self.jobs[index].path] = worker
        return batch

    def _cut(self, queue: deque[int], front: bool) -> list[int]:
        """One batch off a queue: up to BATCH_FILES files or BATCH_BYTES of source."""
        batch: list[int] = []
        size = 0
        while queue and size < BATCH_BYTES and len(batch) < BATCH_FILES:
            index = queue.popleft() if front else queue.pop()
            batch.append(index)
            size += self.jobs[index].size
        if not front:
            batch.reverse()
        return batch


async def _gather(coros: Any) -> None:
    """Run lanes together; the first failure cancels the others and is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
