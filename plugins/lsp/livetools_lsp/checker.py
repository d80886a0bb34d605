"""`lsp diagnostics file="*"`: the project checker of each server spec usable in this checkout
(basedpyright/pyright CLI, tsc --noEmit, go vet, clangd --check, ...), run in its root with a
bound, its output capped with the end kept (where the summary is)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from livetools import Result, ToolError, cap_text, relpath
from livetools.procs import ChildProcess, ProcessStartError

from .spec import ServerSpec
from .supervisor import _SKIP_DIRS, _resolve_binary

if TYPE_CHECKING:
    from .supervisor import Supervisor

CHECK_TIMEOUT = 90.0
OUTPUT_CAP = 6000
PER_FILE_LIMIT = 20


def _files(root: Path, spec: ServerSpec) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if Path(name).suffix in spec.extensions:
                found.append(Path(folder) / name)
                if len(found) > PER_FILE_LIMIT:
                    return found
    return found


async def _run(argv: list[str], cwd: Path, bound: float) -> tuple[int | None, str]:
    child = await ChildProcess.start(argv, cwd=cwd, stdin=False, merge_stderr=True)
    assert child.stdout is not None
    chunks: list[bytes] = []
    size = 0

    async def collect() -> None:
        nonlocal size
        assert child.stdout is not None
        while chunk := await child.stdout.read(65536):
            if size < 4 * 1024 * 1024:
                chunks.append(chunk)
                size += len(chunk)

    reading = asyncio.get_running_loop().create_task(collect())
    try:
        code = await child.wait(bound)
        await asyncio.wait({reading}, timeout=1.0)
    finally:
        reading.cancel()
        await child.aclose(grace=0)
    return code, b"".join(chunks).decode("utf-8", "replace")


async def run_checkers(sup: Supervisor) -> Result:
    covered: set[str] = set()
    sections: list[str] = []
    data = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CHECK_TIMEOUT
    for spec in sup.specs:
        if spec.checker is None or covered.intersection(spec.extensions):
            continue
        start = sup._marker_dir(spec)
        verdict = await sup.verdict(spec, start)
        if verdict.reason is not None or verdict.root is None:
            continue
        binary = _resolve_binary(spec.checker[0], verdict.binary)
        if binary is None:
            continue
        covered.update(spec.extensions)
        root = verdict.root
        argvs: list[list[str]] = []
        if any("{file}" in part for part in spec.checker):
            files = _files(root, spec)
            if not files:
                continue
            note = f" (first {PER_FILE_LIMIT} files)" if len(files) > PER_FILE_LIMIT else ""
            for path in files[:PER_FILE_LIMIT]:
                rel = path.relative_to(root).as_posix()
                argvs.append([binary, *(p.replace("{file}", rel) for p in spec.checker[1:])])
        else:
            note = ""
            argvs.append([binary, *spec.checker[1:]])
        outputs, codes = [], []
        for argv in argvs:
            remaining = deadline - loop.time()
            if remaining <= 0:
                outputs.append("(stopped: the project check ran out of time)")
                break
            try:
                code, output = await _run(argv, root, remaining)
            except ProcessStartError as exc:
                code, output = -1, str(exc)
            codes.append(code)
            if output.strip():
                outputs.append(output.strip())
        shown = " ".join(spec.checker)
        where = relpath(sup.root, root)
        worst = max((c for c in codes if c is not None), default=None)
        verdict_text = (
            "timed out" if None in codes else ("clean" if worst == 0 else f"exit {worst}")
        )
        body = "\n".join(outputs).replace(f"{root}{os.sep}", "").replace(str(sup.root), ".")
        sections.append(
            f"$ {shown} (in {where}){note}: {verdict_text}\n"
            + cap_text(body, OUTPUT_CAP, tail=4000)
        )
        data.append({"checker": shown, "root": where, "exit": worst, "output": body[-OUTPUT_CAP:]})
    if not sections:
        raise ToolError(
            "no project checker is usable in this checkout (no server spec with a checker has "
            "its root marker and binary here); see lsp status"
        )
    return Result("\n\n".join(sections), {"checks": data})
