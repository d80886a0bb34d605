"""Parse workers of one run: N processes (N = cores, 2 here), each owning the parse cache of the
files routed to it (by a hash of the path, so a second query finds its trees warm).

A search hands out batches in file order and stops handing them out once the files searched so
far, in order, hold `limit` matches: the result is the same as a sequential search, only sooner.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from livetools.procs import ChildProcess

from .engine import FileJob, FileOutcome, FileRewrite
from .gcpause import gc_paused
from .pattern import Pattern
from .worker import HEADER

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
                    self.broken = True
            with gc_paused():
                status, value = pickle.loads(body)
            if status != "ok":
                raise WorkerError(f"parse worker failed: {value}")
            return value

    async def pipeline(
        self,
        batches: list[tuple[list[int], tuple[Any, ...]]],
        handle: Callable[[list[int], Any], bool],
        stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Send `batches` keeping DEPTH requests in flight, so the worker parses the next batch
        while this process decodes the last answer; `handle(batch, value)` in order, and no
        more sends once it returns False or `stop()` is true (answers in flight are read)."""
        async with self.lock:
            if self.broken:
                raise WorkerError("parse worker is gone")
            assert self.child.stdin is not None and self.child.stdout is not None
            sent: deque[list[int]] = deque()
            queue = iter(batches)
            sending = True
            done = False
            try:
                while True:
                    while sending and len(sent) < DEPTH:
                        item = None if stop() else next(queue, None)
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
                        status, value = pickle.loads(body)
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
                    self.broken = True


class Pool:
    def __init__(self, root: Path, size: int, cache_bytes: int) -> None:
        self.root = root
        self.size = max(1, size)
        self.cache_bytes = cache_bytes
        self.workers: list[Worker] = []
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
            return list(self.workers)

    def pids(self) -> list[int]:
        return [w.child.pid for w in self.workers if w.child.returncode is None]

    async def aclose(self) -> None:
        workers, self.workers = self.workers, []
        await asyncio.gather(*(w.child.aclose(grace=0.5) for w in workers))

    # -- work ----------------------------------------------------------------------------------

    def _lanes(self, jobs: Sequence[FileJob]) -> list[list[int]]:
        lanes: list[list[int]] = [[] for _ in range(len(self.workers))]
        for index, job in enumerate(jobs):
            lanes[zlib.crc32(job.path.encode()) % len(lanes)].append(index)
        return lanes

    async def search(
        self, jobs: Sequence[FileJob], pattern: Pattern, loader: Callable[[], Any], limit: int
    ) -> tuple[list[FileOutcome], int]:
        """Outcomes of the searched prefix of `jobs`, in order, and how many files that prefix
        holds (len(jobs) unless the limit stopped the search early)."""
        await self.ensure()
        results: dict[int, FileOutcome] = {}
        state = {"prefix": 0, "found": 0, "stop": False}

        def advance() -> None:
            while state["prefix"] in results:
                state["found"] += len(results[state["prefix"]].matches)
                state["prefix"] += 1
            if limit and state["found"] >= limit:
                state["stop"] = True

        def handle(batch: list[int], outs: list[FileOutcome]) -> bool:
            for index, outcome in zip(batch, outs, strict=False):
                results[index] = outcome
            advance()
            return len(outs) == len(batch)  # else this lane alone reached the limit

        async def lane(worker: Worker, indexes: list[int]) -> None:
            batches = [
                (b, ("search", [jobs[i] for i in b], pattern, loader, limit))
                for b in _batches(jobs, indexes)
            ]
            await worker.pipeline(batches, handle, lambda: bool(state["stop"]))

        await _gather(lane(w, idx) for w, idx in zip(self.workers, self._lanes(jobs), strict=True))
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

        async def lane(worker: Worker, indexes: list[int]) -> None:
            batches = [
                (b, ("rewrite", [jobs[i] for i in b], pattern, loader, template))
                for b in _batches(jobs, indexes)
            ]
            await worker.pipeline(batches, handle)

        await _gather(lane(w, idx) for w, idx in zip(self.workers, self._lanes(jobs), strict=True))
        return [results[i] for i in range(len(jobs))]


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


def _batches(jobs: Sequence[FileJob], indexes: list[int]) -> list[list[int]]:
    batches: list[list[int]] = []
    current: list[int] = []
    size = 0
    for index in indexes:
        current.append(index)
        size += jobs[index].size
        if size >= BATCH_BYTES or len(current) >= BATCH_FILES:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches
