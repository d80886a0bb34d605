"""The astgrep plugin's hooks (the `livetools` entry point). Importing it must stay cheap:
tree-sitter and the grammars load on first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from livetools import Tier, Tool, hookimpl
from livetools.options import Integer, Option

from .grammar import Grammar

RESOURCE = "astgrep"


@hookimpl
def livetools_addhooks(pluginmanager: Any) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def livetools_options() -> list[Option]:
    return [
        Option(
            "astgrep.workers",
            Integer(0, "worker processes"),
            2,
            "search worker processes (default: up to 2)",
        ),
        Option(
            "astgrep.inline_bytes",
            Integer(0, "bytes"),
            4 << 20,
            "a cold search of less source than this runs in-process",
        ),
        Option(
            "astgrep.cache_bytes",
            Integer(0, "bytes"),
            1 << 30,
            "memory a process may hold in parsed trees",
        ),
        Option(
            "astgrep.max_file_bytes",
            Integer(1, "bytes"),
            2 << 20,
            "files larger than this are skipped",
        ),
    ]


@hookimpl
def livetools_grammars() -> list[Grammar]:
    from .grammar import builtin_grammars

    return builtin_grammars()


@hookimpl
def livetools_resources(run: Any) -> Any:
    from .resource import AstGrepResource

    return AstGrepResource(run, __name__)


@hookimpl
def livetools_register_tools(register: Callable[[Tool], None], run: Any) -> None:
    from . import tools

    register(
        Tool(
            "ast_grep",
            Tier.READ,
            tools.AstGrepArgs,
            tools.ast_grep,
            "Find code by syntax shape. Pattern is code: $X one node, $$$X a run, bound "
            "names repeat-checked; comments/spacing ignored, strings never matched.",
            resource=RESOURCE,
        )
    )
    register(
        Tool(
            "ast_edit",
            Tier.WRITE,
            tools.AstEditArgs,
            tools.ast_edit,
            "Stage a structural rewrite of every match (writes nothing; returns a diff and an "
            "edit_id for resolve).",
            resource=RESOURCE,
            parallel_safe=False,
            timeout=300.0,
        )
    )
    register(
        Tool(
            "resolve",
            Tier.WRITE,
            tools.ResolveArgs,
            tools.resolve,
            "Accept (write all files, refused if any changed since staging) or discard an "
            "edit staged by ast_edit or lsp_rename preview.",
            resource=RESOURCE,
            parallel_safe=False,
        )
    )
