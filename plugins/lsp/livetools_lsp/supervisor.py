"""The run's language-server supervisor: which spec serves a file, detection with reasons, one
lazily started server per (spec, root), restart after a crash or hang, bounded shutdown.

Usable = a root marker found walking up from the file (nearest wins, so monorepos get the right
sub-project) ∧ the binary resolves ∧ its health probe passes ∧ initialize succeeds. Each "no" is
kept with its reason for `status` and for the error a call returns.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from livetools import Resource, ToolError, relpath
from livetools.detection import find_marker, health_probe
from livetools.sandbox import Sandbox, SandboxBroken
from livetools.sandbox import lookup as sandbox_lookup

from .code_actions import OfferedActions
from .known import how_to_add
from .ledger import Ledger
from .server import LanguageServer, ServerGone
from .spec import ServerSpec
from .subprojects import Subprojects
from .workspaces import topmost

if TYPE_CHECKING:
    from livetools import Run

KEY = "lsp"
ENV_PREFER = "LIVETOOLS_LSP_SERVERS"
DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_INIT_TIMEOUT = 45.0
DEFAULT_READY_TIMEOUT = 30.0


@dataclass(frozen=True)
class Verdict:
    """Whether `spec` can serve a file, and if not why."""

    spec: ServerSpec
    root: Path | None
    binary: str | None
    reason: str | None


def _resolve_binary(name: str, near: str | None = None) -> str | None:
    """PATH first; then next to another resolved binary; then next to this interpreter, so a
    server installed in the same virtual environment works without activating it."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    for folder in (Path(near).parent if near else None, Path(sys.executable).parent):
        if folder is not None:
            found = shutil.which(name, path=str(folder))
            if found:
                return found
    return None


# One lookup inside the sandbox for many names: a line per name, empty when it is not there.
def _host_fallbacks(name: str) -> list[str]:
    """Where `_resolve_binary` looks past PATH, as host paths: the sandbox may show them (bwrap
    shows the host's folders read-only at the same path; one under the root is mapped)."""
    if os.sep in name:
        return []
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    return [found] if found else []


def _said_once(reasons: list[str], specs: Sequence[ServerSpec]) -> list[str]:
    """Servers that all lack the same root marker make one sentence that says which file to
    create, instead of the marker list once per server."""
    missing: dict[tuple[str, ...], list[str]] = {}
    for spec in specs:
        if spec.markers and f"{spec.id}: marker missing: {'/'.join(spec.markers)}" in reasons:
            missing.setdefault(spec.markers, []).append(spec.id)
    out = []
    done: set[tuple[str, ...]] = set()
    for reason in reasons:
        spec_id = reason.split(":", 1)[0]
        group: tuple[str, ...] = next((m for m, ids in missing.items() if spec_id in ids), ())
        if not group:
            out.append(reason)
        elif group not in done:
            done.add(group)
            first, *rest = group
            others = f" (or {', '.join(rest)})" if rest else ""
            out.append(
                f"no root marker: create {first}{others} in the project's top folder "
                f"({', '.join(missing[group])} need one)"
            )
    return out


