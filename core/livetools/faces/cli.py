"""The `livetools` command: status, tools, call, session, serve.

Exit codes of `call`: 0 ok, 1 the tool reported an error, 2 usage error (unknown tool, tool not
on the surface, bad arguments). A worker started by a plan-mode agent inherits the ceiling through
LIVETOOLS_SURFACE, and no `--surface` can lift it."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..host import Host
from ..ports import Ports
from ..run import Run, is_usage_error
from ..schemas import FORMATS
from ..tiers import ENV_WORKER, Surface, inherited_ceiling, parse_surface
from .lines import LineReader
from .question_ports import JsonLinesPort, TerminalPort

WORKER_EXCLUDED = frozenset({"ask_user"})


class UsageError(Exception):
    pass


def resolve_surface(host: Host, requested: str | None) -> Surface:
    """A surface name or spec (`read,exec,-lsp_rename`), capped by the inherited ceiling; a
    worker's surface never offers ask_user."""
    ceiling = inherited_ceiling()
    if requested is None:
        surface = ceiling or host.surfaces["agent"]
    else:
        try:
            surface = parse_surface(requested, host.surfaces)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if ceiling is not None and (
        not surface.tiers <= ceiling.tiers or not ceiling.exclude <= surface.exclude
    ):
        surface = surface.capped_by(ceiling)
    if in_worker() and not surface.exclude >= WORKER_EXCLUDED:
        surface = Surface(surface.name, surface.tiers, surface.exclude | WORKER_EXCLUDED)
    return surface


def in_worker() -> bool:
    return bool(os.environ.get(ENV_WORKER))


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


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {"vibe": True} if getattr(args, "vibe", False) else {}


def _root(args: argparse.Namespace) -> Path:
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    return root


# -- commands --------------------------------------------------------------------------------


async def cmd_tools(args: argparse.Namespace) -> int:
    host = _host()
    surface = resolve_surface(host, args.surface)
    async with host.open_run(_root(args), options=_options(args)) as run:
        tools = run.tools(surface)
        if args.format == "text":
            width = max((len(t.name) for t in tools), default=0)
            for tool in tools:
                print(f"{tool.name:<{width}}  {tool.tier.value:<5}  {tool.description}")
        else:
            from ..schemas import export

            print(json.dumps(export(tools, args.format), separators=(",", ":")))
    return 0


async def cmd_call(args: argparse.Namespace) -> int:
    try:
        call_args = json.loads(args.args) if args.args else {}
    except json.JSONDecodeError as exc:
        raise UsageError(f"ARGS_JSON is not valid JSON: {exc}") from None
    if not isinstance(call_args, dict):
        raise UsageError('ARGS_JSON must be a JSON object, e.g. {"path": "src"}')
    host = _host()
    surface = resolve_surface(host, args.surface)
    ports = _ports(LineReader(sys.stdin), None)
    async with host.open_run(_root(args), ports=ports, options=_options(args)) as run:
        result = await run.call(args.tool, call_args, surface=surface)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(result.text)
        for png in result.images:
            print(f"[image: PNG, {len(png)} bytes; use --json to get it]")
    if is_usage_error(result):
        return 2
    return 1 if result.is_error else 0


async def cmd_session(args: argparse.Namespace) -> int:
    host = _host(with_harness=True)
    surface = resolve_surface(host, args.surface)
    reader = LineReader(sys.stdin)
    ports = _ports(reader, emit_line)
    async with host.open_run(_root(args), ports=ports, options=_options(args)) as run:
        await session_loop(run, surface, reader)
    return 0


