"""What identifies a resident run, and where its files live: stdlib only, since `livetools call`
computes this before deciding whether to import the host.

A resident answers only calls that would have opened the very same run: the socket's name is
a hash of the root's real path, the surface, the run options, the environment livetools and
its plugins read (LIVETOOLS_*, PYTHONPATH), the installed livetools (its dist-info and when it
was written) and the interpreter. Anything else differing means another socket, not a wrong
answer."""

from __future__ import annotations

import os
import stat
import sys
from _json import encode_basestring_ascii

try:  # the C module itself: hashlib would load OpenSSL (the fast path counts milliseconds)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

TYPE_CHECKING = False  # typing costs ~9 ms to import on the fast path
if TYPE_CHECKING:
    from typing import Any

DISABLE_ENV = "LIVETOOLS_RESIDENT"  # "0": never use a resident (always run in-process)
DEFAULT_TTL = 600.0
KEY_ENV_EXTRA = ("PYTHONPATH",)


class OptionError(ValueError):
    """A bad run option on the command line (the CLI turns it into a usage error)."""


class UnsafeStateDir(OSError):
    """The state directory belongs to someone else or others may write into it."""


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """`--option key=value` pairs as run options: the value is JSON when it parses (`60`,
    `false`, `{"eval": 5}`), else the string; a dotted key nests (`lsp.request_timeout=5`)."""
    options: dict[str, Any] = {}
    if not pairs:
        return options
    import json  # only with --option: json imports re, which the fast path otherwise skips

    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--option {pair!r}: expected key=value, e.g. debug_ttl=60")
        try:
            value: Any = json.loads(raw)
        except (ValueError, RecursionError):
            value = raw
        *parents, leaf = key.strip().split(".")
        target = options
        for name in parents:
            nested = target.setdefault(name, {})
            if not isinstance(nested, dict):
                raise OptionError(f"--option {pair!r}: {name} is already set to a value")
            target = nested
        target[leaf] = value
    return options


def run_options(
    pairs: list[str],
    *,
    vibe: bool = False,
    approve: str | None = None,
    sandbox: str | None = None,
    sandbox_wrap: str | None = None,
    sandbox_root: str | None = None,
) -> dict[str, Any]:
    """The run options a command line asks for (one definition for the in-process command and
    the resident's key, so the two cannot disagree)."""
    options = parse_options(pairs)
    if vibe:
        options["vibe"] = True
    if approve:
        options["approve"] = approve
    if sandbox_wrap:
        options["sandbox"] = {
            "wrap": sandbox_wrap,
            **({"root": sandbox_root} if sandbox_root else {}),
        }
    elif sandbox:
        if sandbox == "none" and sandbox_root:
            raise OptionError("--sandbox-root goes with --sandbox bwrap or --sandbox-wrap PREFIX")
        named = sandbox != "none" and sandbox_root
        options["sandbox"] = {"kind": sandbox, "root": sandbox_root} if named else sandbox
    elif sandbox_root:
        raise OptionError("--sandbox-root goes with --sandbox bwrap or --sandbox-wrap PREFIX")
    return options


def effective_surface(surface: str | None) -> str | None:
    """No --surface means "agent" unless a ceiling or a worker's default applies (then the
    request stays None and the environment, part of the key, decides)."""
    ceiling = os.environ.get("LIVETOOLS_SURFACE") or os.environ.get("LIVETOOLS_WORKER")
    return "agent" if surface is None and not ceiling else surface


def installed() -> str:
    """The installed livetools: its dist-info's name (the version) and mtime (a reinstall), so
    an upgrade never talks to a resident of the old code. Editable installs: edits to the code
    itself are not seen (stop the residents after editing livetools)."""
    for entry in sys.path:
        if not entry.endswith(("site-packages", "dist-packages")):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            if name.startswith("livetools-") and name.endswith(".dist-info"):
                try:
                    return f"{name}@{os.stat(os.path.join(entry, name)).st_mtime_ns}"
                except OSError:
                    return name
    return "unknown"


def run_key(root: str, surface: str | None, options: dict[str, Any]) -> str:
    """The hex key of a resident for this root (any spelling), surface and options."""
    env = sorted(
        (k, v)
        for k, v in os.environ.items()
        if (k.startswith("LIVETOOLS_") and k != DISABLE_ENV) or k in KEY_ENV_EXTRA
    )
    identity = [
        os.path.realpath(root),
        effective_surface(surface),
        options,
        env,
        installed(),
        sys.executable,
    ]
    return blake2b(canonical(identity).encode(), digest_size=10).hexdigest()


def canonical(value: Any) -> str:
    """One spelling of a JSON value (keys sorted), without importing json."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        items = sorted(((str(k), v) for k, v in value.items()), key=lambda kv: kv[0])
        return "{" + ",".join(f"{canonical(k)}:{canonical(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    return encode_basestring_ascii(repr(value))


def state_dir(create: bool = False) -> str:
    """$XDG_RUNTIME_DIR/livetools, else ~/.cache/livetools/resident: 0700, ours, and writable by
    nobody else, or UnsafeStateDir (a socket there could be someone else's)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        path = os.path.join(runtime, "livetools")
    else:
        path = os.path.join(os.path.expanduser("~"), ".cache", "livetools", "resident")
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)  # FileNotFoundError when absent and not created
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeStateDir(f"{path} is not a directory")
    if st.st_uid != os.getuid():
        raise UnsafeStateDir(f"{path} belongs to uid {st.st_uid}, not to us ({os.getuid()})")
    if st.st_mode & 0o022:
        raise UnsafeStateDir(f"{path} is writable by others (mode {st.st_mode & 0o777:o})")
    return path


def paths(directory: str, key: str) -> dict[str, str]:
    """The resident's files: socket, lock (held for its whole life), log."""
    base = os.path.join(directory, key)
    return {ext: f"{base}.{ext}" for ext in ("sock", "lock", "log")}
