"""The topmost project that includes a folder: a server's root for a file in a multi-project
repository.

One server per nearest project marker saw only its sub-project: in a TypeScript solution (a root
`tsconfig.json` with `"files": []` and `references`), references from `animals/` missed `zoo/`,
and a rename of a `core/` export changed `core/` alone, so `tsc -b` failed. A folder is lifted to
an ancestor that declares it a member: a solution tsconfig whose references reach it, an
npm/yarn workspace (`workspaces` in package.json) or a pnpm one (`pnpm-workspace.yaml`),
`go.work`'s `use`, a Cargo `[workspace]`'s members, a uv workspace's members. A nested project
nobody declares keeps its own server. Reads are bounded and cached by modification time.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

MAX_REFERENCES = 200  # tsconfig files followed through `references` from one solution
_cache: dict[Path, tuple[int, Any]] = {}


def _read(path: Path, parse: Any) -> Any:
    """`parse(text)` of a small file, cached by mtime; None when absent, large or unreadable."""
    try:
        st = path.stat()
    except OSError:
        return None
    hit = _cache.get(path)
    if hit is not None and hit[0] == st.st_mtime_ns:
        return hit[1]
    value = None
    if st.st_size <= 1 << 20:
        try:
            value = parse(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError, tomllib.TOMLDecodeError):
            value = None
    if len(_cache) > 512:
        _cache.clear()
    _cache[path] = (st.st_mtime_ns, value)
    return value


_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _jsonc(text: str) -> Any:
    """tsconfig.json is JSON with comments and trailing commas."""
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return json.loads(_TRAILING_COMMA.sub(r"\1", text))


def _referenced(solution: Path) -> set[Path]:
    """Folders of every tsconfig reached through `references` from `solution` (a tsconfig)."""
    seen: set[Path] = set()
    queue = [solution]
    while queue and len(seen) < MAX_REFERENCES:
        config = queue.pop()
        data = _read(config, _jsonc)
        refs = data.get("references") if isinstance(data, dict) else None
        for ref in refs if isinstance(refs, list) else []:
            target = ref.get("path") if isinstance(ref, dict) else None
            if not isinstance(target, str):
                continue
            path = Path(os.path.normpath(config.parent / target))
            if path.suffix != ".json":
                path = path / "tsconfig.json"
            if path.parent not in seen:
                seen.add(path.parent)
                queue.append(path)
    return seen


def _members(folder: Path, patterns: Any, member: Path) -> bool:
    """Whether `member` (under `folder`) matches one of the workspace globs."""
    if not isinstance(patterns, list):
        return False
    try:
        rel = member.relative_to(folder).as_posix()
    except ValueError:
        return False
    included = False
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            continue
        negated = pattern.startswith("!")
        glob = pattern.lstrip("!").strip().removeprefix("./").rstrip("/")
        if fnmatchcase(rel, glob) or (glob.endswith("/**") and rel.startswith(glob[:-3] + "/")):
            included = not negated
    return included


def _pnpm(text: str) -> list[str]:
    """`packages:` of pnpm-workspace.yaml (a list of quoted or bare globs), without a YAML
    parser: the file is that one list in practice."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if re.match(r"^packages\s*:", line):
            inside = True
            continue
        if inside:
            item = re.match(r"^\s+-\s*['\"]?([^'\"#]+?)['\"]?\s*(#.*)?$", line)
            if item:
                out.append(item.group(1))
            elif line.strip() and not line.startswith((" ", "\t", "#")):
                break
    return out


def _go_work(text: str) -> list[str]:
    uses: list[str] = []
    for block in re.findall(r"^use\s*\(([^)]*)\)", text, re.M):
        uses += [w.split("//")[0].strip() for w in block.splitlines()]
    uses += [m.split("//")[0].strip() for m in re.findall(r"^use\s+([^\s(][^\n]*)$", text, re.M)]
    return [u.strip('"') for u in uses if u]


def declares(folder: Path, member: Path) -> str | None:
    """What in `folder` declares `member` part of its project, or None."""
    tsconfig = folder / "tsconfig.json"
    if tsconfig.is_file() and member in _referenced(tsconfig):
        return "tsconfig.json references"
    package = _read(folder / "package.json", json.loads)
    if isinstance(package, dict):
        spaces = package.get("workspaces")
        if isinstance(spaces, dict):
            spaces = spaces.get("packages")
        if _members(folder, spaces, member):
            return "package.json workspaces"
    if _members(folder, _read(folder / "pnpm-workspace.yaml", _pnpm), member):
        return "pnpm-workspace.yaml"
    uses = _read(folder / "go.work", _go_work)
    if uses and any(Path(os.path.normpath(folder / u)) == member for u in uses):
        return "go.work"
    cargo = _read(folder / "Cargo.toml", tomllib.loads)
    if isinstance(cargo, dict) and _members(
        folder, (cargo.get("workspace") or {}).get("members"), member
    ):
        return "Cargo.toml [workspace]"
    pyproject = _read(folder / "pyproject.toml", tomllib.loads)
    if isinstance(pyproject, dict):
        uv = ((pyproject.get("tool") or {}).get("uv") or {}).get("workspace") or {}
        if isinstance(uv, dict) and _members(folder, uv.get("members"), member):
            return "pyproject.toml [tool.uv.workspace]"
    return None


def topmost(nearest: Path, run_root: Path) -> Path:
    """`nearest` lifted to the highest ancestor (up to the run root) that declares it, or one
    of its own lifts, a member."""
    current = nearest
    folder = nearest
    while folder != run_root and folder.is_relative_to(run_root):
        folder = folder.parent
        if declares(folder, current):
            current = folder
    return current


def go_work_uses(folder: Path) -> list[str]:
    """The `use` folders of `folder`'s go.work, relative ("./cobra"); empty without one."""
    return [u if u.startswith(".") else f"./{u}" for u in _read(folder / "go.work", _go_work) or []]


def js_members(folder: Path, limit: int = 50) -> list[Path]:
    """The member folders an npm/yarn `workspaces` or a pnpm-workspace.yaml declares, found by
    their globs (one level of `*` or `**` below a literal prefix), at most `limit`."""
    package = _read(folder / "package.json", json.loads)
    spaces = package.get("workspaces") if isinstance(package, dict) else None
    if isinstance(spaces, dict):
        spaces = spaces.get("packages")
    patterns = [p for p in (spaces or []) if isinstance(p, str)]
    patterns += _read(folder / "pnpm-workspace.yaml", _pnpm) or []
    found: list[Path] = []
    for pattern in patterns:
        if pattern.startswith("!"):
            continue
        glob = pattern.strip().removeprefix("./").rstrip("/").replace("**", "*")
        for candidate in sorted(folder.glob(glob)):
            if candidate.is_dir() and _members(folder, patterns, candidate):
                found.append(candidate)
    return list(dict.fromkeys(found))[:limit]
