"""What a process inside the bwrap sandbox sees of the host, probed from inside: an eval cell
here (the debug and vibe probes live beside those families' tests), the resident's second door
(its namespace check), and the environment allow-list of prefix launchers. docs/sandbox.md's
table lists each claim."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from livetools import Host
from livetools.sandbox import PrefixSandbox, spawn
from tests.sandboxes import PROBE, bwrap_sandbox, check_probe, require_bwrap
from tests.sandboxes_host import hostile_host


async def test_an_eval_cell_reaches_nothing_of_the_host(tmp_path: Path) -> None:
    require_bwrap()
    root = tmp_path / "proj"
    root.mkdir()
    (root / "probe.py").write_text(PROBE)
    with hostile_host(root) as args:
        async with Host().open_run(root, options={"sandbox": "bwrap"}) as run:
            # the kernel process itself runs the probe
            argv = json.dumps(["probe.py", json.dumps(args)])
            code = f"import sys; sys.argv = {argv}; exec(open('probe.py').read())"
            probe = {"code": code, "description": "run the probe script in this kernel process"}
            result = await run.call("eval", probe)
            assert not result.is_error, result.text
            names = "sorted(k for k in __import__('os').environ if 'SECRET' in k or 'TOKEN' in k)"
            env = await run.call(
                "eval", {"code": names, "description": "list the secret looking variable names"}
            )
    verdict = json.loads((root / "probe.json").read_text())
    check_probe(verdict, args["home"])  # type: ignore[arg-type]
    assert "probe-secret" not in env.text and "AWS_SECRET" not in env.text, env.text


async def test_the_resident_refuses_a_peer_of_another_namespace(tmp_path: Path) -> None:
    """The second door: even with the resident's socket folder bound in on purpose, a peer in
    the sandbox (same uid) is refused; the same request from the host is answered."""
    require_bwrap()
    root = tmp_path / "proj"
    root.mkdir()
    with hostile_host(root) as args:
        sock = str(args["socket"])
        ask = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])\n"
            'try:\n    s.sendall(b\'{"op": "ping"}\\n\')\n'
            "except OSError:\n    pass  # a refusing resident may close before it reads\n"
            "print(s.makefile().readline())\n"
        )
        with bwrap_sandbox(root, binds=[Path(sock).parent]) as sandbox:
            child = await spawn(sandbox, [sys.executable, "-c", ask, sock], cwd=root, env=None)
            try:
                assert child.stdout is not None
                inside = (await child.stdout.read()).decode()
                await child.wait(30)
            finally:
                await child.aclose(grace=0)
        outside = await asyncio.to_thread(_ask_from_host, ask, sock)
    assert "not in this resident's mnt namespace" in inside, inside
    assert "refused" not in outside and outside.strip(), outside


async def test_a_prefix_launcher_passes_only_the_allow_list(tmp_path: Path, monkeypatch) -> None:
    """`env` stands in for `unshare …`: a launcher that hands the host's environment on."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "probe-secret")
    monkeypatch.setenv("MY_API_URL", "http://example.invalid")
    monkeypatch.setenv("LANG", "C.UTF-8")
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    for names, expect_api in (((), False), (["MY_API_URL"], True)):
        sandbox = PrefixSandbox(["env"], host_root=tmp_path, env_names=names)
        env = {**os.environ, "FAMILY_OWN": "1"}
        child = await spawn(sandbox, [sys.executable, "-c", script], cwd=tmp_path, env=env)
        try:
            assert child.stdout is not None
            inside = json.loads(await child.stdout.read())
            await child.wait(30)
        finally:
            await child.aclose(grace=0)
        assert "AWS_SECRET_ACCESS_KEY" not in inside
        assert inside["FAMILY_OWN"] == "1" and inside["LANG"] == "C.UTF-8" and "PATH" in inside
        assert ("MY_API_URL" in inside) is expect_api


def _ask_from_host(ask: str, sock: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", ask, sock], capture_output=True, text=True, timeout=30
    )
    return done.stdout
