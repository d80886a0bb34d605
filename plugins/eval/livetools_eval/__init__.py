"""livetools plugin eval: persistent Python (ipykernel) and JavaScript (Deno) cells, with the
run's own tools callable from inside a cell.

Importing this module must stay cheap: jupyter_client and the kernels load at the first call."""

from __future__ import annotations

from typing import Any

from livetools import Resource, hookimpl
from livetools.options import Check, Flag, Integer, Number, OffOr, Option, Text

from . import hookspecs
from .gateway_config import GatewaySpec
from .hookspecs import KernelSpec, KernelUnavailable

__all__ = ["GatewaySpec", "KernelSpec", "KernelUnavailable"]


@hookimpl
def livetools_addhooks(pluginmanager: Any) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def _kernels(value: Any) -> Any:
    if isinstance(value, dict | str):
        return value  # gateway_config words a bad table (a problem of the run, not of opening)
    raise ValueError('a table language = kernelspec name, e.g. {"python": "python3"}')


@hookimpl
def livetools_options() -> list[Option]:
    return [
        Option("eval", Flag(), True, "false turns the eval tool off for the run"),
        Option(
            "eval_kernelspecs",
            Flag(),
            True,
            "false: only the built-in kernels, not installed kernelspecs",
        ),
        Option(
            "eval_idle_timeout",
            Number(),
            300.0,
            "seconds without output before a cell is interrupted",
        ),
        Option(
            "eval_interrupt_grace",
            Number(),
            3.0,
            "seconds a kernel has to answer an interrupt before it is replaced",
        ),
        Option(
            "eval_max_chars",
            Integer(1, "characters"),
            12_000,
            "characters of a cell's output the model reads",
        ),
        Option(
            "eval_gateway",
            OffOr(Text()),
            None,
            "a Jupyter kernel gateway URL (false: none, even if configured)",
        ),
        Option("eval_gateway_token", Text(), None, "the gateway's token"),
        Option(
            "eval_gateway_kernels",
            Check(_kernels, "a table language = kernelspec name"),
            None,
            "kernelspec name per language on the gateway",
        ),
    ]


@hookimpl
def livetools_eval_kernels(run: Any) -> list[KernelSpec]:
    from .builtin import builtin_kernels

    return builtin_kernels()


def kernel_specs(run: Any) -> tuple[dict[str, KernelSpec], dict[str, str]]:
    """language → spec; the first answer per language wins (later-registered plugins answer
    first, so a third party overrides a built-in). Then the installed Jupyter kernelspecs for
    the languages left (run option `eval_kernelspecs=False`: none); the second value says why
    each kernelspec left out was."""
    hook = getattr(run.host.plugins.pm.hook, "livetools_eval_kernels", None)
    specs: dict[str, KernelSpec] = {}
    if hook is None:
        return specs, {}
    for answer in hook(run=run):
        for spec in answer if isinstance(answer, list) else [answer]:
            if isinstance(spec, KernelSpec):
                specs.setdefault(spec.language, spec)
    if not specs:
        return specs, {}
    # A configured gateway serves its languages (replacing the host's kernels of those).
    import os

    from .gateway_config import gateway_specs, load

    for spec in gateway_specs(load(run.root, run.options, os.environ)):
        specs[spec.language] = spec
    if run.options.get("eval_kernelspecs") is False:
        return specs, {}
    from .installed import installed_kernels

    trusted = run.options.get("trust_project_config") is not False
    found, skipped = installed_kernels(run.root, set(specs), trusted)
    specs.update((spec.language, spec) for spec in found)
    return specs, skipped


@hookimpl
def livetools_resources(run: Any) -> Resource | None:
    if run.options.get("eval") is False:
        return None
    specs, skipped = kernel_specs(run)
    if not specs:
        return None
    from .pool import Kernels

    return Kernels(run.root, specs, run.sandbox, skipped)


@hookimpl
def livetools_register_tools(register: Any, run: Any) -> None:
    pool = run.resource("eval")
    if pool is None:
        return
    from .tool import make_tool

    register(make_tool(list(pool.specs)))
