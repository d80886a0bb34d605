"""The `livetools` command: status, tools, call, session, serve, resident (cli.py is its
light entry point, which tries a resident run before importing this).

Exit codes of `call`: 0 ok, 1 the tool reported an error, 2 usage error (unknown tool, tool not
on the surface, bad arguments). A worker started by a plan-mode agent inherits the ceiling through
LIVETOOLS_SURFACE, and no `--surface` can lift it. Output never fails to encode (lone surrogates
become U+FFFD), and a reader that goes away (`| head`) ends the command quietly."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..host import Host
from ..options import OptionError
from ..ports import Ports
from ..results import Result, json_line, scrub, scrub_json
from ..run import is_usage_error
from ..sandbox.options import SandboxOptionError
from ..schemas import FORMATS
from .lines import LineReader
from .question_ports import JsonLinesPort, TerminalPort
from .resident import keys
from .session import emit_line, session_loop
from .status import render_status, status_report
from .surface import UsageError, in_worker, resolve_surface


def _host(with_harness: bool = False) -> Host:
    if with_harness:
        from . import harness

        return Host(plugins=[(harness.PLUGIN_NAME, harness)])
    return Host()


def _ports(reader: LineReader | None, emit: Callable[[dict[str, Any]], None] | None) -> Ports:
    """A human is reachable through the terminal when stdin is a TTY, else through JSON-lines
    events when a session drives us; a worker never asks (its parent does)."""
    if in_worker() or reader is None:
        return Ports()
    if sys.stdin.isatty():
        return Ports(question=TerminalPort(reader), target_space="terminal")
    if emit is not None:
        return Ports(question=JsonLinesPort(reader, emit), target_space="session")
    return Ports()


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """`--option key=value` pairs as run options: the value is JSON when it parses (`60`,
    `false`, `{"eval": 5}`), else the string; a dotted key nests (`lsp.request_timeout=5`)."""
    try:
        return keys.parse_options(pairs)
    except keys.OptionError as exc:
        raise UsageError(str(exc)) from None


def _options(args: argparse.Namespace) -> dict[str, Any]:
    try:
        return keys.run_options(
            getattr(args, "option", None) or [],
            vibe=getattr(args, "vibe", False),
            approve=getattr(args, "approve", None),
            sandbox=getattr(args, "sandbox", None),
            sandbox_wrap=getattr(args, "sandbox_wrap", None),
            sandbox_root=getattr(args, "sandbox_root", None),
        )
    except keys.OptionError as exc:
        raise UsageError(str(exc)) from None


def _root(args: argparse.Namespace) -> Path:
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    return root


# -- commands --------------------------------------------------------------------------------


async def _no_human(question: Any) -> Any:
    raise RuntimeError("livetools tools --serve never asks")  # only its schema is shown


async def cmd_tools(args: argparse.Namespace) -> int:
    host = _host(with_harness=args.serve)
    surface = resolve_surface(host, args.surface)
    # --serve: what `livetools serve` offers a client that can elicit (write, edit, ask_user).
    ports = Ports(question=_no_human, target_space="mcp") if args.serve else Ports()
    async with host.open_run(_root(args), ports=ports, options=_options(args)) as run:
        tools = run.tools(surface)
        if args.format == "text":
            width = max((len(t.name) for t in tools), default=0)
            for tool in tools:
                print(f"{tool.name:<{width}}  {tool.tier.value:<5}  {tool.description}")
        else:
            from ..schemas import export

            print(json.dumps(export(tools, args.format), separators=(",", ":")))
    return 0


def call_arguments(raw: str | None) -> dict[str, Any]:
    """ARGS_JSON as the tool's arguments, or the usage error saying what is wrong with it."""
    try:
        call_args = json.loads(raw) if raw else {}
        # Lone surrogates (a JSON escape, or bytes argv could not decode) become U+FFFD, as
        # the session and serve faces do.
        call_args = scrub_json(call_args)
    except RecursionError:
        raise UsageError("ARGS_JSON is nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"ARGS_JSON is not valid JSON: {exc}") from None
    if not isinstance(call_args, dict):
        raise UsageError('ARGS_JSON must be a JSON object, e.g. {"path": "src"}')
    return call_args


def render_call(result: Result, as_json: bool) -> tuple[str, int]:
    """What `call` prints for a result, and its exit code (shared with the resident run, whose
    answers must be byte for byte the in-process ones)."""
    if as_json:
        out = json_line(result.to_json()) + "\n"
    else:
        out = scrub(result.text) + "\n"
        for png in result.images:
            out += f"[image: PNG, {len(png)} bytes; use --json to get it]\n"
    if is_usage_error(result):
        return out, 2
    return out, 1 if result.is_error else 0


async def cmd_call(args: argparse.Namespace) -> int:
    call_args = call_arguments(args.args)
    host = _host()
    surface = resolve_surface(host, args.surface)
    ports = _ports(LineReader(sys.stdin), None)
    async with host.open_run(_root(args), ports=ports, options=_options(args)) as run:
        result = await run.call(args.tool, call_args, surface=surface)
    out, code = render_call(result, args.json)
    sys.stdout.write(out)
    return code


async def cmd_session(args: argparse.Namespace) -> int:
    host = _host(with_harness=True)
    surface = resolve_surface(host, args.surface)
    reader = LineReader(sys.stdin)
    ports = _ports(reader, emit_line)
    async with host.open_run(_root(args), ports=ports, options=_options(args)) as run:
        await session_loop(run, surface, reader)
    return 0


async def cmd_status(args: argparse.Namespace) -> int:
    host = _host()
    async with host.open_run(_root(args), options=_options(args)) as run:
        report = await status_report(host, run)
    if args.json:
        print(json_line(report))
    else:
        print(scrub(render_status(report)))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .mcp.http.command import SetupError, check_flags
    from .mcp.server import main as serve

    try:
        check_flags(args)  # flags that mean something only with --http are not ignored
    except SetupError as exc:
        raise UsageError(str(exc)) from None
    if args.http:
        from .mcp.http.command import main as serve_http

        root = None if args.runs_under else _root(args)
        return serve_http(args, root, _options(args))
    return serve(_root(args), args.surface, _options(args))


# -- parsing ---------------------------------------------------------------------------------

EXIT_CODES = """exit codes:
  0  done (call: the tool succeeded)
  1  call: the tool reported an error (the text says what to do)
  2  usage error: bad command line, unknown tool, tool not on the surface, bad arguments
  130 interrupted; 141 the reader of stdout went away (e.g. | head), quietly"""

SURFACES = """surfaces: agent (read+write+exec), plan and readonly (read); or tiers with tool
exclusions, e.g. read,exec,-lsp_rename. LIVETOOLS_SURFACE (set for workers) is a ceiling no
--surface lifts; in a worker (LIVETOOLS_WORKER=1) an unset ceiling means readonly."""

OPTIONS = """run options (--option KEY=VALUE, repeatable; VALUE is JSON when it parses, else a
string; a dotted KEY nests), with their defaults in seconds:
  debug_ttl=1800  debug_wait=10  debug_launch_wait=30  eval_idle_timeout=300
  eval_interrupt_grace=3  ask_expiry=600  lsp.request_timeout=30  lsp.init_timeout=45
  call_timeouts.TOOL=SECONDS  eval=false  lsp=false (turn a family off)
Every option is checked before the run starts (exit 2 naming it): unknown names (with the
nearest known one), wrong types; booleans are true/false/yes/no/1/0 in any case.
`livetools status --json` lists every option the installed families declare."""

CALL_HELP = """ARGS_JSON is one JSON object of the tool's arguments, as `livetools tools --format
json` lists them under "parameters", e.g. '{"pattern": "print($A)", "path": "src"}'
(default {}). --json prints {"ok": bool, "text": str, "data": any, "images": [{"mime",
"base64"}]}; without it, the text the model would read."""

SESSION_HELP = """protocol (JSON lines; one run for the whole session):
  in:   {"tool": NAME, "args": {...}, "id": ANY}        (args and id optional)
  out:  {"ok": bool, "text": str, "data": any, "images": [...], "id": ANY}
  in:   {"status": true, "id": ANY}    this run's status (as `livetools status`), same out
Every input line gets exactly one output line (blank lines are ignored); a bad line gets
{"ok": false, "text": "bad input line: ..."} and the session goes on. Lone surrogates become
U+FFFD on the way in and out. The session also offers write(path, content) and
edit(path, old, new), with diagnostics on write.
ask_user: the session emits {"event": "question", "number": N, "card": ..., "options": ...};
answer with one line {"choices": ["label"]}, {"text": "..."}, {"reply": "1,3"} or
{"skip": true}. While a question is open, only an answer object answers: any other line,
including a tool line, gets {"event": "question_error", "number": N, "text": ..., "id": ...}
and is NOT run (refused, not queued: send it again after answering). An expired question
emits {"event": "question_expired", "number": N}. End of input ends the session.
--approve ask: before a write/exec call the session emits {"event": "approval", "number": N,
"tool", "tier", "summary", "card"}; answer {"approve": true}, {"approve": false} or
{"always": true} (this tool, for the rest of the session). Any other line gets
{"event": "approval_error"} and is not run; expiry emits {"event": "approval_expired"} and
refuses the call."""

SERVE_HELP = """MCP over stdio, both the 2025-11-25 handshake and the 2026-07-28 protocol; one run
per process. Every request gets a result or a JSON-RPC error (-32700 for a line that is not
JSON, -32600 for JSON that is not a request). Tool data rides in _meta["livetools/data"];
the content is the text. ask_user is offered to clients that declare form elicitation.
--approve ask asks for each write/exec call through the same elicitation (Allow / Deny /
Allow this tool for the rest of the run); a client that cannot elicit gets a refusal."""

TOOLS_HELP = """--serve lists exactly what `livetools serve` offers a client that elicits (adds
write, edit and ask_user); `livetools tools --serve --vibe --format mcp | wc -c` is the size
of the whole agent surface."""


RESIDENT_HELP = """A resident run is one run kept open for a root and its options (the same options
`call` takes), served on a Unix socket; `livetools call` with the same root, surface, options
and environment is answered by it (same output and exit code), warm: parsed trees stay cached
(edits are seen), language servers stay up. Anything else runs in-process as before, and so
does every call when LIVETOOLS_RESIDENT=0. A resident exits after --idle-ttl seconds without
calls (default 600), on `resident stop` or SIGTERM, closing its run (servers, workers).
Files: $XDG_RUNTIME_DIR/livetools, else ~/.cache/livetools/resident (0700, sockets 0600, only
this user's processes are answered). After upgrading or editing livetools, stop residents."""


def versions() -> str:
    """`livetools X.Y.Z`, then one line per installed family plugin (its distribution)."""
    from ..hooks.entrypoints import entry_points

    try:
        from importlib.metadata import version

        lines = [f"livetools {version('livetools')}"]
    except Exception:  # not installed as a distribution (a bare checkout on sys.path)
        lines = ["livetools (version unknown: not installed)"]
    seen: set[str] = set()
    for ep in sorted(entry_points("livetools"), key=lambda e: e.distribution):
        if ep.distribution not in seen:
            seen.add(ep.distribution)
            lines.append(f"{ep.distribution} {ep.version} (plugin {ep.name})")
    return "\n".join(lines)


class _Version(argparse.Action):
    """--version, worked out only when asked (metadata is not read on every start)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help=kwargs.get("help"))

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(versions())
        parser.exit(0)


def parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    top = argparse.ArgumentParser(
        prog="livetools",
        description="Tools bound to live resources of one agent run.",
        epilog=f"{EXIT_CODES}\n\n{SURFACES}",
        formatter_class=raw,
    )
    top.add_argument(
        "--version", action=_Version, help="print the versions of livetools and its plugins"
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, epilog: str = "") -> argparse.ArgumentParser:
        text = "\n\n".join(part for part in (epilog, EXIT_CODES) if part)
        return sub.add_parser(name, help=help, description=help, epilog=text, formatter_class=raw)

    def common(p: argparse.ArgumentParser, surface: bool = True, vibe: bool = True) -> None:
        p.add_argument("--root", default=".", help="project root of the run (default: .)")
        if surface:
            p.add_argument(
                "--surface",
                help="agent | plan | readonly | tiers with exclusions (read,exec,-lsp_rename)",
            )
        if vibe:
            p.add_argument("--vibe", action="store_true", help="turn vibe mode on for the run")
        p.add_argument(
            "--option",
            action="append",
            metavar="KEY=VALUE",
            help="a run option, e.g. debug_ttl=60 (repeatable; see below)",
        )
        box = p.add_mutually_exclusive_group()
        box.add_argument(
            "--sandbox",
            choices=["bwrap", "none"],
            help="start every server, adapter, kernel and worker inside a sandbox: bwrap = "
            "bubblewrap, the root at /workspace, no network (see docs/sandbox.md)",
        )
        box.add_argument(
            "--sandbox-wrap",
            metavar="PREFIX",
            help="any launcher that runs a command inside with stdio piped, e.g. "
            "'docker exec -i box' (processes start as PREFIX sh -c 'cd DIR && exec ARGV')",
        )
        p.add_argument(
            "--sandbox-root",
            metavar="PATH",
            help="where the root is inside the sandbox (default: /workspace for bwrap, the "
            "same path for --sandbox-wrap)",
        )

    def approve_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--approve",
            choices=["allow", "deny", "ask"],
            help="write/exec calls: allow (default), deny, or ask the human (fails closed)",
        )

    p = command("status", "which families are live, and for each server why or why not", OPTIONS)
    common(p, surface=False)
    p.add_argument("--json", action="store_true", help="the full report as one JSON object")

    p = command("tools", "the tool schemas of a surface", f"{TOOLS_HELP}\n\n{SURFACES}")
    common(p)
    p.add_argument("--format", choices=["text", *FORMATS], default="text")
    p.add_argument("--serve", action="store_true", help="the tools serve offers (see below)")

    p = command(
        "call",
        "one tool call in a fresh run (or in a matching resident run: see `resident`)",
        f"{CALL_HELP}\n\n{SURFACES}\n\n{OPTIONS}",
    )
    p.add_argument("tool")
    p.add_argument("args", nargs="?", metavar="ARGS_JSON")
    common(p)
    p.add_argument("--json", action="store_true", help="print the result object (see below)")
    approve_flag(p)

    p = command("session", "one run, JSON lines on stdin/stdout", f"{SESSION_HELP}\n\n{OPTIONS}")
    common(p)
    approve_flag(p)

    p = command(
        "serve", "an MCP server over stdio, one run per process", f"{SERVE_HELP}\n\n{OPTIONS}"
    )
    common(p)
    from .mcp.http import command as http_command

    http_command.add_arguments(p)
    p.epilog = f"{p.epilog}\n\n{http_command.HELP}"
    approve_flag(p)

    p = command("resident", "keep a run open for `call`s: start, stop, list", RESIDENT_HELP)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser(
        "start",
        help="start a resident run for a root and run options (as `call` takes them)",
        description=RESIDENT_HELP,
        formatter_class=raw,
    )
    common(start)
    start.add_argument(
        "--approve", choices=["allow", "deny"], help="write/exec calls: allow (default) or deny"
    )
    start.add_argument(
        "--idle-ttl",
        type=float,
        default=keys.DEFAULT_TTL,
        metavar="SECONDS",
        help="exit after this long without a call (default: %(default)g)",
    )
    stop = actions.add_parser("stop", help="stop the residents of a root (any options), or all")
    which = stop.add_mutually_exclusive_group()
    which.add_argument("--root", default=".", help="the root whose residents stop (default: .)")
    which.add_argument("--all", action="store_true", help="every resident of this user")
    listing = actions.add_parser("list", help="root, surface, pid, idle seconds, calls")
    listing.add_argument("--json", action="store_true", help="one JSON object per resident")
    return top


COMMANDS = {"status": cmd_status, "tools": cmd_tools, "call": cmd_call, "session": cmd_session}


def _harden_stdio() -> None:
    """Decoding and encoding on the standard streams can never raise: undecodable input
    becomes U+FFFD (instead of looking like end of input), unencodable output is escaped."""
    for stream, errors in ((sys.stdin, "replace"), (sys.stdout, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors=errors)


def _quiet_broken_pipe() -> int:
    """The reader went away: point stdout at /dev/null so the final flush cannot complain."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 141


def main(argv: list[str] | None = None) -> int:
    _harden_stdio()
    try:
        args = parser().parse_args(argv)
        if args.command == "serve":
            if args.http:  # its runs open later (POST /runs): check the options now
                _host(with_harness=True).check_options(_options(args))
            return cmd_serve(args)
        if args.command == "resident":
            from .resident import control

            if args.action == "start":  # refused here, not in a detached process's log
                _host().check_options(_options(args))
            return control.main(args, _options, _root)
        code = asyncio.run(COMMANDS[args.command](args))
        sys.stdout.flush()  # here, where a closed pipe is caught, not at interpreter exit
        return code
    except (UsageError, SandboxOptionError, OptionError) as exc:
        print(f"livetools: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
