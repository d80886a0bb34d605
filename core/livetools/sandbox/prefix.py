"""Sandboxes reached by a command prefix: `bwrap …`, `unshare …`, `docker exec -i CONTAINER`,
`kubectl exec -i POD --`, `devcontainer exec --workspace-folder .`. The prefix program runs on the
host as our child (its own session, dies with us), pipes stdio through, and runs the argv inside.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from ..procs import ChildProcess
from .environ import inside_env
from .paths import PathMap


class PrefixSandbox:
    """`prefix` is put in front of every command. Environment: the prefix program inherits the
    host's, and the inside gets the allow-list of `environ.py` (plus `env_names`, the option's
    `env`): the command runs through `env -u K … K=V …`, which removes every other host variable
    a launcher such as `unshare` passes on and sets what a family adds (`docker exec` and friends
    do not forward their own environment; HOME stays the inside's). `host_network` says that
    the host's loopback reaches processes inside (a host-network container, `devcontainer
    exec`): families that speak TCP (debug adapters, kernels without a shared folder) need it."""

    def __init__(
        self,
        prefix: Sequence[str],
        *,
        host_root: Path,
        inside_root: str | PurePosixPath | None = None,
        shared_dir: Path | None = None,
        name: str | None = None,
        host_network: bool = False,
        env_names: Sequence[str] = (),
    ) -> None:
        if not prefix:
            raise ValueError("the sandbox prefix is empty: give the command that runs argv inside")
        self.prefix = tuple(str(p) for p in prefix)
        host = Path(host_root).resolve()
        self.paths = PathMap(host, PurePosixPath(inside_root or host))
        self.shared_dir = shared_dir
        self.name = name or Path(self.prefix[0]).name
        self.host_network = host_network
        self.env_names = tuple(env_names)

    def command(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None) -> list[str]:
        """The host command that runs `argv` inside, in `cwd` (an inside path), with `env`."""
        inside = inside_env(env, passed=self.env_names)
        given = os.environ if env is None else env
        if "HOME" in given:  # the inside's own home: kept unless the family dropped it
            inside["HOME"] = given["HOME"]
        return [*self.prefix, *self.in_cwd(cwd), *_env_delta(inside), *argv]

    def in_cwd(self, cwd: str) -> list[str]:
        """Arguments that make the inside start in `cwd`; a plain prefix cannot say, so the
        command is run through `sh -c 'cd … && exec "$@"'`."""
        return ["sh", "-c", 'cd "$0" && exec "$@"', cwd]

    def host_cwd(self, cwd: str) -> Path:
        """Where the launcher itself starts on the host (the root: the inside's cwd is said)."""
        return self.paths.host

    async def launch(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> list[str]:
        """The host command to start; a subclass may ask someone else for it (the wrap port)."""
        return self.command(argv, cwd=cwd, env=env)

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None,
        name: str,
        stdin: bool,
        stdout: bool,
        merge_stderr: bool,
        stderr_lines: int,
    ) -> ChildProcess:
        return await ChildProcess.start(
            await self.launch(argv, cwd=cwd, env=env),
            cwd=self.host_cwd(cwd),
            env=self.host_env(env),
            name=name,
            stdin=stdin,
            stdout=stdout,
            merge_stderr=merge_stderr,
            stderr_lines=stderr_lines,
        )

    def host_env(self, env: Mapping[str, str] | None) -> Mapping[str, str] | None:
        """The environment of the prefix program itself: the host's."""
        return None

    def describe(self) -> str:
        where = "" if self.paths.identity else f", root at {self.paths.inside}"
        return f"{self.name} (prefix {shlex.join(self.prefix)[:120]}{where})"


def _env_delta(env: Mapping[str, str]) -> list[str]:
    """`env -u K … K=V …` turning the host's environment into `env`; empty when they agree."""
    removed = [k for k in os.environ if k not in env]
    changed = [f"{k}={v}" for k, v in env.items() if os.environ.get(k) != v]
    if not removed and not changed:
        return []
    return ["env", *(a for k in removed for a in ("-u", k)), *changed]
