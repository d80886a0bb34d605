"""What the built-in bubblewrap sandbox hides of the host, and what it shows again.

The host's system folders are bound read-only so its interpreters and servers run inside. On
top of that view these are masked with an empty folder: the home folders (`/root`, `/home`, the
current HOME), where credentials and livetools' own state live (the resident's sockets, HTTP
token files, the probe cache); `/run` with `$XDG_RUNTIME_DIR` (the user's sockets: livetools',
the desktop bus, an ssh agent) and the well-known control sockets (docker, containerd, podman,
dbus). A unix socket needs no write to be connected to, so read-only is not enough: it must not
be there.

Then the toolchains the run's processes need are shown again, read-only, at their paths: this
Python's prefixes and import path, each PATH entry, and the usual toolchain homes (pyenv, uv's
Pythons, cargo, rustup, go, nvm, deno) where they lie under a masked folder. Never livetools'
state folders, even when a toolchain folder would hold them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

SOCKETS = (
    "/var/run/docker.sock",
    "/var/run/dbus",
    "/var/lib/docker",
    "/var/run/containerd",
    "/var/run/podman",
)
TOOLCHAINS = (
    ".pyenv",
    ".local/share/uv/python",
    ".local/bin",
    ".cargo",
    ".rustup",
    "go",
    ".nvm",
    ".deno",
    ".bun",
)
TOOL_VARS = ("PYENV_ROOT", "CARGO_HOME", "RUSTUP_HOME", "GOROOT", "GOPATH", "GOMODCACHE", "NVM_DIR")


def state_folders(home: Path | None = None) -> list[Path]:
    """Every folder livetools keeps state or sockets in on this host."""
    home = home or Path.home()
    found = [home / ".cache" / "livetools", home / ".local" / "state" / "livetools"]
    for var in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        if value := os.environ.get(var):
            found.append(Path(value) / "livetools")
    return found


def masked(home: Path | None = None) -> list[str]:
    """The host folders an empty folder is mounted over, outermost first."""
    home = home or Path.home()
    out: list[str] = []
    for path in ("/root", "/home", str(home), "/run", os.environ.get("XDG_RUNTIME_DIR", "")):
        real = path and os.path.isdir(path) and not os.path.islink(path)
        if real and path not in out and not any(path.startswith(m + "/") for m in out):
            out.append(path)
    return out


def _under(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def shown_again(masks: Sequence[str], home: Path | None = None) -> list[str]:
    """Toolchain folders under a mask that the run's processes need (outermost, deduplicated)."""
    home = home or Path.home()
    wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}
    wanted.update(os.environ.get("PATH", "").split(os.pathsep))
    wanted.update(os.environ[v] for v in TOOL_VARS if os.environ.get(v))
    wanted.update(str(home / t) for t in TOOLCHAINS)
    hidden = [str(p) for p in state_folders(home)]
    picked = sorted(
        os.path.realpath(p)
        for p in wanted
        if p and os.path.isabs(p) and _under(os.path.realpath(p), masks) and os.path.isdir(p)
    )
    kept: list[str] = []
    for path in picked:
        if _under(path, hidden) or any(h.startswith(path + "/") for h in hidden):
            continue  # a folder holding livetools' state is never shown whole
        if not any(path.startswith(k + "/") or path == k for k in kept):
            kept.append(path)
    return kept


def view_args(home: Path | None = None) -> list[str]:
    """bwrap arguments (after the system binds) that hide and show again as described above."""
    masks = masked(home)
    args: list[str] = []
    for path in masks:
        args += ["--tmpfs", path]
    for sock in SOCKETS:  # under /var, which stays bound: cover each with an empty file or folder
        real = os.path.realpath(sock)
        if _under(real, masks) or not os.path.lexists(sock):
            continue
        args += ["--tmpfs", real] if os.path.isdir(real) else ["--ro-bind", "/dev/null", real]
    for path in shown_again(masks, home):
        args += ["--ro-bind", path, path]
    return args
