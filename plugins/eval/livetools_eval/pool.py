"""The run's kernel factory: one lazily started kernel per language, replaced when it dies or is
reset, all of them stopped with the run."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from livetools import Resource
from livetools.sandbox import Sandbox, SandboxBroken, lookup

from .gateway_config import GatewaySpec
from .hookspecs import KernelSpec, KernelUnavailable
from .kernel import MARKER, Kernel, KernelStartError

SETUP_TIMEOUT = 30.0


def helper_source(spec: KernelSpec) -> str | None:
    """The silent cell that installs `tool()`, `tools()` and the idiom helpers in a kernel."""
    if spec.helpers is not None:
        return spec.helpers.replace("__MARKER__", MARKER.encode("unicode_escape").decode())
    if spec.dialect == "none":
        return None
    side = resources.files("livetools_eval") / "kernel_side"
    if spec.dialect == "javascript":
        return (
            (side / "deno_helpers.js")
            .read_text()
            .replace("__MARKER__", MARKER.encode("unicode_escape").decode())
        )
    source = (side / "python_helpers.py").read_text()
    ipython = spec.dialect == "ipython"
    return f"{source}\n_livetools_setup({MARKER!r}, {ipython})\ndel _livetools_setup\n"


class Kernels(Resource):
    key = "eval"

    def __init__(
        self,
        root: Path,
        specs: dict[str, KernelSpec],
        sandbox: Sandbox | None = None,
        skipped: dict[str, str] | None = None,
    ) -> None:
        self.root = root
        self.specs = specs
        self.skipped = skipped or {}  # installed kernelspecs left out, name -> why
        self.sandbox = sandbox
        self.live: dict[str, Kernel] = {}
        self.started: list[Kernel] = []  # every kernel ever started (tests check none is left)
        self._lost: dict[str, str] = {}  # language -> why its last kernel is gone (told once)
        self._closed = False

    async def acquire(self, language: str) -> tuple[Kernel, list[str]]:
        """The live kernel of `language`, started if needed; notes say what happened to state."""
        if self._closed:
            raise KernelStartError("the run is closing")
        notes: list[str] = []
        kernel = self.live.get(language)
        if kernel is not None and not kernel.alive:
            # A gateway's kernel whose connection was lost: reconnect, state kept (raises
            # KernelStartError, kernel kept, when the gateway cannot be reached).
            revived = await kernel.revive()
            if revived:
                notes.append(revived)
        stuck = kernel is not None and kernel.abandoned is not None
        if stuck and kernel is not None and not await kernel.settle_abandoned(3.0):
            await self.drop(language, "its previous cell could not be stopped")
            kernel = None
        if kernel is not None and not kernel.alive:
            await kernel.reaped(2.0)  # a kill not yet acted on: learn how it ended
            await self.drop(language, kernel.gone_reason())
            kernel = None
        if kernel is None:
            why = self._lost.pop(language, None)
            kernel = await self._start(language)
            if why:
                notes.append(
                    f"note: started a fresh {language} kernel ({kernel.spec.name}); the previous "
                    f"one is gone ({why}), so earlier variables and imports are lost."
                )
        return kernel, notes

    async def _start(self, language: str) -> Kernel:
        spec = self.specs[language]
        if isinstance(spec, GatewaySpec):
            from .gateway import GatewayKernel

            kernel: Kernel = GatewayKernel(spec, self.root)
        else:
            kernel = Kernel(spec, self.root, self.sandbox)
        self.started.append(kernel)
        await kernel.start()
        source = helper_source(spec)
        if source:
            await self._install_helpers(kernel, source)
        self.live[language] = kernel
        return kernel

    async def _install_helpers(self, kernel: Kernel, source: str) -> None:
        spec = kernel.spec
        sink: list[dict[str, Any]] = []
        outcome = await kernel.execute(source, sink.append, idle=SETUP_TIMEOUT, silent=True)
        if outcome.status != "ok":
            errors = [m["content"] for m in sink if m["msg_type"] == "error"]
            await kernel.aclose()
            error = errors[0] if errors else outcome.reply
            detail = f"{error.get('ename', outcome.status)}: {error.get('evalue', '')}"
            raise KernelStartError(f"the {spec.name} kernel rejected livetools' helpers: {detail}")

    async def drop(self, language: str, why: str | None = None) -> None:
        """Stop the language's kernel; `why` is told to the next call that starts a new one."""
        kernel = self.live.pop(language, None)
        if why:
            self._lost[language] = why
        if kernel is not None:
            await kernel.aclose()

    async def status(self) -> dict[str, Any]:
        kernels: dict[str, Any] = {}
        for language, spec in self.specs.items():
            entry: dict[str, Any] = {"kernel": spec.name}
            if isinstance(spec, GatewaySpec):
                entry.update(await gateway_status(spec))
                kernel = self.live.get(language)
                entry["running"] = bool(kernel and kernel.alive)
                if kernel is not None and getattr(kernel, "kernel_id", None):
                    entry["kernel_id"] = kernel.kernel_id  # type: ignore[attr-defined]
                kernels[language] = entry
                continue
            if spec.origin:
                entry["kernelspec"] = spec.origin
            try:
                entry["command"] = spec.command()[0]
                entry["usable"] = True
            except KernelUnavailable as exc:
                entry.update(usable=False, reason=str(exc))
            if entry["usable"] and self.sandbox is not None:
                missing = await self._missing_inside(spec, entry["command"])
                if missing:
                    entry.update(usable=False, reason=missing)
            kernel = self.live.get(language)
            entry["running"] = bool(kernel and kernel.alive)
            if kernel is not None and kernel.alive:
                entry["pid"] = kernel.pid
            kernels[language] = entry
        status = {"usable": any(k["usable"] for k in kernels.values()), "kernels": kernels}
        if self.skipped:
            status["kernelspecs_left_out"] = dict(self.skipped)
        return status

    async def _missing_inside(self, spec: KernelSpec, program: str) -> str | None:
        """Why the kernel cannot start inside the sandbox (the host's PATH says nothing about
        it), or None: its program, and the interpreter of the relay a TCP-only kernel needs
        there (kernel_side/relay.py), looked up inside."""
        assert self.sandbox is not None
        needed = [program]
        if spec.transport == "tcp" and self.sandbox.shared_dir is not None:
            needed.append(sys.executable)
        inside = {path: self.sandbox.paths.to_inside(path) for path in needed}
        try:
            found = await lookup(self.sandbox, list(inside.values()))  # one process for both
        except SandboxBroken as exc:
            return str(exc)
        for path in needed:
            if found.get(inside[path]) is None:
                role = "" if path == program else " (the relay in front of the kernel)"
                return f"{inside[path]}{role} not found inside sandbox {self.sandbox.name}"
        return None

    async def aclose(self) -> None:
        self._closed = True
        self.live.clear()
        for kernel in self.started:  # also one still starting when the run closed
            with contextlib.suppress(Exception):
                await asyncio.wait_for(kernel.aclose(), 8.0)


async def gateway_status(spec: GatewaySpec) -> dict[str, Any]:
    """Where a gateway kernel runs and whether the gateway answers (its kernelspec list, 3 s)."""
    entry: dict[str, Any] = {"gateway": spec.url, "kernelspec": spec.kernel_name}
    if spec.notes:
        entry["ignored_settings"] = list(spec.notes)
    if spec.problem:
        entry.update(usable=False, reason=spec.problem)
        return entry
    from .gateway import GatewayError, GatewayKernel

    probe = GatewayKernel(spec, Path("."))
    from tornado.httpclient import AsyncHTTPClient

    probe._http = AsyncHTTPClient(force_instance=True)
    try:
        listed = await probe._rest("GET", "/api/kernelspecs", limit=3.0)
        names = sorted((listed or {}).get("kernelspecs") or {})
        if spec.kernel_name in names:
            entry["usable"] = True
        else:
            entry.update(
                usable=False,
                reason=f"the gateway has no kernelspec {spec.kernel_name!r} (it has: "
                f"{', '.join(names) or 'none'}); set eval_gateway_kernels",
            )
    except GatewayError as exc:
        entry.update(usable=False, reason=str(exc))
    finally:
        probe._http.close()
    return entry
