"""livetools plugin `lsp`: the `lsp` and `lsp_rename` tools and diagnostics on write.

Language servers come from the family hook `livetools_lsp_servers` (see hookspecs.py); the
built-ins answer it like any third party. Nothing starts at import or discovery: the supervisor
is cheap to connect, and each server starts at the first call that needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import Tier, Tool, hookimpl
from livetools.options import Check, Flag, Names, Number, Option, Table

from .spec import ServerSpec

if TYPE_CHECKING:
    import pluggy

    from livetools import Run

__all__ = ["ServerSpec", "server_specs"]


@hookimpl
def livetools_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl(trylast=True)
def livetools_lsp_servers() -> list[ServerSpec]:
    from .servers import BUILTIN

    return list(BUILTIN)


def server_specs(run: Run) -> list[ServerSpec]:
    """Every plugin's specs, earlier answers first (the first spec of an id wins), then the
    configured `lsp.servers` entries applied (configured.py)."""
    from .configured import apply, missing

    answers = run.host.plugins.pm.hook.livetools_lsp_servers(run=run)
    seen: dict[str, ServerSpec] = {}
    for answer in answers:
        for spec in answer if isinstance(answer, list | tuple) else [answer]:
            if isinstance(spec, ServerSpec) and spec.id not in seen:
                seen[spec.id] = spec
    options = run.options.get("lsp")
    entries = (options or {}).get("servers") if isinstance(options, dict) else None
    if not entries:
        return list(seen.values())
    for problem in missing(entries, set(seen)):
        if problem not in run.problems:
            run.problems.append(problem)
    return apply(list(seen.values()), entries)


def _entry(value: Any) -> Any:
    from .configured import check_entry

    return check_entry(value)


@hookimpl
def livetools_options() -> list[Option]:
    """`lsp=false` turns the family off; `lsp.NAME` configures it (the host checks both)."""
    return [
        Option("lsp", Flag(), True, "false turns the lsp family off for the run"),
        Option(
            "lsp.prefer",
            Names(),
            [],
            "server ids tried first, in order (also $LIVETOOLS_LSP_SERVERS)",
        ),
        Option("lsp.disable", Names(), [], "server ids never started in this run"),
        Option(
            "lsp.servers",
            Table(Check(_entry, "a table with command, extensions, root_markers, …"), key="NAME"),
            {},
            "language servers by configuration (docs/configuration.md)",
        ),
        Option("lsp.request_timeout", Number(), 30.0, "seconds one request to a server may take"),
        Option("lsp.init_timeout", Number(), 45.0, "seconds a server may take to initialize"),
        Option(
            "lsp.ready_timeout",
            Number(),
            30.0,
            "seconds a cross-file question waits for a server to load its project",
        ),
        Option(
            "lsp.diagnostics_on_write",
            Flag(),
            True,
            "attach newly introduced diagnostics to a write's result",
        ),
    ]


@hookimpl
def livetools_resources(run: Run) -> Any:
    if run.options.get("lsp") is False:
        return None
    from .supervisor import Supervisor

    return Supervisor(run, server_specs(run))


@hookimpl
def livetools_register_tools(register: Callable[[Tool], None], run: Run) -> None:
    from .actions import DESCRIPTION, LspArgs, lsp
    from .rename import DESCRIPTION as RENAME_DESCRIPTION
    from .rename import RenameArgs, lsp_rename

    register(Tool("lsp", Tier.READ, LspArgs, lsp, DESCRIPTION, resource="lsp"))
    register(
        Tool(
            "lsp_rename",
            Tier.WRITE,
            RenameArgs,
            lsp_rename,
            RENAME_DESCRIPTION,
            resource="lsp",
            parallel_safe=False,
        )
    )


@hookimpl
def livetools_observe_write(run: Run, paths: list[Path], notes: list[str]) -> Any:
    from .observe import observer

    return observer(run, paths, notes)
