"""The built-in bubblewrap sandbox: the host's system folders read-only (its homes, `/run` and
control sockets hidden: `view.py`), the run root writable at `/workspace`, a private /tmp, no
network, its own PID namespace, an allow-listed environment (`environ.py`), dying with the host.

It shows the shape every sandbox adapter follows: the root appears at another path (so the path
mapping is exercised, not bypassed), and a shared folder at the same path on both sides carries
unix sockets (kernels) across the namespaces.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from ..files.owner import owned_tempdir
from .environ import inside_env
from .prefix import PrefixSandbox
from .view import view_args

INSIDE_ROOT = "/workspace"
INSIDE_HOME = "/tmp/home"


class BwrapSandbox(PrefixSandbox):
    """`network=True` keeps the host's network (default: unshared, only a loopback inside).
    `binds` adds more host folders, read-write, at the same path inside (also one the view
    hides, such as a home folder the run asks for); `env_names` are host variables passed in
    beside the allow-list."""

    def __init__(
        self,
        host_root: Path,
        *,
        inside_root: str = INSIDE_ROOT,
        network: bool = False,
        binds: Sequence[Path] = (),
        env_names: Sequence[str] = (),
        bwrap: str = "bwrap",
    ) -> None:
        host = Path(host_root).resolve()
        self._own_shared = Path(owned_tempdir("livetools-sbx"))
        prefix = [
            bwrap,
            "--die-with-parent",
            "--unshare-all",
            *(["--share-net"] if network else []),
            *_host_system(inside_root),
            *view_args(),
            *(_resolver() if network else []),
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",
            "--dir", INSIDE_HOME,
            *_our_python_under("/tmp"),
            "--bind", str(host), inside_root,
            "--bind", str(self._own_shared), str(self._own_shared),
            *(a for b in binds for a in ("--bind", str(b), str(b))),
        ]  # fmt: skip
        super().__init__(
            prefix,
            host_root=host,
            inside_root=PurePosixPath(inside_root),
            shared_dir=self._own_shared,
            name="bwrap",
            host_network=network,
            env_names=env_names,
        )
        self.network = network

    def in_cwd(self, cwd: str) -> list[str]:
        return ["--chdir", cwd, "--"]

    def command(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None) -> list[str]:
        return [*self.prefix, *self.in_cwd(cwd), *argv]  # bwrap passes its environment on

    def host_env(self, env: Mapping[str, str] | None) -> Mapping[str, str] | None:
        """bwrap hands its own environment inside: the allow-list, HOME a private folder."""
        inside = inside_env(env, home=INSIDE_HOME, passed=self.env_names)
        return {**go_caches(), **inside}

    def describe(self) -> str:
        net = "host network" if self.network else "no network"
        return f"bwrap (root at {self.paths.inside}, {net})"

    def close(self) -> None:
        """Remove the shared folder (the run calls this when it closes)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self._own_shared)

    @staticmethod
    def available(bwrap: str = "bwrap") -> str | None:
        """None when bwrap is installed, else what to install."""
        if shutil.which(bwrap) is None:
            return "bwrap is not installed (Debian: apt-get install bubblewrap)"
        return None


_OWN = frozenset({"proc", "dev", "tmp"})  # made fresh inside


def _host_system(inside_root: str) -> list[str]:
    """Read-only binds of the host's top-level folders (links stay links). Binding `/` itself
    would leave no room to make the inside root's mount point on a read-only file system."""
    top = PurePosixPath(inside_root).parts[1] if len(PurePosixPath(inside_root).parts) > 1 else ""
    args: list[str] = []
    for entry in sorted(os.listdir("/")):
        if entry in _OWN or entry == top:
            continue
        path = f"/{entry}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _resolver() -> list[str]:
    """With the host's network, /etc/resolv.conf may point into the hidden /run: show it."""
    real = os.path.realpath("/etc/resolv.conf")
    if real.startswith("/run/") and os.path.isfile(real):
        return ["--ro-bind", real, real]
    return []


def _our_python_under(private: str) -> list[str]:
    """Read-only binds, at the same paths, of this Python's prefixes and import path where they
    lie under a folder the sandbox makes private: a checkout or venv under /tmp (a CI clone) holds
    the interpreters, servers and adapters that families start inside."""
    wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}
    inside = sorted(
        p
        for p in wanted
        if p and os.path.isabs(p) and p.startswith(private + "/") and os.path.isdir(p)
    )
    kept: list[str] = []
    for path in inside:
        if not any(path.startswith(parent + "/") for parent in kept):
            kept.append(path)
    return [a for path in kept for a in ("--ro-bind", path, path)]


def go_caches() -> dict[str, str]:
    """Go's build cache writable inside (under the private HOME: the host's is hidden or
    read-only, and gopls then answers every request with "no package metadata"), and its module
    cache the host's, shown read-only by the view, so a project's downloaded dependencies
    resolve with no network."""
    out = {"GOCACHE": f"{INSIDE_HOME}/.cache/go-build"}
    mods = os.environ.get("GOMODCACHE") or ""
    if not mods:
        gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0] or str(Path.home() / "go")
        mods = str(Path(gopath) / "pkg" / "mod")
    if os.path.isabs(mods) and os.path.isdir(mods):
        out["GOMODCACHE"] = mods
    return out
