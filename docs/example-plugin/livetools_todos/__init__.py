"""livetools-todos: a complete third-party livetools plugin in one module.

It connects a resource only when the run's root is a git checkout (so elsewhere the tool does not
exist at all), registers one read-tier tool, and observes writes to say when a write added TODOs.
"""

from __future__ import annotations

import re
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from livetools import (
    CallContext,
    Resource,
    Result,
    Tier,
    Tool,
    cap_items,
    hookimpl,
    relpath,
    resolve_path,
)

MARKER = re.compile(r"\b(TODO|FIXME|XXX)\b[:\s]*(.*)")
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__"}


class Todos(Resource):
    """Per-run state would live here; this plugin only needs to exist to gate its tool."""

    key = "todos"

    def __init__(self, root: Path) -> None:
        self.root = root

    async def status(self) -> dict[str, Any]:
        return {"usable": True, "root": str(self.root)}


class TodosArgs(BaseModel):
    path: str = Field(".", description="File or directory relative to the project root.")
    max_results: int = Field(50, ge=1, le=500)


def scan(file: Path) -> list[tuple[int, str, str]]:
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return []
    return [
        (number, m.group(1), m.group(2).strip())
        for number, line in enumerate(lines, start=1)
        if (m := MARKER.search(line))
    ]


def files_under(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and not SKIP_DIRS.intersection(p.parts))


async def todos(ctx: CallContext, args: TodosArgs) -> Result:
    # resolve_path raises PathError (a ToolError) for paths outside the root: the host turns it
    # into an error result the model can act on.
    base = resolve_path(ctx.run.root, args.path, must_exist=True)
    found = [
        {"path": relpath(ctx.run.root, f), "line": n, "kind": kind, "text": text}
        for f in files_under(base)
        for n, kind, text in scan(f)
    ]
    if not found:
        return Result(text=f"no TODO/FIXME/XXX under {args.path}", data={"todos": []})
    kept, note = cap_items(found, args.max_results)
    lines = [f"{t['path']}:{t['line']}: {t['kind']} {t['text']}" for t in kept]
    return Result(text="\n".join(lines + ([note] if note else [])), data={"todos": kept})


@hookimpl
def livetools_resources(run: Any) -> Resource | None:
    return Todos(run.root) if (run.root / ".git").exists() else None


@hookimpl
def livetools_register_tools(register: Any) -> None:
    register(
        Tool(
            name="todos",
            tier=Tier.READ,
            args=TodosArgs,
            handler=todos,
            description="List TODO/FIXME/XXX comments (path:line: text).",
            resource="todos",
        )
    )


@hookimpl
def livetools_observe_write(run: Any, paths: list[Path], notes: list[str]) -> Any:
    if run.resource("todos") is None:
        return None

    @asynccontextmanager
    async def observe() -> Any:
        before = {p: len(scan(p)) for p in paths}
        yield
        for p in paths:
            added = len(scan(p)) - before[p]
            if added > 0:
                notes.append(f"todos: this write added {added} TODO(s) to {relpath(run.root, p)}")

    return observe()
