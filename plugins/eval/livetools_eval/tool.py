"""The `eval` tool: arguments, and the handler that runs one cell and renders what it showed."""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from livetools import CallContext, Result, Tier, Tool, ToolError

DESCRIPTION = (
    "Run code in a persistent kernel: variables, imports and data survive between calls. "
    "Shows the last expression, display(), tables, plots. In a cell, tool(name, args) calls "
    "this run's tools; tools([(name, args), ...]) runs several concurrently. "
    "%pip, %cd, !cmd, %%bash, %%timeit work. "
    "notebook=x.ipynb: op (default run) on cells (cell: 1-based n, a-b or id, default all; "
    "to: new position; %%markdown line: markdown), in its own kernel; saved."
)

IDLE_TIMEOUT = 300.0  # seconds without output before a cell is interrupted
INTERRUPT_GRACE = 3.0  # seconds to answer an interrupt before the kernel is replaced
MAX_CHARS = 12_000
TAIL_CHARS = 4_000


class EvalBase(BaseModel):
    code: str = Field("", description="The cell.")
    description: str = Field(description="5-10 words: what this cell does.")
    reset: bool = Field(False, description="Start this language's kernel clean first.")
    notebook: str | None = None
    op: Literal["run", "read", "insert", "replace", "move", "delete"] | None = None
    cell: str | None = None
    to: int | None = None

    @field_validator("description")
    @classmethod
    def _five_to_ten_words(cls, value: str) -> str:
        words = len(value.split())
        if not 5 <= words <= 10:
            raise ValueError(f"{words} words; give 5-10 saying what the cell does")
        return value


def args_model(languages: list[str]) -> type[BaseModel]:
    """The argument model with the run's languages as an enum (a plugin may add languages)."""
    kind: Any = Literal[tuple(languages)]  # type: ignore[valid-type]
    return create_model(
        "EvalArgs",
        __base__=EvalBase,
        language=(kind, Field(languages[0], description="Kernel language.")),
    )


def make_tool(languages: list[str]) -> Tool:
    return Tool(
        name="eval",
        tier=Tier.EXEC,
        args=args_model(languages),
        handler=run_cell,
        description=DESCRIPTION,
        resource="eval",
        parallel_safe=False,
        # The limit is the idle budget; this is only a backstop for a cell that prints forever
        # (raise it with the run option call_timeouts={"eval": seconds}).
        timeout=6 * 3600.0,
    )


async def run_cell(ctx: CallContext, args: Any) -> Result:
    from .bridge import make_bridge
    from .idioms import RewriteError, rewrite
    from .kernel import KernelStartError, how_it_ended
    from .outputs import Outputs

    if args.notebook is not None:
        from .notebook.tool import run_notebook

        return await run_notebook(ctx, args)
    if args.op or args.cell or args.to is not None:
        raise ToolError("op, cell and to act on a notebook: pass notebook (an .ipynb path) too")
    pool = ctx.resource
    options = ctx.run.options
    language: str = args.language
    spec = pool.specs[language]
    notes: list[str] = []
    try:
        code = rewrite(args.code, spec.dialect, language)
    except RewriteError as exc:
        raise ToolError(str(exc)) from None
    if args.reset:
        had = language in pool.live
        await pool.drop(language)
        notes.append(
            f"reset: the {language} kernel was stopped; this cell runs in a fresh one."
            if had
            else f"reset: no {language} kernel was running; this cell runs in a fresh one."
        )
    if not args.code.strip():
        if args.reset:
            return Result("\n".join(notes), data={"language": language, "status": "reset"})
        raise ToolError("code is empty: pass the cell to run (or reset=true to only reset)")
    t0 = time.monotonic()
    try:
        kernel, start_notes = await pool.acquire(language)
    except KernelStartError as exc:
        raise ToolError(f"could not start the {language} kernel: {exc}") from None
    notes.extend(start_notes)
    idle = float(options.get("eval_idle_timeout", IDLE_TIMEOUT))
    grace = float(options.get("eval_interrupt_grace", INTERRUPT_GRACE))
    out = Outputs()
    outcome = await kernel.execute(code, out.add, bridge=make_bridge(ctx), idle=idle, grace=grace)
    if outcome.status in ("died", "disconnected") and not outcome.started:
        # It died before it began this cell (e.g. killed between calls), or a gateway's
        # connection was found closed before the send: nothing of the cell ran, so run it in a
        # fresh kernel (or the reconnected one) rather than fail it.
        if outcome.status == "died":
            await pool.drop(language, kernel.gone_reason())
        try:
            kernel, start_notes = await pool.acquire(language)
        except KernelStartError as exc:
            raise ToolError(f"could not start the {language} kernel: {exc}") from None
        notes.extend(start_notes)
        outcome = await kernel.execute(
            code, out.add, bridge=make_bridge(ctx), idle=idle, grace=grace
        )
    out.add_payloads(outcome.reply.get("payload") or [])
    status = outcome.status
    after: list[str] = []
    if outcome.eof_replies:
        after.append(
            "note: nobody can type into this kernel, so input()/prompt() got end-of-file; "
            "put the values in the code instead."
        )
    if status == "interrupted":
        after.append(
            f"interrupted: no output for {idle:g}s, so the cell was stopped; the kernel's state "
            "(variables, imports) is kept."
        )
    elif status == "restarted":
        await pool.drop(language, "it did not answer an interrupt and was restarted")
        after.append(
            f"timed out: no output for {idle:g}s and the kernel did not answer an interrupt; it "
            "was stopped and its state (variables, imports) was lost. The next call starts a "
            "fresh kernel."
        )
    elif status == "disconnected":
        after.append(
            f"{outcome.stderr or 'lost the connection to the Jupyter gateway'} during this cell; "
            "what the cell did after that is not known. The next call reconnects to its kernel "
            "if the gateway still has it (state kept), else starts a fresh one."
        )
    elif status == "died":
        code_note = how_it_ended(outcome.exit_code)
        tail = outcome.stderr.strip()
        await pool.drop(language, f"it died{code_note}")
        after.append(
            f"the {language} kernel died{code_note} during this cell; its state is lost and the "
            "next call starts a fresh kernel."
            + (f" Its stderr ends with:\n{_last_lines(tail, 8)}" if tail else "")
        )
    limit = int(options.get("eval_max_chars", MAX_CHARS))
    body = out.render(limit, min(TAIL_CHARS, limit // 3))
    text = "\n".join(part for part in (*notes, body, *after) if part)
    if not text:
        text = "(no output)"
    data: dict[str, Any] = {
        "language": language,
        "status": status,
        "execution_count": outcome.reply.get("execution_count"),
        "seconds": round(time.monotonic() - t0, 3),
    }
    if out.rich:
        data["rich"] = out.rich
    if out.error:
        data["error"] = out.error
    return Result(text, data=data, images=out.images, is_error=status != "ok")


def _last_lines(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[-n:])
