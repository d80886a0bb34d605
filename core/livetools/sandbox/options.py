"""A sandbox named by a run option, so every face (status, call, session, serve, a run created
over HTTP) can ask for one without Python: `sandbox="bwrap"`, `{"kind": "bwrap", "network": true}`,
or `{"wrap": "docker exec -i box", "root": "/src", "network": true}` for any prefix launcher
(`network`: the host's loopback reaches inside).

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
            argv, host_root=root, inside_root=inside, host_network=bool(spec.get("network"))
        )
    kind = spec.get("kind")
    if kind == "bwrap":
        missing = BwrapSandbox.available()
        if missing:
            raise SandboxOptionError(f"sandbox bwrap: {missing}")
        inside = spec.get("root", "/workspace")
        if not isinstance(inside, str) or not inside.startswith("/") or inside == "/":
            raise SandboxOptionError("sandbox.root: an absolute folder inside, e.g. /workspace")
        return BwrapSandbox(root, inside_root=inside, network=bool(spec.get("network", False)))
    raise SandboxOptionError(f"sandbox: unknown kind {kind!r:.40}; expected one of {EXAMPLES}")
