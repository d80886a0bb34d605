"""The environment a sandboxed process gets: an allow-list, never the host's whole environment.

A host environment holds what a sandbox exists to keep out (cloud credentials, API tokens,
`LIVETOOLS_HTTP_TOKEN`, the address of the host's agent sockets). Inside go only: the variables
that say how to run programs and show text (below), the variables a family sets for its own
process (a value the host does not have: `PYTHONPATH` of a kernel, `LIVETOOLS_SURFACE` of a
worker), the names the run's `sandbox` option lists under `env`, and the names the host's
operator lists in `LIVETOOLS_SANDBOX_ENV` (comma-separated: for every run of this process).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

# Where programs and their toolchains are found, and how text is shown: no secrets.
ALLOWED = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "COLORTERM",
        "NO_COLOR",
        "USER",
        "LOGNAME",
        "SHELL",
        "PYENV_ROOT",
        "PYENV_VERSION",
        "VIRTUAL_ENV",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "GOROOT",
        "GOPATH",
        "GOFLAGS",
        "JAVA_HOME",
        "NODE_PATH",
        "OPENBLAS_CORETYPE",
        "OPENBLAS_L2_SIZE",
    }
)
PREFIXES = ("LC_",)
PASS_ENV = "LIVETOOLS_SANDBOX_ENV"


def allowed(name: str) -> bool:
    return name in ALLOWED or name.startswith(PREFIXES)


def inside_env(
    env: Mapping[str, str] | None,
    *,
    home: str | None = None,
    passed: Iterable[str] = (),
    host: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`env` (None: the host's) cut to the allow-list, the family's own variables (absent from
    the host or set to another value there) and the `passed` names; HOME set to `home`."""
    host = os.environ if host is None else host
    keep = set(passed) | {n.strip() for n in host.get(PASS_ENV, "").split(",") if n.strip()}
    base = host if env is None else env
    out = {k: v for k, v in base.items() if allowed(k) or k in keep or host.get(k) != v}
    for name in keep:  # named by the run: passed from the host even when the family dropped it
        if name not in out and name in host:
            out[name] = host[name]
    if home is not None:
        out["HOME"] = home
    return out
