"""A real bubblewrap sandbox for the sandbox suites of every family: the run root bind-mounted at
/workspace (another path than the host's, so the path mapping is exercised), /tmp private (the
host root, under pytest's tmp folder, is not visible inside at its host path), no network."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from livetools.procs import reaper_pid
from livetools.sandbox import BwrapSandbox
from tests.support import alive, missing, plugin_env, require_binary

# Processes inside a sandbox have pids of another namespace: a test marks the ones it starts with
# this variable (a unique value) and finds them on the host by their environment.
TOKEN_ENV = "LIVETOOLS_TEST_SANDBOX_TOKEN"


@functools.cache
def _userns_works() -> str | None:
    try:
        probe = subprocess.run(
            ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if probe.returncode == 0 else probe.stderr.decode(errors="replace").strip()


def require_bwrap() -> None:
    """Skip (fail in CI) without bwrap or without the namespaces it needs."""
    require_binary("bwrap", "apt-get install bubblewrap (core/test-deps.sh)")
    why = _userns_works()
    if why is not None:
        missing(f"bwrap cannot make its namespaces here: {why}")


@contextmanager
def bwrap_sandbox(root: Path, **options: object) -> Iterator[BwrapSandbox]:
    """A bwrap sandbox for `root`, its shared folder removed afterwards."""
    require_bwrap()
    sandbox = BwrapSandbox(root, **options)  # type: ignore[arg-type]
    try:
        yield sandbox
    finally:
        sandbox.close()


def marked(token: str, but: frozenset[int] | set[int] = frozenset()) -> list[int]:
    """Host pids of every live process whose environment holds TOKEN_ENV=`token`, but this
    process, its reaper (either may have started with the token set) and `but`."""
    needle = f"{TOKEN_ENV}={token}".encode()
    ours = {os.getpid(), reaper_pid(), *but}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in ours:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0") and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def sandboxed_session(root: Path, plugins: str | None = None) -> subprocess.Popen[str]:
    """A `livetools session --sandbox bwrap` host on `root` (text pipes), the one a SIGKILL test
    kills: `plugins` allow-lists them (LIVETOOLS_PLUGINS; the testkit is discoverable)."""
    require_bwrap()
    cli = ["-m", "livetools.faces.cli", "session", "--root", str(root), "--sandbox", "bwrap"]
    env = plugin_env(LIVETOOLS_PLUGINS=plugins) if plugins else None
    return subprocess.Popen(
        [sys.executable, *cli], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )


# What a process inside the bwrap sandbox must not see or reach. The probe prints (and writes to
# probe.json in its cwd, the root inside) one JSON verdict; `check_probe` reads it against the
# host. Run by an eval cell, a debug-launched program and a vibe worker alike.
PROBE = r"""
import json, os, socket, sys
SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/dbus/system_bus_socket")
OUTSIDE = ["/usr/probe-x", "/etc/probe-x"]
args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else json.loads(os.environ["PROBE_ARGS"])
def reach_unix(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    try:
        s.connect(path); return True
    except OSError:
        return False
    finally:
        s.close()
def reach_tcp(port):
    try:
        socket.create_connection(("127.0.0.1", port), 3).close(); return True
    except OSError:
        return False
def can_write(path):
    try:
        with open(path, "w") as f: f.write("x")
        return True
    except OSError:
        return False
def listing(path):
    try: return sorted(os.listdir(path))
    except OSError: return []
cmdlines = []
for pid in listing("/proc"):
    if pid.isdigit():
        try: cmdlines.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        except OSError: pass
verdict = {
    "home": {p: listing(p) for p in ("/root", "/home", args["home"])},
    "state": [p for p in args["state"] if os.path.exists(p)],
    "run_user": listing("/run/user"),
    "sockets": [p for p in SOCKETS if os.path.exists(p)],
    "resident_reached": reach_unix(args["socket"]),
    "tcp_reached": reach_tcp(args["port"]),
    "wrote_outside": [p for p in OUTSIDE + [args["host_tmp"] + "/probe-x"] if can_write(p)],
    "secrets": [k for k in ("AWS_SECRET_ACCESS_KEY", "LIVETOOLS_HTTP_TOKEN") if k in os.environ],
    "home_env": os.environ.get("HOME"),
    "host_procs": [c for c in cmdlines if c == args["marker"]],
    "cwd": os.getcwd(),
}
open("probe.json", "w").write(json.dumps(verdict))
print(json.dumps(verdict))
"""


TOOLCHAIN_TOPS = {".pyenv", ".cargo", ".rustup", "go", ".local", ".nvm", ".deno", ".bun", ".cache"}


def check_probe(verdict: dict[str, object], home: str) -> None:
    """Each claim of docs/sandbox.md's table, as seen from inside."""
    assert verdict["cwd"] == "/workspace", verdict
    home_view = verdict["home"]
    assert isinstance(home_view, dict)
    # a home shows only the toolchains shown again (mount points of their folders), nothing else
    shown = {name for names in home_view.values() for name in names}
    assert shown <= TOOLCHAIN_TOPS, sorted(shown - TOOLCHAIN_TOPS)
    assert verdict["state"] == [], verdict["state"]
    assert verdict["run_user"] == [] and verdict["sockets"] == [], verdict
    assert verdict["resident_reached"] is False and verdict["tcp_reached"] is False, verdict
    assert verdict["wrote_outside"] == [], verdict["wrote_outside"]
    assert verdict["secrets"] == [], verdict["secrets"]
    assert verdict["home_env"] != home, verdict["home_env"]
    assert verdict["host_procs"] == [], verdict["host_procs"]
