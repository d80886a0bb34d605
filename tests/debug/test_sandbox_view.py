"""A debug-launched program inside bwrap probes what it can see and reach of the host (the
claims of docs/sandbox.md's table); the eval probe is tests/core/test_sandbox_view.py."""

from __future__ import annotations

import json
from pathlib import Path

from livetools.ports import Ports
from tests.sandboxes import PROBE, bwrap_sandbox, check_probe
from tests.sandboxes_host import hostile_host


async def test_a_debugged_program_reaches_nothing_of_the_host(
    tmp_path: Path, open_debugger
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "probe.py").write_text(PROBE)
    (root / "pyproject.toml").write_text('[project]\nname = "probe"\n')  # debugpy's marker
    with hostile_host(root) as args, bwrap_sandbox(root) as sandbox:
        dbg = await open_debugger(root, ports=Ports(sandbox=sandbox))
        result = await dbg.ok("launch", program="probe.py", args=[json.dumps(args)])
        assert result.data["outcome"] in ("exited", "terminated"), result.text
    check_probe(json.loads((root / "probe.json").read_text()), str(args["home"]))
