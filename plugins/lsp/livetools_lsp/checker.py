"""`lsp diagnostics file="*"`: the project checker of each server spec usable in this checkout
(basedpyright/pyright CLI, tsc --noEmit, go vet, clangd --check, ...), run in its root with a
bound, its output capped with the end kept (where the summary is) and the cut flagged in the data.
A checker whose root lacks what it needs is skipped, saying so; the project's own node_modules
binary wins over a global one; clangd --check is read for its diagnostics, not its exit code."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livetools import Result, ToolError, cap_text, relpath
from livetools.procs import ProcessStartError
from livetools.sandbox import Sandbox, spawn

from .spec import ServerSpec
from .subprojects import SKIP_DIRS
from .workspaces import go_work_uses, js_members

if TYPE_CHECKING:
    from .supervisor import Supervisor

CHECK_TIMEOUT = 90.0
OUTPUT_CAP = 6000
PER_FILE_LIMIT = 20


SOLUTION_COPY_FILES = 20_000  # a larger solution is checked in place by its LSP, not copied


def is_solution(root: Path) -> bool:
    """A tsconfig.json with `references` and nothing of its own to check (`"files": []`)."""
    from .workspaces import _jsonc, _read

    data = _read(root / "tsconfig.json", _jsonc)
    return (
        isinstance(data, dict)
        and bool(data.get("references"))
        and data.get("files") == []
        and not data.get("include")
    )


def solution_copy(root: Path) -> Path | None:
    """The solution's files in a scratch folder (node_modules linked, not copied), or None
    when it is too large to copy."""
    count = 0
    for _, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        count += len(names)
        if count > SOLUTION_COPY_FILES:
            return None
    target = Path(tempfile.mkdtemp(prefix="livetools-tsb-")) / root.name
    patterns = shutil.ignore_patterns(*SKIP_DIRS, ".*", "*.tsbuildinfo")

    def skip(folder: str, names: list[str]) -> set[str]:
        special = {n for n in names if _special(os.path.join(folder, n))}  # a FIFO would block
        return set(patterns(folder, names)) | special

    shutil.copytree(root, target, ignore=skip, symlinks=True)
    modules = root / "node_modules"
    if modules.is_dir():
        (target / "node_modules").symlink_to(modules)
    return target


def _special(path: str) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return True
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _has_files(root: Path, spec: ServerSpec) -> bool:
    """Whether `root` holds a file the spec serves (bounded): a checker for a language the
    checkout does not have only says "no files" (a server with no root marker is usable
    anywhere)."""
    seen = 0
    deadline = time.monotonic() + 1.0
    for _folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for name in names:
            if spec.serves(name):
                return True
            seen += 1
            if seen > 50_000 or time.monotonic() > deadline:
                return True  # not known: let the checker say
    return False


def _files(root: Path, spec: ServerSpec) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            if spec.serves(name):
                found.append(Path(folder) / name)
                if len(found) > PER_FILE_LIMIT:
                    return found
    return found


async def _run(
    argv: list[str], cwd: Path, bound: float, sandbox: Sandbox | None = None
) -> tuple[int | None, str]:
    child = await spawn(sandbox, argv, cwd=cwd, stdin=False, merge_stderr=True)
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


def _local_binary(name: str, root: Path, top: Path) -> str | None:
    """The project's own copy (`node_modules/.bin/tsc`), from the checker's root up to the run
    root: it is the version the project builds with, a global one may be another major."""
    folder = root
    while True:
        candidate = folder / "node_modules" / ".bin" / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
        if folder == top or folder == folder.parent or not folder.is_relative_to(top):
            return None
        folder = folder.parent


# clangd --check logs each error diagnostic as `E[time] [code] Line N: message`; its other E
# lines are its own self-test at every token ("tweak: X ==> FAIL"), which also make it exit 3.
_CLANGD_DIAG = re.compile(r"^E\[[^\]]*\] \[([^\]]*)\] Line (\d+): (.*)$")
_CLANGD_TWEAK = re.compile(r"tweak: \S+ ==> FAIL")


@dataclass
class _Reading:
    """One checker run as the model reads it."""

    lines: list[str]
    errors: int | None = None  # None: the checker does not say; the exit code is the verdict
    note: str = ""


def _read_clangd(rel: str, code: int | None, output: str) -> _Reading:
    lines: list[str] = []
    tweaks = 0
    other: list[str] = []
    for line in output.splitlines():
        match = _CLANGD_DIAG.match(line)
        if match:
            lines.append(f"{rel}:{match.group(2)}: error [{match.group(1)}]: {match.group(3)}")
        elif _CLANGD_TWEAK.search(line):
            tweaks += 1
        elif line.startswith("E["):
            other.append(line.split("] ", 1)[-1])
    reading = _Reading(lines, len(lines))
    if tweaks:
        reading.note = f"{rel}: {tweaks} clangd self-test failures (not code errors)"
    if code not in (0, 3, None) and not lines:
        # Not a verdict on the code: clangd could not check the file at all.
        reading.lines = [f"{rel}: clangd --check exit {code}: " + "; ".join(other[-3:])]
        reading.errors = None
    return reading


def _reader(spec: ServerSpec) -> Any:
    return _read_clangd if Path(spec.checker[0] if spec.checker else "").name == "clangd" else None


async def run_checkers(sup: Supervisor) -> Result:
    covered: set[str] = set()
    sections: list[str] = []
    data: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CHECK_TIMEOUT
    for spec in sup.specs:
        # A linter's checker runs beside its language's (ruff check beside basedpyright).
        if spec.checker is None or (not spec.linter and covered.intersection(spec.extensions)):
            continue
        start = sup._marker_dir(spec)
        verdict = await sup.verdict(spec, start)
        if verdict.reason is not None or verdict.root is None:
            continue
        root = verdict.root
        if not spec.markers and not await asyncio.to_thread(_has_files, root, spec):
            continue
        local = _local_binary(spec.checker[0], root, sup.root)
        binary = local or await sup.binary(spec.checker[0], verdict.binary)
        if binary is None:
            continue
        if not spec.linter:
            covered.update(spec.extensions)
        where = relpath(sup.root, root)
        shown = " ".join(spec.checker)
        members: list[Path] = []
        if spec.checker_requires and not any((root / n).exists() for n in spec.checker_requires):
            # A yarn/npm/pnpm workspace without a solution: each member's own project.
            members = [
                m
                for m in await asyncio.to_thread(js_members, root)
                if any((m / n).exists() for n in spec.checker_requires)
            ]
            if not members or Path(spec.checker[0]).name != "tsc":
                wanted = " or ".join(spec.checker_requires)
                sections.append(f"$ {shown} (in {where}): skipped, no {wanted} there")
                data.append({"checker": shown, "root": where, "skipped": f"no {wanted}"})
                continue
        if local:
            shown += f" ({relpath(sup.root, Path(local))})"
        argvs: list[tuple[str, list[str]]] = []
        scratch: Path | None = None
        # (A sandboxed checker sees no host scratch folder: it checks in place, as before.)
        if Path(spec.checker[0]).name == "tsc" and sup.sandbox is None and is_solution(root):
            # `tsc --noEmit` on a solution checks its empty `files` and says clean; `tsc -b`
            # checks every referenced project but writes their outputs: in a copy, not here.
            scratch = await asyncio.to_thread(solution_copy, root)
        if scratch is not None:
            note = " (a solution: tsc -b in a scratch copy)"
            shown = "tsc -b --pretty false"
            if local:
                shown += f" ({relpath(sup.root, Path(local))})"
            argvs.append((where, [binary, "-b", "--pretty", "false"]))
        elif members:
            note = f" (each of {len(members)} workspace members)"
            for member in members[:PER_FILE_LIMIT]:
                rel = member.relative_to(root).as_posix()
                argvs.append((rel, [binary, *spec.checker[1:], "-p", rel]))
        elif "./..." in spec.checker and (uses := go_work_uses(root)):
            # go refuses ./... at a go.work root ("directory prefix . does not contain modules
            # listed in go.work"): one pattern per module it uses.
            note = f" ({len(uses)} go.work modules)"
            patterns = [f"{u.rstrip('/')}/..." for u in uses]
            argv = [binary]
            for part in spec.checker[1:]:
                argv += patterns if part == "./..." else [part]
            argvs.append((where, argv))
        elif any("{file}" in part for part in spec.checker):
            files = _files(root, spec)
            if not files:
                continue
            note = f" (first {PER_FILE_LIMIT} files)" if len(files) > PER_FILE_LIMIT else ""
            for path in files[:PER_FILE_LIMIT]:
                rel = path.relative_to(root).as_posix()
                argv = [binary, *(p.replace("{file}", rel) for p in spec.checker[1:])]
                argvs.append((rel, argv))
        else:
            note = ""
            argvs.append((where, [binary, *spec.checker[1:]]))
        reader = _reader(spec)
        outputs: list[str] = []
        notes: list[str] = []
        codes: list[int | None] = []
        errors: int | None = 0 if reader else None
        for rel, argv in argvs:
            remaining = deadline - loop.time()
            if remaining <= 0:
                outputs.append("(stopped: the project check ran out of time)")
                break
            try:
                code, output = await _run(argv, scratch or root, remaining, sup.sandbox)
            except ProcessStartError as exc:
                code, output = -1, str(exc)
            if reader is None:
                codes.append(code)
                if output.strip():
                    outputs.append(output.strip())
                continue
            reading = reader(rel, code, output)
            outputs.extend(reading.lines)
            if reading.note:
                notes.append(reading.note)
            if code is None:
                codes.append(None)
            elif reading.errors is None:
                codes.append(code)
            else:
                assert errors is not None
                errors += reading.errors
                codes.append(1 if reading.errors else 0)
        worst = max((c for c in codes if c is not None), default=None)
        if None in codes:
            verdict_text = "timed out"
        elif errors:
            verdict_text = f"{errors} errors"
        else:
            verdict_text = "clean" if worst == 0 else f"exit {worst}"
        body = "\n".join(outputs + notes)
        paths = sup.sandbox.paths if sup.sandbox is not None else None
        if paths is not None and not paths.identity and paths.inside.parent != paths.inside:
            # A checker inside prints the inside's paths.
            body = body.replace(f"{paths.to_inside(root)}/", "").replace(str(paths.inside), ".")
        if scratch is not None:
            body = body.replace(f"{scratch}{os.sep}", "").replace(str(scratch), ".")
            await asyncio.to_thread(shutil.rmtree, scratch.parent, True)
        body = body.replace(f"{root}{os.sep}", "").replace(str(sup.root), ".")
        text = cap_text(body, OUTPUT_CAP, tail=4000)
        sections.append(f"$ {shown} (in {where}){note}: {verdict_text}\n" + text)
        entry: dict[str, Any] = {"checker": shown, "root": where, "exit": worst}
        if errors is not None:
            entry["errors"] = errors
        entry["output"] = body[-OUTPUT_CAP:]
        if len(body) > OUTPUT_CAP:
            entry["output_truncated"] = f"first {len(body) - OUTPUT_CAP} of {len(body)} chars cut"
        data.append(entry)
    if not sections:
        raise ToolError(
            "no project checker is usable in this checkout (no server spec with a checker has "
            "its root marker and binary here); see lsp status"
        )
    return Result("\n\n".join(sections), {"checks": data})
