"""The npm MCP conformance suite's applicable server scenarios, run directly against
`serve --http` (scripts/conformance.sh lists them and says why the others do not apply): every
check passes. The suite needs Node 22, which scripts/conformance.sh install fetches."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.core.http_serving import serve_http
from tests.support import REPO, REQUIRE_ENV

pytestmark = pytest.mark.realworld

SCRIPT = REPO / "scripts" / "conformance.sh"
SCENARIOS = 5  # scripts/conformance.sh APPLICABLE
STAMP = re.compile(r"-\d{4}-\d\d-\d\dT.*$")  # the suite names a result folder scenario-<time>


def require_suite() -> None:
    check = subprocess.run(["bash", str(SCRIPT), "check"], capture_output=True, text=True)
    if check.returncode == 0:
        return
    message = f"MCP conformance suite: {check.stdout.strip() or check.stderr.strip()}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 turns this skip into a failure)")
    pytest.skip(message)


def test_applicable_server_scenarios_pass(tmp_path: Path) -> None:
    require_suite()
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    out = tmp_path / "out"
    with serve_http("--no-token", "--root", str(root)) as served:
        done = subprocess.run(
            ["bash", str(SCRIPT), "run", f"{served.url}/mcp"],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "CONFORMANCE_OUT": str(out)},
        )
    checks = [
        (folder.name, check)
        for folder in sorted(out.iterdir())
        for check in json.loads((folder / "checks.json").read_text())
    ]
    # INFO is the suite's note, not a verdict: server-sse-streams-functional says "Server
    # returned JSON responses (SSE streams optional)" since an answer alone goes out as JSON.
    failed = [
        f"{name}: {c.get('errorMessage') or c['status']}"
        for name, c in checks
        if c["status"] not in ("SUCCESS", "INFO")
    ]
    assert not failed and done.returncode == 0, f"{failed}\n{done.stdout[-3000:]}{done.stderr}"
    assert len({STAMP.sub("", name) for name, _ in checks}) == SCENARIOS, done.stdout
    assert len(checks) >= SCENARIOS
