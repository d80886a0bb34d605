"""Run options: each family declares the options it reads, core checks every option against
those declarations when a run opens.

Design. A plugin implements the hook `livetools_options()` and returns a list of `Option`s: a
dotted name (`debug_ttl`, `lsp.request_timeout`), a kind (how a value is checked and coerced:
`Flag`, `Number`, `Integer`, `Text`, `Choice`, `Names`, `Table`, `Settings`, `OffOr`, `Check`),
a default and a one-line doc. Sections are implied by dotted names; a `Table` takes keys nobody
can list in advance (`call_timeouts.TOOL`). The host stamps each option with the plugin that
declared it, adds core's own (below), and `Host.open_run` validates the run's options with
them: unknown names are refused with the nearest known name, booleans accept JSON booleans and
true/false/yes/no/1/0 in any case, numbers accept numeric strings, and a wrong type is named with
the expected one ("option call_timeouts.ast_grep: expected a number of seconds above 0, got
'abc'"). The run keeps the coerced values in `run.options`, so a family reads proper types.

The configuration loader (user file, `[tool.livetools]`, `.livetools.toml`, environment) reads
the same declarations: names, kinds (every kind accepts the string spelling of its values, as
the environment gives them), defaults and docs (`describe`).
"""

from __future__ import annotations

from typing import Any

from .spec import (
    Check,
    Choice,
    Flag,
    Integer,
    Invalid,
    Kind,
    Names,
    Number,
    OffOr,
    Option,
    Settings,
    Table,
    Text,
    entry_table,
)
from .validate import (
    BUILTIN_FAMILIES,
    Declared,
    OptionError,
    declared_by,
    describe,
    nearest,
    validate,
)

__all__ = [
    "BUILTIN_FAMILIES",
    "CORE",
    "Check",
    "Choice",
    "Declared",
    "Flag",
    "Integer",
    "Invalid",
    "Kind",
    "Names",
    "Number",
    "OffOr",
    "Option",
    "OptionError",
    "Settings",
    "Table",
    "Text",
    "declared_by",
    "describe",
    "entry_table",
    "nearest",
    "validate",
]

SANDBOX_EXAMPLES = '"bwrap", "none", {"kind": "bwrap", "network": true}, {"wrap": "PREFIX …"}'


def _sandbox(value: Any) -> Any:
    """The option's broad shape; sandbox/options.py checks the rest (kind, wrap, root) when the
    run opens, before anything starts."""
    if value is None or value is False or value == "":
        return None
    if isinstance(value, str):
        return "none" if value.strip().lower() in ("none", "false", "no") else value
    if isinstance(value, dict):
        return dict(value)
    raise Invalid("one of " + SANDBOX_EXAMPLES)


# Core's own options (approvals.py, run.py, sandbox/options.py read them).
CORE = [
    Option(
        "call_timeouts",
        Table(Number(), key="TOOL"),
        {},
        "seconds a call of TOOL may take before it is stopped (call_timeouts.ast_grep=120)",
    ),
    Option(
        "approve",
        Choice(choices=("allow", "deny", "ask")),
        "allow",
        "write/exec calls: allow, deny, or ask the human (fails closed)",
    ),
    Option(
        "approve_expiry",
        Number(),
        600.0,
        "seconds an approval card waits for the human (else ask_expiry, else 600)",
    ),
    Option(
        "trust_project_config",
        Flag(),
        True,
        "false: the project's own files may not name programs to start (user file or run only)",
    ),
    Option(
        "sandbox",
        Check(_sandbox, "one of " + SANDBOX_EXAMPLES),
        None,
        "where every process of the run starts: none, bwrap, or a launcher (docs/sandbox.md)",
    ),
]
