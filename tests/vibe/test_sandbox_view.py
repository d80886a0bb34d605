"""A vibe worker command inside bwrap probes what it can see and reach of the host (the claims
of docs/sandbox.md's table); the eval probe is tests/core/test_sandbox_view.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from livetools import Ports
from tests.sandboxes import PROBE, bwrap_sandbox, check_probe
from tests.sandboxes_host import hostile_host
from tests.vibe.conftest import ok, vibe_run


async def test_a_worker_reaches_nothing_of_the_host(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "probe.py").write_text(PROBE)
    with hostile_host(root) as args, bwrap_sandbox(root) as sandbox:
        command = [sys.executable, "{root}/probe.py", json.dumps(args)]
        async with vibe_run(root, ports=Ports(sandbox=sandbox), command=command) as run:
            await ok(run, "vibe_spawn", {"brief": "probe\n", "label": "probe"})
            done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 60})
            assert done.data["state"] == "settled", done.text
    check_probe(json.loads((root / "probe.json").read_text()), str(args["home"]))