class Supervisor(Resource):
    key = KEY

    def __init__(self, run: Run, specs: Sequence[ServerSpec]) -> None:
        self.run = run
        self.root = run.root
        self._real_root = run.root.resolve()
        options = run.options.get("lsp") or {}
        self.options: dict[str, Any] = options if isinstance(options, dict) else {}
        prefer = list(self.options.get("prefer") or [])
        prefer += [p for p in os.environ.get(ENV_PREFER, "").split(",") if p.strip()]
        disabled = set(self.options.get("disable") or [])
        ranked = sorted(
            (s for s in specs if s.id not in disabled),
            key=lambda s: prefer.index(s.id) if s.id in prefer else len(prefer),
        )
        self.specs: list[ServerSpec] = ranked
        self.request_timeout = float(self.options.get("request_timeout", DEFAULT_REQUEST_TIMEOUT))
        self.init_timeout = float(self.options.get("init_timeout", DEFAULT_INIT_TIMEOUT))
        self.on_write = bool(self.options.get("diagnostics_on_write", True))
        # How long a cross-file question waits for a server to load its project.
        self.ready_timeout = float(self.options.get("ready_timeout", DEFAULT_READY_TIMEOUT))
        self.servers: dict[tuple[str, Path], LanguageServer] = {}
        self.failures: dict[tuple[str, Path], str] = {}
        self.crashes: dict[tuple[str, Path], str] = {}
        self.ledger = Ledger()
        self.offered = OfferedActions()  # code actions listed, by id, for lsp_rename apply
        self._locks: dict[tuple[str, Path], asyncio.Lock] = {}
        self._closed = False
        self._inside: dict[str, str | None] = {}  # name -> its path inside the sandbox, or None
        self._fault: str | None = None  # why the sandbox cannot start anything

    @property
    def sandbox(self) -> Sandbox | None:
        """The run's sandbox (None: the host): servers and checkers are looked up, probed and
        started there, so a binary only the host has is not usable."""
        return getattr(self.run, "sandbox", None)

    async def lookup(self, names: Sequence[str]) -> None:
        """Resolve `names` inside the sandbox in one process (a lookup per verdict would start
        one per call), remembering misses too until `reload`."""
        sandbox = self.sandbox
        wanted = [n for n in dict.fromkeys(names) if n not in self._inside]
        if sandbox is None or not wanted:
            return
        tries = {n: [n, *_host_fallbacks(n)] for n in wanted}
        flat = [t for n in wanted for t in tries[n]]
        try:
            found = await sandbox_lookup(sandbox, flat)
            self._fault = None
        except SandboxBroken as exc:
            found, self._fault = {}, str(exc)
        for name in wanted:
            hit = next((found[t] for t in tries[name] if found.get(t)), None)
            if hit or not self._fault:
                self._inside[name] = hit

    async def binary(self, name: str, near: str | None = None) -> str | None:
        """`name` resolved where the server will run: `_resolve_binary` on the host, the inside's
        own PATH (then the host's fallback folders as the inside sees them) in a sandbox."""
        if self.sandbox is None:
            return _resolve_binary(name, near)
        await self.lookup([name])
        found = self._inside.get(name)
        if found is None and near and "/" not in name:
            beside = str(PurePosixPath(near).parent / name)  # next to the inside's other binary
            await self.lookup([beside])
            found = self._inside.get(beside)
        return found

    def not_found(self, name: str) -> str:
        if self.sandbox is None:
            return f"binary not on PATH: {name}"
        if self._fault is not None:
            return self._fault
        return f"binary not on PATH inside sandbox {self.sandbox.name}: {name}"

    # -- which spec ----------------------------------------------------------------------------

    def candidates(self, path: Path) -> list[ServerSpec]:
        """The specs that may answer navigation for `path`, in preference order."""
        return [s for s in self.specs if s.serves(path) and not s.linter]

    def linter_specs(self, path: Path) -> list[ServerSpec]:
        return [s for s in self.specs if s.serves(path) and s.linter]

    def serves(self, path: Path) -> bool:
        return any(s.serves(path) for s in self.specs)

    async def verdict(self, spec: ServerSpec, path: Path, *, listed: bool = False) -> Verdict:
        """`listed`: `path` is the run root or a folder listed under it (no need to resolve)."""
        if spec.markers:
            root = find_marker(path, self.root, spec.markers, resolved=listed)
            if root is None:
                return Verdict(spec, None, None, f"marker missing: {'/'.join(spec.markers)}")
            # A sub-project of a solution or workspace is served at the top, with its siblings.
            root = topmost(root, self._real_root)
        else:
            root = self.root
        probe = spec.probe_argv
        await self.lookup([spec.command[0], probe[0]])
        binary = await self.binary(spec.command[0])
        if binary is None:
            return Verdict(spec, root, None, self.not_found(spec.command[0]))
        probe_bin = binary if probe[0] == spec.command[0] else await self.binary(probe[0], binary)
        if probe_bin is None:
            return Verdict(spec, root, binary, self.not_found(probe[0]))
        result = await health_probe(probe_bin, probe[1:], timeout=10.0, sandbox=self.sandbox)
        if not result.ok:
            reason = result.reason or "health probe failed"
            if self.sandbox is not None:
                reason += f" (inside sandbox {self.sandbox.name})"
            return Verdict(spec, root, binary, reason)
        failure = self.failures.get((spec.id, root))
        if failure is not None:
            return Verdict(spec, root, binary, failure)
        return Verdict(spec, root, binary, None)

    def _no_server(self, path: Path) -> ToolError:
        rel = relpath(self.root, path)
        return ToolError(
            f"no language server handles {path.suffix or 'files without a suffix'} files "
            f"({rel}); servers here handle: {', '.join(self._suffixes())}; "
            + how_to_add(path.suffix or ".x")
        )

    def _suffixes(self) -> list[str]:
        return sorted({ext for s in self.specs for ext in s.extensions})

    # -- servers -------------------------------------------------------------------------------

    async def server_for(self, path: Path) -> LanguageServer:
        """The server for `path`: the first candidate spec that is usable and initializes.
        A spec that fails to initialize is remembered (until `reload`) and the next is tried."""
        specs = self.candidates(path)
        if not specs:
            raise self._no_server(path)
        reasons = []
        for spec in specs:
            verdict = await self.verdict(spec, path)
            if verdict.reason is not None:
                reasons.append(f"{spec.id}: {verdict.reason}")
                continue
            assert verdict.root is not None and verdict.binary is not None
            try:
                return await self._get(spec, verdict.root, verdict.binary)
            except ServerGone as exc:
                self.failures[(spec.id, verdict.root)] = f"initialize failed: {exc}"
                reasons.append(f"{spec.id}: initialize failed: {exc}")
        raise ToolError(
            f"no usable language server for {relpath(self.root, path)}: "
            + "; ".join(_said_once(reasons, specs))
        )

    async def linters_for(self, path: Path) -> tuple[list[LanguageServer], list[str]]:
        """Every usable linter for `path` (started if need be), beside its navigating server;
        and why a linter whose project configures it could not start. A linter whose marker
        is missing (the project does not configure it) is silently not run."""
        servers: list[LanguageServer] = []
        problems: list[str] = []
        for spec in self.linter_specs(path):
            verdict = await self.verdict(spec, path)
            if verdict.root is None:
                continue
            if verdict.reason is not None or verdict.binary is None:
                problems.append(f"{spec.id}: {verdict.reason}")
                continue
            try:
                servers.append(await self._get(spec, verdict.root, verdict.binary))
            except ServerGone as exc:
                self.failures[(spec.id, verdict.root)] = f"initialize failed: {exc}"
                problems.append(f"{spec.id}: initialize failed: {exc}")
        return servers, problems

    def running_linters(self, path: Path) -> list[LanguageServer]:
        return [
            server
            for (_, root), server in self.servers.items()
            if server.alive
            and server.spec.linter
            and server.spec.serves(path)
            and path.is_relative_to(root)
        ]

    def running_for(self, path: Path) -> LanguageServer | None:
        """A live server already serving `path`'s type and root, without starting anything."""
        for (spec_id, root), server in self.servers.items():
            if server.alive and server.spec.serves(path) and path.is_relative_to(root):
                spec = next((s for s in self.candidates(path) if s.id == spec_id), None)
                if spec is not None:
                    return server
        return None

    async def _get(self, spec: ServerSpec, root: Path, binary: str) -> LanguageServer:
        key = (spec.id, root)
        if self._closed:
            raise ToolError("the run is closing; no language server can start")
        async with self._locks.setdefault(key, asyncio.Lock()):
            server = self.servers.get(key)
            if server is not None and server.alive:
                return server
            if server is not None:
                self.crashes[key] = server.failure or "exited"
                del self.servers[key]
                await server.aclose()
            server = await LanguageServer.launch(
                spec,
                root,
                binary,
                request_timeout=self.request_timeout,
                init_timeout=self.init_timeout,
                sandbox=self.sandbox,
            )
            if self._closed:
                await server.aclose()
                raise ToolError("the run is closing; no language server can start")
            self.servers[key] = server
            return server

    async def project_servers(self) -> list[LanguageServer]:
        """Servers for a question about the whole checkout: the live ones, else one per file
        type family whose spec is usable here (started now)."""
        live = [s for s in self.servers.values() if s.alive and not s.spec.linter]
        if live:
            return live
        await self.lookup(self._all_binaries())
        out: list[LanguageServer] = []
        covered: set[str] = set()
        subprojects = Subprojects(self.root)
        for spec in self.specs:
            if spec.linter or covered.intersection(spec.extensions):
                continue
            verdict = await self.verdict(spec, self._marker_dir(spec, subprojects), listed=True)
            if verdict.reason is not None or verdict.root is None or verdict.binary is None:
                continue
            try:
                out.append(await self._get(spec, verdict.root, verdict.binary))
            except ServerGone as exc:
                self.failures[(spec.id, verdict.root)] = f"initialize failed: {exc}"
                continue
            covered.update(spec.extensions)
        return out

    def _all_binaries(self) -> list[str]:
        names = [n for s in self.specs for n in (s.command[0], s.probe_argv[0])]
        return names + [s.checker[0] for s in self.specs if s.checker]

    def crash_log(self) -> list[tuple[str, str]]:
        return [(key[0], reason) for key, reason in self.crashes.items()]

    async def reload(self) -> list[str]:
        """Stop every server; each starts again at its next call."""
        stopped = []
        for key, server in list(self.servers.items()):
            self.servers.pop(key, None)
            await server.aclose()
            stopped.append(f"{key[0]} ({relpath(self.root, key[1])})")
        self.failures.clear()
        self.crashes.clear()
        self.ledger.clear()
        self._inside.clear()
        self._fault = None
        return stopped

    # -- Resource ------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        running = []
        for (spec_id, root), server in self.servers.items():
            running.append(
                {
                    "server": spec_id,
                    "root": relpath(self.root, root),
                    "pid": server.pid,
                    "uptime_s": round(server.uptime(), 1),
                    "ready": server.busy() is None if server.alive else False,
                    "state": "running" if server.alive else f"down: {server.failure}",
                    "failing": server.failing,
                    "version": server.server_info.get("version"),
                    "python": server.python.describe() if server.python else None,
                    "watch": server.watched.describe(),
                }
            )
        await self.lookup(self._all_binaries())
        # Concurrently: in a sandbox each health probe starts a process there.
        subprojects = Subprojects(self.root)
        verdicts = await asyncio.gather(
            *(self.verdict(s, self._marker_dir(s, subprojects), listed=True) for s in self.specs)
        )
        specs = []
        answered: set[str] = set()  # suffixes a usable spec before this one already answers
        for spec, verdict in zip(self.specs, verdicts, strict=True):
            entry: dict[str, Any] = {
                "server": spec.id,
                "usable": verdict.reason is None,
                "reason": verdict.reason,
                "root": relpath(self.root, verdict.root) if verdict.root else None,
            }
            if verdict.reason is None and spec.linter:
                entry["lints"] = sorted(spec.extensions)  # beside the one that answers
            elif verdict.reason is None:
                # Of several usable servers for a file type, the first in preference order
                # answers its files (lsp.prefer changes the order); the others stand by.
                mine = sorted(set(spec.extensions) - answered)
                if mine:
                    entry["answers"] = mine
                else:
                    entry["standby"] = True
                answered.update(spec.extensions)
            specs.append(entry)
        usable = any(s["usable"] for s in specs) or bool(running)
        info: dict[str, Any] = {"usable": usable, "running": running, "servers": specs}
        if self.sandbox is not None:
            info["sandbox"] = self.sandbox.describe()
        return info

    def _marker_dir(self, spec: ServerSpec, subprojects: Subprojects | None = None) -> Path:
        """Where to look for `spec`'s root marker in this checkout: the run root, else the
        first sub-project (two levels deep at most) holding one. `subprojects`: a listing
        shared by the specs of one question."""
        if not spec.markers or find_marker(self.root, self.root, spec.markers, resolved=True):
            return self.root
        found = (subprojects or Subprojects(self.root)).first_with(spec.markers)
        return found or self.root

    async def aclose(self) -> None:
        self._closed = True
        servers = list(self.servers.values())
        self.servers.clear()
        await asyncio.gather(*(s.aclose() for s in servers), return_exceptions=True)
