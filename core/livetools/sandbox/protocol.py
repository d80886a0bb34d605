"""What a harness hands a run as its sandbox, and what a process started there must offer.

A sandbox is where the conversation's code lives: a bubblewrap jail, a container, a cloud VM. The
run never starts one; the harness passes it in `Ports(sandbox=...)`, and every process a family
starts (servers, adapters and their debuggees, kernels, workers) is spawned through it. Parsing
stays on the host.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..wire import ByteWriter
from .paths import PathMap


class Process(Protocol):
    """A started process as the families drive it; `ChildProcess` is the local one. An adapter for
    a sandbox with its own process API (E2B, Modal) implements this over that API."""

    @property
    def argv(self) -> tuple[str, ...]: ...

    @property
    def name(self) -> str: ...

    @property
    def pid(self) -> int: ...  # on the host: the launcher's (its session holds the tree)

    @property
    def stdin(self) -> ByteWriter | None: ...  # a StreamWriter, or a writer with its four calls

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...  # an adapter feeds it (`feed_data`)

    @property
    def returncode(self) -> int | None: ...

    def stderr_tail(self, max_lines: int = 40) -> str: ...

    async def wait(self, timeout: float | None = None) -> int | None: ...  # noqa: ASYNC109

    async def aclose(self, grace: float = 2.0) -> None: ...

    def send_signal(self, sig: int) -> None: ...  # the process itself (a launcher: the launcher)

    def kill_session(self) -> None: ...


@runtime_checkable
class Sandbox(Protocol):
    """`paths` maps the run root between the host and the inside. `shared_dir`, when set, is a
    host folder that the inside sees at the same path: unix sockets and connection files cross
    there (TCP does not cross a network namespace). `spawn` gets the inside's argv, cwd and
    environment (paths already mapped) and must start the process so that it dies with the
    returned handle's `aclose()` and with the host.

    Optional: `host_network: bool`, True when the host's loopback reaches processes inside;
    unsaid means no, and families that would speak TCP across (debug adapters) refuse.
    `close()`, called by whoever made the sandbox (a run closes one it built from its option)."""

    name: str
    paths: PathMap
    shared_dir: Path | None

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None,
        name: str,
        stdin: bool,
        stdout: bool,
        merge_stderr: bool,
        stderr_lines: int,
    ) -> Process: ...

    def describe(self) -> str:
        """One line for `status`: what the sandbox is and where the root is inside."""
        ...
