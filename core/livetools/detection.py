"""Is a server/adapter/kernel usable here, and if not, why.

Usable = a root marker is found (walking up from the file to the run root) AND the binary resolves
AND a cached health probe succeeds. Every "no" carries its reason so `status` can explain it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .procs import ProcessStartError
from .sandbox import Sandbox, SandboxBroken, spawn, which

_OUTPUT_CAP = 64 * 1024  # bytes of probe output kept; the rest is read and dropped
_LINE_CAP = 200
_DISK_ENTRIES = 256


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    version: str | None
    reason: str | None


@dataclass(frozen=True)
class Detection:
    usable: bool
    reason: str | None
    root: Path | None
    binary: str | None
    version: str | None


_MARKER_READ = 256 * 1024  # bytes of a file read to look for a "NAME:TEXT" marker's text


def has_marker(directory: Path, marker: str) -> bool:
    """`marker` is a name, a glob, or `NAME:TEXT`: the file NAME holds TEXT (a linter runs where
    the project configures it: `pyproject.toml:[tool.ruff`)."""
    name, _, text = marker.partition(":")
    if text:
        return _holds(directory / name, text)
    if any(c in marker for c in "*?["):
        return next(directory.glob(marker), None) is not None
    return (directory / marker).exists()


def _holds(path: Path, text: str) -> bool:
    """Non-blocking open, then a regular-file check on what was opened (a FIFO never blocks)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return text.encode() in os.read(fd, _MARKER_READ)
    except OSError:
        return False
    finally:
        os.close(fd)


def find_marker(
    start: Path, root: Path, markers: Sequence[str], *, resolved: bool = False
) -> Path | None:
    """The nearest directory from `start` (a file or dir) up to `root` inclusive that holds one of
    `markers` (names or globs like `*.csproj`). Never looks above `root`: a marker there belongs to
    another project. `resolved`: both paths are already real (a run's root and folders listed
    under it), so the two `resolve()`s — a `lstat` per path component each, most of a
    status call's CPU — are skipped."""
    if not resolved:
        root, start = root.resolve(), start.resolve()
    current = start
    if not current.is_dir():
        current = current.parent
    if not current.is_relative_to(root):
        return None
    while True:
        if any(has_marker(current, marker) for marker in markers):
            return current
        if current == root:
            return None
        current = current.parent


def which_any(binaries: Sequence[str], path: str | None = None) -> str | None:
    """The first of `binaries` (names or absolute paths) that resolves to an executable."""
    for binary in binaries:
        found = shutil.which(binary, path=path)
        if found:
            return found
    return None


_probe_memory: dict[str, ProbeResult] = {}


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    home = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return home / "livetools" / "probes.json"


def _load_disk() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store_disk(key: str, result: ProbeResult) -> None:
    """Best effort, atomic (temp + replace): a cache must never break detection."""
    entries = _load_disk()
    entries.pop(key, None)
    entries[key] = asdict(result)
    entries = dict(list(entries.items())[-_DISK_ENTRIES:])
    path = _cache_file()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".probes.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entries, f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def _first_line(output: bytes) -> str | None:
    for line in output.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:_LINE_CAP]
    return None


def _probe_key(resolved: str, args: Sequence[str]) -> str | None:
    """Identity of a probe: the same file unchanged, with the same arguments."""
    try:
        real = os.path.realpath(resolved)
        st = os.stat(real)
    except OSError:
        return None
    return json.dumps([real, st.st_mtime_ns, st.st_size, list(args)])


