"""Kernels installed as Jupyter kernelspecs: the project's own venv first, then the Jupyter data
paths (the host's prefix, the user's, the system's). Each becomes a language of `eval` unless a
plugin already serves that language; every one left out keeps its reason for `status`.

Only the kernelspec files are read here (cheap, no jupyter_client); the kernel starts at its
first cell like the built-ins."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from livetools.files import read_text_sync

from .hookspecs import KernelSpec, KernelUnavailable

MAX_INSTALLED = 8  # each one is a word of the tool's schema
UNTRUSTED = "the project's own kernelspec, not started (trust_project_config = false)"


def kernel_dirs(root: Path) -> list[Path]:
    dirs = [root / venv / "share" / "jupyter" / "kernels" for venv in (".venv", "venv")]
    try:
        from jupyter_core.paths import jupyter_path

        dirs += [Path(d) for d in jupyter_path("kernels")]
    except ImportError:
        dirs += [Path(sys.prefix) / "share" / "jupyter" / "kernels"]
    return list(dict.fromkeys(dirs))


def installed_kernels(
    root: Path, taken: set[str], trusted: bool = True
) -> tuple[list[KernelSpec], dict[str, str]]:
    """Specs for the kernelspecs found (keyed by language, else by kernelspec name when the
    language is taken), and name → why for those left out. Untrusted (`trust_project_config =
    false`): a kernelspec inside the root is the checkout's own command, and is left out."""
    specs: list[KernelSpec] = []
    skipped: dict[str, str] = {}
    seen: set[str] = set()
    inside = root.resolve()
    for folder in kernel_dirs(root):
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            name = entry.name.lower()
            if name in seen or not (entry / "kernel.json").is_file():
                continue
            seen.add(name)
            if not trusted and entry.resolve().is_relative_to(inside):
                skipped[name] = f"{UNTRUSTED} ({entry.relative_to(root)})"
                continue
            why = _why_not(entry, root)
            if isinstance(why, str):
                skipped[name] = why
                continue
            language = str(why.get("language") or name).lower()
            key = language if language not in taken else name
            if key in taken:
                skipped[name] = f"language {language!r} is already served by another kernel"
            elif len(specs) >= MAX_INSTALLED:
                skipped[name] = f"more than {MAX_INSTALLED} installed kernels; this one is left out"
            else:
                taken.add(key)
                specs.append(_spec(key, name, entry, why))
    return specs, skipped


def _why_not(entry: Path, root: Path) -> dict[str, Any] | str:
    try:
        spec = json.loads(read_text_sync(entry / "kernel.json"))
    except (OSError, ValueError) as exc:
        return f"unreadable kernel.json: {exc}"
    argv = spec.get("argv") if isinstance(spec, dict) else None
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        return "kernel.json has no argv list"
    if _is_ipykernel(argv) and _same_python(argv[0]):
        return "the built-in python kernel (same interpreter, ipykernel)"
    return spec


def _is_ipykernel(argv: list[str]) -> bool:
    return any(a in ("ipykernel_launcher", "ipykernel") for a in argv[1:3])


def _same_python(program: str) -> bool:
    found = shutil.which(program)
    return found is not None and os.path.realpath(found) == os.path.realpath(sys.executable)


def _spec(key: str, name: str, entry: Path, spec: dict[str, Any]) -> KernelSpec:
    argv = [a.replace("{resource_dir}", str(entry)) for a in spec["argv"]]
    env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
    ipython = _is_ipykernel(argv) and str(spec.get("language", "")).lower() == "python"
    language = str(spec.get("language") or name).lower()
    mode = "message" if spec.get("interrupt_mode") == "message" else "signal"
    return KernelSpec(
        language=key,
        name=name,
        argv=_locate(argv, entry),
        dialect="ipython" if ipython else "none",
        transport="tcp",  # any kernel speaks TCP; unix sockets only where known to work
        interrupt_mode=mode,
        env=env,
        helpers=None if ipython else helpers_for(language),
        origin=str(entry),
    )


def _locate(argv: list[str], entry: Path) -> Callable[[], list[str]]:
    def command() -> list[str]:
        if shutil.which(argv[0]) is None:
            raise KernelUnavailable(
                f"{argv[0]} not found (on PATH) for the kernelspec {entry}; install it or fix "
                "the kernelspec's argv"
            )
        return argv

    return command


NO_STDIN = "this kernel has no stdin channel, so a cell cannot call the run's tools"


def helpers_for(language: str) -> str | None:
    """The silent cell that defines `tool()` for a language we know: the bridge where the
    kernel turns input into an input_request, else a `tool` that says it cannot work."""
    side = resources.files("livetools_eval") / "kernel_side"
    if language == "r":
        return (side / "r_helpers.R").read_text()
    if language == "bash":
        return f'tool() {{ echo "tool: {NO_STDIN}; call it from a python cell" >&2; return 2; }}'
    return None
