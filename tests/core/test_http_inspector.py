"""The MCP Inspector's CLI (npm @modelcontextprotocol/inspector, pinned in scripts/conformance.sh)
against `serve --http` with a bearer token, in both protocol eras: tools/list, an ast_grep search,
a usage error, a wrong token. A client written by others, so what our own tests take for granted
(the era negotiation, the headers, where the structured data rides) is checked from outside.

The server's /metrics counts admitted MCP requests by protocol version, which shows that each
`--protocol-era` really spoke its era."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.core.http_serving import WAIT, Served, serve_http
from tests.support import REPO, missing

SCRIPT = REPO / "scripts" / "conformance.sh"
TOKEN = "inspector-test-token"
ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28"}
PROTOCOL_LINE = re.compile(r'^livetools_http_mcp_requests_total\{protocol="([^"]+)"\} (\d+)$', re.M)


def require_inspector() -> None:
    check = subprocess.run(["bash", str(SCRIPT), "check-inspector"], capture_output=True, text=True)
    if check.returncode != 0:
        missing(f"MCP Inspector: {check.stdout.strip() or check.stderr.strip()}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_inspector()
    root = tmp_path_factory.mktemp("root")
    (root / "a.py").write_text("def f(a, b):\n    return a + b\n")
    with serve_http("--root", str(root), env={"LIVETOOLS_HTTP_TOKEN": TOKEN}) as server:
        yield server


@dataclass
class Outcome:
    """One Inspector CLI run: its exit code, the JSON it printed on stdout (the result) and on
    stderr (its error envelope), each None when absent."""

    rc: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    output: str


def last_json(text: str) -> dict[str, Any] | None:
    lines = text.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except ValueError:
        return None


def inspector(
    served: Served, era: str, tmp_path: Path, *args: str, token: str = TOKEN, path: str = "/mcp"
) -> Outcome:
    """Run the Inspector's CLI on the endpoint at `path`; its catalog, config and secret store
    go to tmp_path, not ~."""
    store = tmp_path / "inspector"
    command = [
        "bash",
        str(SCRIPT),
        "inspector",
        "--cli",
        f"{served.url}{path}",
        "--transport",
        "http",
        "--protocol-era",
        era,
        "--header",
        f"Authorization: Bearer {token}",
        "--stored-auth-only",  # never an interactive OAuth login in a test
        "--format",
        "json",
        *args,
    ]
    env = {
        **os.environ,
        "MCP_STORAGE_DIR": str(store / "storage"),
        "MCP_CATALOG_PATH": str(store / "mcp.json"),
        "MCP_CLIENT_CONFIG_PATH": str(store / "client.json"),
        "MCP_INSPECTOR_OAUTH_STATE_PATH": str(store / "oauth.json"),
        "NO_COLOR": "1",
    }
    done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT, env=env)
    stdout = last_json(done.stdout)
    return Outcome(
        done.returncode,
        stdout.get("result") if stdout else None,
        (last_json(done.stderr) or {}).get("error"),
        f"exit {done.returncode}\n{done.stdout}\n{done.stderr}",
    )


def text_of(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def protocols(served: Served) -> dict[str, int]:
    auth = {"Authorization": f"Bearer {TOKEN}"}  # a single run's token guards /metrics too
    text = httpx2.get(f"{served.url}/metrics", headers=auth, timeout=WAIT).text
    return {version: int(n) for version, n in PROTOCOL_LINE.findall(text)}


def spoke(served: Served, era: str, before: dict[str, int]) -> None:
    """Requests of the era's version reached the run, and none of the other era's."""
    after = protocols(served)
    grew = {v for v, n in after.items() if n > before.get(v, 0)}
    assert ERAS[era] in grew, f"{era}: versions seen {grew}"
    other = next(v for e, v in ERAS.items() if e != era)
    assert other not in grew, f"{era}: versions seen {grew}"


@pytest.mark.parametrize("era", ERAS)
def test_lists_the_tools_with_tiers(served: Served, era: str, tmp_path: Path) -> None:
    before = protocols(served)
    out = inspector(served, era, tmp_path, "--method", "tools/list")
    assert out.rc == 0 and out.result is not None, out.output
    tools = {t["name"]: t for t in out.result["tools"]}
    assert {"ast_grep", "write", "edit"} <= set(tools)
    assert tools["ast_grep"]["_meta"]["livetools/tier"] == "read"
    assert tools["ast_grep"]["annotations"]["readOnlyHint"] is True
    assert tools["write"]["annotations"]["readOnlyHint"] is False
    assert "pattern" in tools["ast_grep"]["inputSchema"]["required"]
    spoke(served, era, before)


@pytest.mark.parametrize("era", ERAS)
def test_calls_an_ast_grep_search(served: Served, era: str, tmp_path: Path) -> None:
    before = protocols(served)
    out = inspector(
        served,
        era,
        tmp_path,
        *("--method", "tools/call", "--tool-name", "ast_grep", "--tool-arg", "pattern=$A + $B"),
    )
    assert out.rc == 0 and out.result is not None, out.output
    assert out.result["isError"] is False
    assert "a.py:2: a + b" in text_of(out.result), out.output
    data = out.result["_meta"]["livetools/data"]
    assert data["matches"][0]["bindings"] == {"A": "a", "B": "b"}
    spoke(served, era, before)


@pytest.mark.parametrize("era", ERAS)
def test_a_usage_error_is_a_tool_result_the_model_can_act_on(
    served: Served, era: str, tmp_path: Path
) -> None:
    """Arguments that fail validation: a tool result with isError that says what was missing
    and what is expected (not a protocol error, which a model would never read). The Inspector
    prints it and exits 5, its "tool_is_error"."""
    before = protocols(served)
    out = inspector(
        served,
        era,
        tmp_path,
        *("--method", "tools/call", "--tool-name", "ast_grep", "--tool-arg", "max_results=3"),
    )
    assert out.rc == 5 and out.result is not None, out.output
    assert out.error is not None and out.error["code"] == "tool_is_error", out.output
    assert out.result["isError"] is True
    assert out.result["_meta"]["livetools/data"] == {"error": "usage"}
    text = text_of(out.result)
    assert "pattern: Field required" in text and "Expected: pattern" in text, text
    spoke(served, era, before)


@pytest.mark.parametrize("era", ERAS)
def test_a_wrong_token_is_refused(served: Served, era: str, tmp_path: Path) -> None:
    """401 before the run: the Inspector would start an OAuth login, which --stored-auth-only
    turns into its "auth_required" error; no request reaches the run."""
    before = protocols(served)
    out = inspector(served, era, tmp_path, "--method", "tools/list", token="not-the-token")
    assert out.rc != 0 and out.error is not None, out.output
    assert out.error["code"] == "auth_required", out.output
    assert protocols(served) == before


@pytest.mark.parametrize("era", ERAS)
def test_a_run_of_a_run_server_by_its_url(era: str, tmp_path: Path) -> None:
    """The run is a URL: the Inspector reaches a run of `--runs-under` at /runs/<id>/mcp with
    that run's token; the admin token does not open it."""
    require_inspector()
    under = tmp_path / "runs"
    (under / "proj").mkdir(parents=True)
    (under / "proj" / "b.py").write_text("x = 1 + 2\n")
    with serve_http("--runs-under", str(under), env={"LIVETOOLS_HTTP_TOKEN": TOKEN}) as server:
        made = httpx2.post(
            f"{server.url}/runs",
            json={"root": "proj"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=WAIT,
        )
        assert made.status_code == 201, made.text
        run = made.json()
        call = ("--method", "tools/call", "--tool-name", "ast_grep", "--tool-arg", "pattern=1 + 2")
        out = inspector(server, era, tmp_path, *call, token=run["token"], path=run["url"])
        assert out.rc == 0 and out.result is not None, out.output
        assert "b.py:1: 1 + 2" in text_of(out.result), out.output
        refused = inspector(server, era, tmp_path, *call, path=run["url"])  # the admin token
        assert refused.rc != 0 and refused.error is not None, refused.output
        assert refused.error["code"] == "auth_required", refused.output
