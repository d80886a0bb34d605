"""A sandbox named by a run option, so every face (status, call, session, serve, a run created
over HTTP) can ask for one without Python: `sandbox="bwrap"`, `{"kind": "bwrap", "network": true}`,
or `{"wrap": "docker exec -i box", "root": "/src", "network": true}` for any prefix launcher
(`network`: the host's loopback reaches inside). Either takes `env`, host variables passed
inside beside the allow-list; bwrap takes `binds`, host folders shown inside read-write.

A harness that passes `Ports(sandbox=...)` wins over the option; a sandbox built here belongs to
the run and is closed with it.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .bwrap import BwrapSandbox
from .prefix import PrefixSandbox
from .protocol import Sandbox

OPTION = "sandbox"
EXAMPLES = '"bwrap", {"kind": "bwrap", "network": true}, {"wrap": "PREFIX …", "root": "/src"}'


class SandboxOptionError(ValueError):
    """The `sandbox` option is not one of the accepted shapes; the message names them."""


def sandbox_from_option(value: Any, root: Path) -> Sandbox | None:
    """The sandbox the option asks for, None for none (`null`, `"none"`, `false`)."""
    if value in (None, False, "none", ""):
        return None
    spec: dict[str, Any] = {"kind": value} if isinstance(value, str) else value
    if not isinstance(spec, dict):
        raise SandboxOptionError(f"sandbox: expected one of {EXAMPLES}; got {value!r:.80}")
    if "wrap" in spec:
        prefix = spec["wrap"]
        argv = shlex.split(prefix) if isinstance(prefix, str) else prefix
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            why = "sandbox.wrap: give the prefix command, e.g. 'docker exec -i box'"
            raise SandboxOptionError(why)
        inside = spec.get("root")
        if inside is not None and (not isinstance(inside, str) or not inside.startswith("/")):
            raise SandboxOptionError("sandbox.root: the root's absolute path inside the sandbox")
        return PrefixSandbox(
            argv,
            host_root=root,
            inside_root=inside,
            host_network=bool(spec.get("network")),
            env_names=_env_names(spec),
        )
    kind = spec.get("kind")
    if kind == "bwrap":
        missing = BwrapSandbox.available()
        if missing:
            raise SandboxOptionError(f"sandbox bwrap: {missing}")
        inside = spec.get("root", "/workspace")
        if not isinstance(inside, str) or not inside.startswith("/") or inside == "/":
            raise SandboxOptionError("sandbox.root: an absolute folder inside, e.g. /workspace")
        binds = spec.get("binds", [])
        if not isinstance(binds, list) or not all(
            isinstance(b, str) and b.startswith("/") for b in binds
        ):
            raise SandboxOptionError(
                "sandbox.binds: a list of absolute host folders to show inside (read-write)"
            )
        missing_binds = [b for b in binds if not Path(b).is_dir()]
        if missing_binds:
            raise SandboxOptionError(f"sandbox.binds: no such folder: {missing_binds[0]}")
        return BwrapSandbox(
            root,
            inside_root=inside,
            network=bool(spec.get("network", False)),
            binds=[Path(b) for b in binds],
            env_names=_env_names(spec),
        )
    raise SandboxOptionError(f"sandbox: unknown kind {kind!r:.40}; expected one of {EXAMPLES}")


def _env_names(spec: dict[str, Any]) -> list[str]:
    """`env`: host variables passed inside beside the allow-list (environ.py)."""
    names = spec.get("env", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise SandboxOptionError('sandbox.env: a list of variable names, e.g. ["MY_API_URL"]')
    return names
