"""The one door every family uses to start a process: on the host, or inside the run's sandbox.

Families hand host paths (their cwd, a program path, a connection file); this maps them to the
inside before the sandbox sees them, so no family carries sandbox logic of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..procs import ChildProcess, ProcessStartError
from ..wire import Transform
from .protocol import Process, Sandbox
from .wrap import WrapSandbox

_LOOKUP = 'for n; do p=$(command -v "$n") || p=; printf "%s\\n" "$p"; done'


async def spawn(
    sandbox: Sandbox | None,
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    name: str | None = None,
    stdin: bool = True,
    stdout: bool = True,
    merge_stderr: bool = False,
    stderr_lines: int = 200,
) -> Process:
    """Start `argv` (host paths) in `cwd` on the host, or inside `sandbox` when there is one.
    Raises ProcessStartError with a sentence when it cannot start."""
    argv = [str(a) for a in argv]
    if not argv:
        raise ValueError("argv is empty")
    io = {"stdin": stdin, "stdout": stdout, "merge_stderr": merge_stderr}
    label = name or Path(argv[0]).name
    if sandbox is None:
        return await ChildProcess.start(
            argv, cwd=cwd, env=env, name=label, stderr_lines=stderr_lines, **io
        )
    paths = sandbox.paths
    inside_env = None if env is None else {k: paths.to_inside(v) for k, v in env.items()}
    try:
        return await sandbox.spawn(
            [paths.to_inside(a) for a in argv],
            cwd=paths.to_inside(cwd),
            env=inside_env,
            name=label,
            stderr_lines=stderr_lines,
            **io,
        )
    except ProcessStartError as exc:
        raise ProcessStartError(f"{exc} (in sandbox {sandbox.name})") from None
    except OSError as exc:
        why = f"sandbox {sandbox.name}: cannot start {argv[0]!r}: {exc}"
        raise ProcessStartError(why) from None


class SandboxBroken(ProcessStartError):
    """The sandbox cannot start a process at all (its launcher is missing, its namespaces are
    refused): not the same answer as "that binary is not there"."""


async def lookup(
    sandbox: Sandbox,
    names: Sequence[str],
    timeout: float = 30.0,  # noqa: ASYNC109
) -> dict[str, str | None]:
    """Each of `names` resolved on the inside's own PATH, as an inside path or None, in one
    process (a lookup per name would start one each). Raises SandboxBroken with the reason when
    the lookup itself cannot run."""
    if not names:
        return {}
    why = "the sandbox cannot start processes"
    try:
        child = await spawn(
            sandbox, ["sh", "-c", _LOOKUP, "sh", *names], cwd=sandbox.paths.host, stdin=False
        )
    except ProcessStartError as exc:
        raise SandboxBroken(f"{why}: {exc}") from None
    try:
        assert child.stdout is not None
        out = await asyncio.wait_for(child.stdout.read(), timeout)  # to its end: a line each
        code = await child.wait(timeout)
        tail = child.stderr_tail(3).strip() or "(no output)"
    except TimeoutError:
        raise SandboxBroken(f"{why}: a lookup got no answer in {timeout:g}s") from None
    finally:
        await child.aclose(grace=0)
    lines = out.decode("utf-8", "replace").split("\n")
    if code != 0 or len(lines) < len(names):
        status = "did not end" if code is None else f"exits {code}"
        raise SandboxBroken(f"{why}: a lookup {status}: {tail}")
    return {name: line or None for name, line in zip(names, lines, strict=False)}


async def which(sandbox: Sandbox | None, names: Sequence[str]) -> str | None:
    """The first of `names` that resolves inside the sandbox; None on the host (the caller's own
    lookup applies there). SandboxBroken when nothing can start inside."""
    if sandbox is None or not names:
        return None
    found = await lookup(sandbox, names)
    return next((found[n] for n in names if found.get(n)), None)


def as_sandbox(port: Any, root: Path) -> Sandbox | None:
    """The run's sandbox from what the harness passed: a Sandbox, an object with `wrap`, a
    callable, or None. Anything else is a TypeError naming what is expected."""
    if port is None:
        return None
    if isinstance(port, Sandbox):
        return port
    if hasattr(port, "wrap") or callable(port):
        return WrapSandbox(port, root)
    raise TypeError(
        "Ports(sandbox=...) takes a Sandbox (spawn, paths, shared_dir), an object with "
        f"wrap(argv), or a callable; got {type(port).__name__}"
    )


def wire_maps(sandbox: Sandbox | None) -> tuple[Transform | None, Transform | None]:
    """(inbound, outbound) transforms for a FramedReader/FramedWriter pair, so a language server
    or debug adapter inside the sandbox reads and writes its own paths:
    `FramedReader(out, transform=inbound)`, `FramedWriter(inp, transform=outbound)`.
    Both None on the host or when the paths are the same."""
    if sandbox is None or sandbox.paths.identity:
        return None, None
    return sandbox.paths.inbound, sandbox.paths.outbound