async def _run_probe(
    binary: str,
    args: Sequence[str],
    timeout: float,  # noqa: ASYNC109 (as in health_probe)
    sandbox: Sandbox | None = None,
) -> ProbeResult:
    cwd = Path(tempfile.gettempdir()) if sandbox is None else sandbox.paths.host
    try:
        child = await spawn(sandbox, [binary, *args], cwd=cwd, stdin=False, merge_stderr=True)
    except ProcessStartError as exc:
        return ProbeResult(False, None, str(exc))
    output = bytearray()

    async def collect() -> None:
        assert child.stdout is not None
        while chunk := await child.stdout.read(65536):
            output.extend(chunk[: max(_OUTPUT_CAP - len(output), 0)])

    reading = asyncio.get_running_loop().create_task(collect())
    try:
        code = await child.wait(timeout)
        if code is None:
            await child.aclose(grace=0)
        # The output still in the pipe; bounded, since a daemon it started may hold the pipe open.
        await asyncio.wait({reading}, timeout=0.5)
    finally:
        reading.cancel()
        await child.aclose(grace=0)
    line = _first_line(bytes(output))
    if code is None:
        return ProbeResult(False, None, f"binary timed out after {timeout:g}s: {binary}")
    if code != 0:
        status = f"exits {code}" if code > 0 else f"killed by signal {-code}"
        return ProbeResult(False, None, f"binary {status}: {line or '(no output)'}")
    return ProbeResult(True, line, None)


async def health_probe(
    binary: str,
    args: Sequence[str] = ("--version",),
    timeout: float = 10.0,  # noqa: ASYNC109 (a timeout is a result with a reason, not an error)
    sandbox: Sandbox | None = None,
) -> ProbeResult:
    """Run `binary args` once and judge it by its exit code; the first output line is the version.

    Cached per (resolved path, mtime, size, args): in memory for the process lifetime, and on disk
    (successes only) so one-shot CLI calls do not re-probe. A failure is not kept on disk because
    it can be fixed without touching the binary (`rustup component add` behind a proxy).
    Inside a sandbox the probe runs there (the binary must work *there*), cached in memory only."""
    if sandbox is not None:
        # The root is part of the key: `/workspace/.venv/bin/x` is another file for another root.
        key = json.dumps([sandbox.describe(), str(sandbox.paths.host), binary, list(args)])
        if key not in _probe_memory:
            _probe_memory[key] = await _run_probe(binary, args, timeout, sandbox)
        return _probe_memory[key]
    resolved = shutil.which(binary) or binary
    key = _probe_key(resolved, args)
    if key is None:
        return ProbeResult(False, None, f"binary not found: {binary}")
    if key in _probe_memory:
        return _probe_memory[key]
    cached = _load_disk().get(key)
    if isinstance(cached, dict) and cached.get("ok") is True:
        version = cached.get("version")
        result = ProbeResult(True, version if isinstance(version, str) else None, None)
    else:
        result = await _run_probe(resolved, args, timeout)
        if result.ok:
            _store_disk(key, result)
    _probe_memory[key] = result
    return result


async def detect(
    start: Path,
    root: Path,
    *,
    markers: Sequence[str],
    binaries: Sequence[str],
    probe_args: Sequence[str] | None = ("--version",),
    probe_timeout: float = 10.0,
    sandbox: Sandbox | None = None,
) -> Detection:
    """Marker, then binary, then probe; the first "no" is the reason. Empty `markers` means no
    marker is needed (the root is the run root), empty `binaries` no binary; `probe_args=None`
    skips the probe. With a sandbox the binary is looked up and probed inside it, and the
    binary in the result is the inside's path."""
    if markers:
        found = find_marker(start, root, markers)
        if found is None:
            return Detection(False, f"marker missing: {'/'.join(markers)}", None, None, None)
    else:
        found = root.resolve()  # noqa: ASYNC240 (one stat)
    if not binaries:
        return Detection(True, None, found, None, None)
    try:
        binary = which_any(binaries) if sandbox is None else await which(sandbox, binaries)
    except SandboxBroken as exc:
        return Detection(False, str(exc), found, None, None)
    if binary is None:
        where = "PATH" if sandbox is None else f"PATH inside sandbox {sandbox.name}"
        return Detection(False, f"binary not on {where}: {', '.join(binaries)}", found, None, None)
    if probe_args is None:
        return Detection(True, None, found, binary, None)
    probe = await health_probe(binary, probe_args, probe_timeout, sandbox)
    return Detection(probe.ok, probe.reason, found, binary, probe.version)
