"""The host side of the sandbox probes: a real resident run whose socket lies where the issue
found it (under the home, no XDG_RUNTIME_DIR), a TCP listener on the host's loopback, secrets in
the host's environment. Shared by the eval, debug and vibe probes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import plugin_env

CLI = [sys.executable, "-m", "livetools.faces.cli"]


@contextmanager
def hostile_host(root: Path) -> Iterator[dict[str, object]]:
    """Yields the probe's arguments; sets the secrets in this process's environment meanwhile
    (so every family's process would inherit them without the allow-list)."""
    from livetools.faces.resident import keys

    env = plugin_env(LIVETOOLS_PLUGINS="testkit")
    env.pop("XDG_RUNTIME_DIR", None)
    env.pop(keys.DISABLE_ENV, None)
    home_root = root.parent / "resident-root"
    home_root.mkdir(exist_ok=True)
    state = Path.home() / ".cache" / "livetools" / "resident"  # no XDG_RUNTIME_DIR: the home
    before = set(state.glob("*.sock"))
    started = subprocess.run(
        [*CLI, "resident", "start", "--root", str(home_root)],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 0, started.stderr.decode()
    sockets = [str(p) for p in set(state.glob("*.sock")) - before]  # ours, not another test's
    assert len(sockets) == 1, f"expected one new resident socket under {state}: {sockets}"
    listener = socket.create_server(("127.0.0.1", 0))
    saved = {k: os.environ.get(k) for k in ("AWS_SECRET_ACCESS_KEY", "LIVETOOLS_HTTP_TOKEN")}
    os.environ.update(AWS_SECRET_ACCESS_KEY="probe-secret", LIVETOOLS_HTTP_TOKEN="probe-token")
    host_tmp = tempfile.mkdtemp(prefix="probe-host-")
    try:
        yield {
            "home": str(Path.home()),
            "state": [str(state), str(state.parent)],
            "socket": sockets[-1],
            "port": listener.getsockname()[1],
            "host_tmp": host_tmp,
            "marker": Path("/proc/self/cmdline").read_bytes().decode(errors="replace"),
        }
        assert not os.path.exists(os.path.join(host_tmp, "probe-x"))
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        listener.close()
        subprocess.run([*CLI, "resident", "stop", "--root", str(home_root)], env=env, timeout=60)
        shutil.rmtree(host_tmp, ignore_errors=True)
