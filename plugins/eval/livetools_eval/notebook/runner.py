"""A notebook's kernel and the loop over its cells.

Each notebook gets a kernel of its own, as in Jupyter (its variables are not the `eval` cells'
nor another notebook's), started from the run's kernels (the same specs, sandbox and helpers, so
`tool()` works in a notebook cell too), in the notebook's folder (relative paths in its cells
mean what they mean in Jupyter). The pool closes it with the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livetools import CallContext, ToolError

from ..hookspecs import KernelSpec
from ..kernel import Kernel, KernelStartError, Outcome
from .cells import Recorder

# Kernelspec names and languages that name one of the run's languages under another word.
ALIASES = {
    "python3": "python",
    "python2": "python",
    "ipython": "python",
    "deno": "javascript",
    "typescript": "javascript",
    "ir": "r",
}


@dataclass
class Session:
    """An open notebook: `snapshot` is the file as this run last read or wrote it (any other
    content on disk is someone else's save), `nb` the notebook those bytes hold."""

    path: Path
    rel: str
    snapshot: bytes | None
    nb: Any
    kernel: Kernel | None = None
    language: str = ""
    lost: str = ""  # why the last kernel is gone, told once with the next one
    recorder: Recorder = field(default_factory=Recorder)


@dataclass
class Ran:
    index: int
    outcome: Outcome


def wanted(nb: Any) -> tuple[str, str]:
    """The kernelspec name and language the notebook asks for ("" when it does not say)."""
    meta = nb.get("metadata") or {}
    spec = meta.get("kernelspec") or {}
    name = str(spec.get("name") or "").strip()
    language = str(spec.get("language") or (meta.get("language_info") or {}).get("name") or "")
    return name, language.strip().lower()


def choose(nb: Any, rel: str, pool: Any) -> tuple[str, KernelSpec, str]:
    """The run's language and spec for the notebook, and a note when it is not the kernelspec's
    own kernel; ToolError naming the kernelspec and the kernels here when none fits."""
    specs: dict[str, KernelSpec] = pool.specs
    name, language = wanted(nb)
    if not name and not language and "python" in specs:
        return "python", specs["python"], ""  # what Jupyter and nbconvert assume
    for lang, spec in specs.items():
        names = {spec.name.lower(), str(getattr(spec, "kernel_name", "")).lower()}
        if name and name.lower() in names:
            return lang, spec, ""
    for candidate in (ALIASES.get(name.lower()), language, ALIASES.get(language)):
        if candidate and candidate in specs:
            note = ""
            if name and name.lower() not in ALIASES:
                note = (
                    f"note: kernelspec {name!r} is not installed here; running in the "
                    f"{candidate} kernel ({specs[candidate].name}), the one for its language"
                )
            return candidate, specs[candidate], note
    asked = f"{name!r} (language {language or 'not given'})" if name else f"language {language!r}"
    have = ", ".join(f"{lang} ({spec.name})" for lang, spec in specs.items())
    left_out = (getattr(pool, "skipped", None) or {}).get(name.lower()) if name else None
    why = f"; kernelspec {name!r} was left out: {left_out}" if left_out else ""
    raise ToolError(
        f"notebook: {rel} needs the kernel {asked}, which this run does not have{why}. Kernels "
        f"here: {have}. Install that kernel as a Jupyter kernelspec, or set the notebook's "
        "metadata.kernelspec to one of these; nothing was started"
    )


async def acquire(session: Session, pool: Any) -> tuple[Kernel, list[str]]:
    """The notebook's live kernel, started if needed; notes say what happened to its state."""
    language, spec, note = choose(session.nb, session.rel, pool)
    notes = [note] if note else []
    kernel = session.kernel
    if kernel is not None and not kernel.alive and session.language == language:
        try:  # a gateway's kernel whose connection was lost: reconnect, state kept
            revived = await kernel.revive()
        except KernelStartError as exc:
            raise ToolError(f"the kernel of {session.rel} cannot be reached: {exc}") from None
        if revived:
            notes.append(revived)
    if kernel is not None and (not kernel.alive or session.language != language):
        if kernel.alive:
            session.lost = f"the notebook's kernelspec changed to {language}"
        elif not session.lost:
            session.lost = kernel.gone_reason()
        await drop(session)
        kernel = None
    stuck = kernel is not None and kernel.abandoned is not None
    if stuck and kernel is not None and not await kernel.settle_abandoned(3.0):
        session.lost = "its previous cell could not be stopped"
        await drop(session)
        kernel = None
    if kernel is None:
        kernel = await _start(session, spec, pool)
        session.kernel, session.language = kernel, language
        if session.lost:
            notes.append(
                f"note: started a fresh {language} kernel for {session.rel}; the previous one is "
                f"gone ({session.lost}), so its variables are lost"
            )
            session.lost = ""
    return kernel, notes


async def _start(session: Session, spec: KernelSpec, pool: Any) -> Kernel:
    from ..gateway_config import GatewaySpec
    from ..pool import helper_source

    if getattr(pool, "_closed", False):
        raise ToolError("the run is closing; no kernel is started")
    if isinstance(spec, GatewaySpec):
        from ..gateway import GatewayKernel

        kernel: Kernel = GatewayKernel(spec, pool.root)
    else:
        kernel = Kernel(spec, session.path.parent, pool.sandbox)
    pool.started.append(kernel)  # the pool stops every kernel it lists when the run closes
    try:
        await kernel.start()
        source = helper_source(spec)
        if source:
            await pool._install_helpers(kernel, source)
    except KernelStartError as exc:
        await kernel.aclose()
        raise ToolError(
            f"could not start the {spec.name} kernel for {session.rel}: {exc}"
        ) from None
    return kernel


async def drop(session: Session) -> None:
    kernel, session.kernel = session.kernel, None
    if kernel is not None:
        await kernel.aclose()


async def run_cells(
    ctx: CallContext, session: Session, indices: list[int], sink: Any
) -> tuple[list[Ran], list[str]]:
    """Run the code cells among `indices` in order, recording their outputs into the notebook,
    until one does not end ok. `sink(index)` is told each cell before it runs."""
    from ..bridge import make_bridge
    from ..idioms import RewriteError, rewrite
    from ..tool import IDLE_TIMEOUT, INTERRUPT_GRACE

    cells = session.nb.cells
    if not any(cells[i].cell_type == "code" and cells[i].source.strip() for i in indices):
        return [], []  # markdown or empty cells only: no kernel is needed
    options = ctx.run.options
    idle = float(options.get("eval_idle_timeout", IDLE_TIMEOUT))
    grace = float(options.get("eval_interrupt_grace", INTERRUPT_GRACE))
    kernel, notes = await acquire(session, ctx.resource)
    info = kernel.info.get("language_info")
    if isinstance(info, dict) and info:
        session.nb.metadata["language_info"] = info  # as Jupyter records it
    ran: list[Ran] = []
    recorder = session.recorder
    for index in indices:
        cell = session.nb.cells[index]
        if cell.cell_type != "code" or not cell.source.strip():
            continue  # as nbclient: an empty cell is not run and keeps what it had
        sink(index)
        recorder.begin(cell)
        try:
            code = rewrite(cell.source, kernel.spec.dialect, session.language)
        except RewriteError as exc:
            recorder.add(_error_message("RewriteError", str(exc)))
            recorder.end()
            ran.append(Ran(index, Outcome("error")))
            break
        bridge = make_bridge(ctx)
        outcome = await kernel.execute(code, recorder.add, bridge=bridge, idle=idle, grace=grace)
        if outcome.status in ("died", "disconnected") and not outcome.started:
            # Gone before it began this cell: nothing of it ran, so run it in a fresh kernel.
            if outcome.status == "died":
                session.lost = kernel.gone_reason()
                await drop(session)
            kernel, more = await acquire(session, ctx.resource)
            notes.extend(more)
            outcome = await kernel.execute(
                code, recorder.add, bridge=bridge, idle=idle, grace=grace
            )
        recorder.end()
        count = outcome.reply.get("execution_count")
        cell.execution_count = count if isinstance(count, int) else None
        ran.append(Ran(index, outcome))
        if outcome.status in ("restarted", "died"):
            session.lost = (
                "it did not answer an interrupt and was stopped"
                if outcome.status == "restarted"
                else f"it died{_how(outcome)}"
            )
            await drop(session)
        if outcome.status != "ok":
            break
    return ran, notes


def _how(outcome: Outcome) -> str:
    from ..kernel import how_it_ended

    return how_it_ended(outcome.exit_code)


def _error_message(ename: str, evalue: str) -> dict[str, Any]:
    return {
        "msg_type": "error",
        "content": {"ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]},
    }