def emit_line(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


async def session_loop(run: Run, surface: Surface, reader: LineReader) -> None:
    """JSON lines: `{"tool": NAME, "args": {...}, "id"?: any}` in, the `--json` object out (with
    the same `id` when one was given). A bad line gets an error line, never ends the session.
    While ask_user waits, the next input line is its answer (see question_ports)."""
    while True:
        line = await reader.readline()
        if line is None:
            return
        if not line.strip():
            continue
        request_id, out = None, None
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
                raise ValueError('expected an object like {"tool": "NAME", "args": {...}}')
            request_id = request.get("id")
            call_args = request.get("args", {})
            if not isinstance(call_args, dict):
                raise ValueError('"args" must be an object')
        except ValueError as exc:  # JSONDecodeError is a ValueError
            out = {"ok": False, "text": f"bad input line: {exc}", "data": None, "images": []}
        else:
            result = await run.call(request["tool"], call_args, surface=surface)
            out = result.to_json()
        if request_id is not None:
            out["id"] = request_id
        emit_line(out)


async def cmd_status(args: argparse.Namespace) -> int:
    host = _host()
    async with host.open_run(_root(args), options=_options(args)) as run:
        report = await status_report(host, run)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render_status(report))
    return 0


async def status_report(host: Host, run: Run) -> dict[str, Any]:
    resources = {}
    for key, resource in run.resources.items():
        try:
            resources[key] = await asyncio.wait_for(resource.status(), 30)
        except Exception as exc:
            resources[key] = {"error": f"{type(exc).__name__}: {exc}"}
    tools = run.tools("agent")
    return {
        "root": str(run.root),
        "plugins": [
            {
                "name": p.name,
                "distribution": p.distribution,
                "version": p.version,
                "tools": [t.name for t in tools if t.plugin == p.name],
            }
            for p in host.plugins.loaded
        ],
        "failed": [{"name": f.name, "error": f.error} for f in host.plugins.failures],
        "blocked": sorted(set(host.plugins.blocked)),
        "resources": resources,
        "problems": run.problems,
    }


def render_status(report: dict[str, Any]) -> str:
    lines = [f"root: {report['root']}", "plugins:"]
    for p in report["plugins"]:
        tools = ", ".join(p["tools"]) or "no tools for this run"
        lines.append(
            f"  {p['name']} ({p['distribution'] or 'local'} {p['version'] or ''}): {tools}"
        )
    for f in report["failed"]:
        lines.append(f"  {f['name']}: FAILED: {f['error']}")
    for name in report["blocked"]:
        lines.append(f"  {name}: blocked by environment")
    if report["resources"]:
        lines.append("resources:")
        for key, info in report["resources"].items():
            detail = json.dumps(info, default=str) if info else "connected"
            lines.append(f"  {key}: {detail}")
    for problem in report["problems"]:
        lines.append(f"problem: {problem}")
    return "\n".join(lines)


def cmd_serve(args: argparse.Namespace) -> int:
    from .mcp_server import main as serve

    return serve(_root(args), args.surface, _options(args))


# -- parsing ---------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="livetools", description="Tools bound to live resources of one agent run."
    )
    sub = top.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, surface: bool = True, vibe: bool = True) -> None:
        p.add_argument("--root", default=".", help="project root of the run (default: .)")
        if surface:
            p.add_argument(
                "--surface",
                help="agent | plan | readonly | a comma list of tiers (read,write,exec)",
            )
        if vibe:
            p.add_argument("--vibe", action="store_true", help="turn vibe mode on for the run")

    p = sub.add_parser("status", help="which families are live and why not")
    common(p, surface=False)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("tools", help="the tool schemas of a surface")
    common(p)
    p.add_argument("--format", choices=["text", *FORMATS], default="text")

    p = sub.add_parser("call", help="one tool call in a fresh run")
    p.add_argument("tool")
    p.add_argument("args", nargs="?", metavar="ARGS_JSON")
    common(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("session", help="one run, JSON lines on stdin/stdout")
    common(p)

    p = sub.add_parser("serve", help="an MCP server over stdio, one run per process")
    common(p)
    return top


COMMANDS = {"status": cmd_status, "tools": cmd_tools, "call": cmd_call, "session": cmd_session}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "serve":
            return cmd_serve(args)
        return asyncio.run(COMMANDS[args.command](args))
    except UsageError as exc:
        print(f"livetools: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
