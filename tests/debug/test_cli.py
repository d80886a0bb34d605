"""The debug tool through the CLI faces: a stateful flow over `livetools session`, the schema
share, and the plan surface (exec tier: absent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import copy_project, line_of

CLI = [sys.executable, "-m", "livetools.faces.cli"]


def _session(root: Path, lines: list[dict], timeout: float = 60) -> list[dict]:
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [*CLI, "session", "--root", str(root)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_session_launch_then_stack(tmp_path: Path) -> None:
    root = copy_project("py", tmp_path)
    line = line_of(root / "app.py", "# call total")
    out = _session(
        root,
        [
            {"tool": "debug", "args": {"op": "breakpoints", "file": "app.py", "lines": [line]}},
            {"tool": "debug", "args": {"op": "launch", "program": "app.py"}},
            {"tool": "debug", "args": {"op": "stack"}},
            {"tool": "debug", "args": {"op": "terminate"}},
        ],
    )
    assert [o["ok"] for o in out] == [True, True, True, True], out
    assert out[1]["data"]["stop"]["frame"]["line"] == line
    assert out[2]["data"]["frames"][0]["name"] == "main"


def test_schema_share_and_surfaces() -> None:
    done = subprocess.run(
        [*CLI, "tools", "--format", "mcp"], capture_output=True, text=True, timeout=60, check=True
    )
    tool = next(t for t in json.loads(done.stdout) if t["name"] == "debug")
    size = len(json.dumps(tool, separators=(",", ":")))
    assert size <= 1800, f"debug schema is {size} bytes, above its 1.8 KB share"
    assert tool["_meta"]["livetools/tier"] == "exec"
    plan = subprocess.run(
        [*CLI, "tools", "--surface", "plan", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "debug" not in [t["name"] for t in json.loads(plan.stdout)]
