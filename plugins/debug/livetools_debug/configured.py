"""Debug adapters defined by configuration (`[debug.adapters.NAME]`, docs/configuration.md):
checked when the run opens, turned into the same `Adapter` a built-in is. `launch` and `attach`
are DAP request templates whose strings may hold `${program}`, `${program_dir}` (the program if
it is a folder, else its folder), `${cwd}` (the project folder), `${root}`, `${host}`, `${port}`;
a value that is exactly `"${args}"` becomes the program's argument list. `disabled = true`
removes an adapter (a built-in too); an entry named like a built-in replaces it whole.

    [debug.adapters.node]
    command = ["js-debug-adapter"]
    extensions = [".js"]
    launch = { type = "pwa-node", request = "launch", program = "${program}", args = "${args}" }
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from livetools.options import Invalid, entry_table

from .adapters import Adapter, AttachInfo, LaunchInfo

_LISTS = {
    "command": "a list of strings (the argv; {host} and {port} for tcp)",
    "extensions": 'a list of program suffixes such as [".js"]',
    "root_markers": "a list of file names",
    "probe": "a list of strings (arguments of the health check)",
    "requires": "a list of binaries the launch needs",
    "exception_filters": "a list of filter names enabled by default",
}
_KEYS = (
    *_LISTS,
    "launch",
    "attach",
    "disabled",
    "transport",
    "dial_in",
    "stdout_is_output",
    "exit_pattern",
    "stdout_ignore",
    "folders",
    "attach_direct",
    "init_timeout",
    "description",
)
_VARIABLE = re.compile(r"\$\{(program|program_dir|cwd|root|host|port|args)\}")


def check_entry(value: Any) -> dict[str, Any]:
    value = entry_table(value, "a table with command, extensions, launch, …", _KEYS, _LISTS)
    for key in ("launch", "attach"):
        if key in value and not isinstance(value[key], Mapping):
            raise Invalid(f"{key} as a table (the DAP {key} request's arguments)")
    for key in ("disabled", "dial_in", "stdout_is_output", "folders", "attach_direct"):
        if key in value and not isinstance(value[key], bool):
            raise Invalid(f"{key} as true or false")
    if value.get("transport", "stdio") not in ("stdio", "tcp"):
        raise Invalid('transport as "stdio" or "tcp"')
    if not value.get("disabled") and ("command" not in value or "launch" not in value):
        raise Invalid("command and launch (or disabled = true)")
    for key in ("exit_pattern", "stdout_ignore"):
        if key in value:
            try:
                re.compile(str(value[key]))
            except re.error as exc:
                raise Invalid(f"{key} as a regular expression ({exc})") from None
    return dict(value)


def _fill(template: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(template, str):
        if template == "${args}":
            return list(values["args"])
        return _VARIABLE.sub(lambda m: str(values[m.group(1)]), template)
    if isinstance(template, Mapping):
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    return template


def _launch(template: Mapping[str, Any]) -> Any:
    def config(info: LaunchInfo) -> dict[str, Any]:
        program = info.program
        values = {
            "program": program,
            "program_dir": program if program.is_dir() else program.parent,
            "cwd": info.cwd,
            "root": info.root,
            "host": "127.0.0.1",
            "port": 0,
            "args": info.args,
        }
        config = _fill(template, values)
        if info.env:  # the DAP spelling most adapters take (`options.env`)
            config.setdefault("env", dict(info.env))
        if info.stop_on_entry:
            config["stopOnEntry"] = True
        return config

    return config


def _attach(template: Mapping[str, Any]) -> Any:
    def config(info: AttachInfo) -> dict[str, Any]:
        values = {
            "program": "",
            "program_dir": "",
            "cwd": info.cwd,
            "root": info.root,
            "host": info.host,
            "port": info.port,
            "pid": info.pid or 0,
            "args": [],
        }
        return _fill(template, values)

    return config


def _claims(extensions: tuple[str, ...]) -> Any:
    """`folders = true`: a program folder holding a file of these suffixes (a Go package) is the
    adapter's too."""

    def claims(program: Path) -> bool:
        if program.is_dir():
            return any(p.suffix in extensions for p in program.iterdir() if p.is_file())
        return program.suffix in extensions

    return claims


def adapter_of(name: str, entry: Mapping[str, Any]) -> Adapter:
    extensions = tuple(entry.get("extensions") or ())
    return Adapter(
        id=name,
        command=tuple(entry["command"]),
        launch_config=_launch(entry["launch"]),
        transport="tcp" if entry.get("transport") == "tcp" else "stdio",
        markers=tuple(entry.get("root_markers") or ()),
        probe_args=tuple(entry["probe"]) if "probe" in entry else ("--version",),
        requires=tuple(entry.get("requires") or ()),
        extensions=extensions,
        claims=_claims(extensions) if entry.get("folders") else None,
        attach_direct=bool(entry.get("attach_direct", False)),
        stdout_ignore=entry.get("stdout_ignore"),
        attach_config=_attach(entry["attach"]) if "attach" in entry else None,
        dial_in=bool(entry.get("dial_in", False)),
        exception_filters=tuple(entry.get("exception_filters") or ()),
        stdout_is_output=bool(entry.get("stdout_is_output", False)),
        exit_pattern=entry.get("exit_pattern"),
        init_timeout=float(entry.get("init_timeout", 30.0)),
        description=str(entry.get("description") or f"{name} (from configuration)"),
    )


def apply(adapters: list[Adapter], entries: Mapping[str, Mapping[str, Any]]) -> list[Adapter]:
    """Configured adapters first (what the user asked for), then the others not replaced or
    disabled."""
    configured = [adapter_of(n, e) for n, e in entries.items() if not e.get("disabled")]
    named = set(entries)
    return configured + [a for a in adapters if a.id not in named]
