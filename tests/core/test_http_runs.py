"""The run server (`serve --http --runs-under DIR`): runs opened, listed and closed over the
API with the admin token, each run a full MCP endpoint at its own URL that only its own token
opens; roots confined to DIR; instance-prefixed ids; idle expiry; the run limit; SIGTERM with
live runs leaves no process behind; /healthz and /metrics."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.core.http_serving import WAIT, Served, connect, serve_http, text_of
from tests.core.mcp_conn import INITIALIZE, MCP_HEADERS
from tests.support import assert_gone

ADMIN = "admin-token-for-the-run-server-test"


@pytest.fixture
def under(tmp_path: Path) -> Path:
    for name in ("alpha", "beta", "gamma"):
        (tmp_path / "runs" / name).mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "runs" / "escape").symlink_to(tmp_path / "outside")
    return tmp_path / "runs"


@pytest.fixture
def server(under: Path) -> Iterator[Served]:
    with serve_http(
        "--runs-under",
        str(under),
        "--instance",
        "n1",
        "--max-runs",
        "3",
        env={"LIVETOOLS_HTTP_TOKEN": ADMIN},
    ) as served:
        yield served


def admin(server: Served) -> httpx2.Client:
    return httpx2.Client(
        base_url=server.url, timeout=WAIT, headers={"Authorization": f"Bearer {ADMIN}"}
    )


def mcp_post(server: Served, url: str, token: str | None) -> int:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    with httpx2.Client(timeout=WAIT) as http:
        return http.post(
            f"{server.url}{url}", content=json.dumps(INITIALIZE), headers=headers
        ).status_code


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_run_is_a_url_with_its_own_token(era: str, server: Served, under: Path) -> None:
    with admin(server) as http:
        made = http.post("/runs", json={"root": "alpha", "conversation_id": "c-1"})
        assert made.status_code == 201, made.text
        run = made.json()
        assert run["run_id"].startswith("n1-") and len(run["run_id"]) == 3 + 32
        assert run["url"] == f"/runs/{run['run_id']}/mcp"
        other = http.post("/runs", json={"root": str(under / "beta"), "surface": "plan"}).json()
    async with connect(era, f"{server.url}{run['url']}", token=run["token"]) as conn:
        out = await conn.call("write", {"path": "x.txt", "content": "alpha\n"})
        assert not out.is_error, text_of(out)
    assert (under / "alpha" / "x.txt").read_text() == "alpha\n"
    async with connect(era, f"{server.url}{other['url']}", token=other["token"]) as conn:
        assert "write" not in await conn.list_tools()  # the plan surface
    # A run's token opens only its run; the admin token opens none.
    assert mcp_post(server, other["url"], run["token"]) == 401
    assert mcp_post(server, run["url"], ADMIN) == 401
    assert mcp_post(server, run["url"], None) == 401
    assert mcp_post(server, "/runs/n1-0123/mcp", run["token"]) == 404
    with admin(server) as http:
        listed = {r["id"]: r for r in http.get("/runs").json()["runs"]}
        assert listed[run["run_id"]]["root"] == "alpha"
        assert listed[run["run_id"]]["conversation_id"] == "c-1"
        assert listed[run["run_id"]]["calls"] == 1
        assert listed[other["run_id"]]["surface"] == "plan"
        assert http.delete(f"/runs/{run['run_id']}").status_code == 204
        assert http.delete(f"/runs/{run['run_id']}").status_code == 404
        assert run["run_id"] not in {r["id"] for r in http.get("/runs").json()["runs"]}
    assert mcp_post(server, run["url"], run["token"]) == 404


def test_roots_must_lie_under_runs_under(server: Served, tmp_path: Path) -> None:
    with admin(server) as http:
        for root in ("../outside", str(tmp_path / "outside"), "escape", "/"):
            r = http.post("/runs", json={"root": root})
            assert r.status_code == 403, (root, r.text)
            assert "not under" in r.json()["error"]
        assert http.post("/runs", json={"root": "missing"}).status_code == 400
        assert http.post("/runs", json={}).status_code == 400
        assert http.post("/runs", content=b"not json").status_code == 400
        assert http.post("/runs", json={"root": "alpha", "surface": "nope"}).status_code == 400
        assert http.post("/runs", content=b"{" + b" " * 70_000 + b"}").status_code == 413
    with httpx2.Client(base_url=server.url, timeout=WAIT) as anon:
        assert anon.post("/runs", json={"root": "alpha"}).status_code == 401
        assert anon.get("/runs").status_code == 401
        assert anon.get("/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_run_limit_is_503(server: Served) -> None:
    with admin(server) as http:
        ids = [http.post("/runs", json={"root": "gamma"}).json()["run_id"] for _ in range(3)]
        r = http.post("/runs", json={"root": "gamma"})
        assert r.status_code == 503 and "--max-runs" in r.json()["error"]
        assert http.delete(f"/runs/{ids[0]}").status_code == 204
        assert http.post("/runs", json={"root": "gamma"}).status_code == 201


def test_idle_run_expires(under: Path) -> None:
    env = {"LIVETOOLS_HTTP_TOKEN": ADMIN}
    with (
        serve_http("--runs-under", str(under), "--run-ttl", "1", env=env) as server,
        admin(server) as http,
    ):
        run = http.post("/runs", json={"root": "alpha"}).json()
        deadline = time.monotonic() + WAIT
        while run["run_id"] in {r["id"] for r in http.get("/runs").json()["runs"]}:
            assert time.monotonic() < deadline, "the idle run was never closed"
            time.sleep(0.2)
        assert mcp_post(server, run["url"], run["token"]) == 404
        metrics = http.get("/metrics").text
        assert 'livetools_http_runs_closed_total{reason="idle"} 1' in metrics


@pytest.mark.anyio
async def test_sigterm_closes_every_run_and_leaves_no_process(server: Served) -> None:
    pids: list[int] = []
    with admin(server) as http:
        runs = [http.post("/runs", json={"root": name}).json() for name in ("alpha", "beta")]
    for run in runs:
        async with connect("modern", f"{server.url}{run['url']}", token=run["token"]) as conn:
            out = await conn.call("stubborn")
            assert not out.is_error, text_of(out)
            pids += (out.meta or {})["livetools/data"]["pids"]
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(WAIT)
    print(f"SIGTERM to exit with 2 live runs: {time.monotonic() - started:.2f} s")
    assert_gone(pids, within=5)


def test_healthz_and_metrics(server: Served) -> None:
    with httpx2.Client(base_url=server.url, timeout=WAIT) as anon:
        assert anon.get("/healthz").json()["ok"] is True
        assert anon.get("/metrics").status_code == 401
    with admin(server) as http:
        http.post("/runs", json={"root": "alpha"})
        text = http.get("/metrics").text
    assert "# TYPE livetools_http_requests_total counter" in text
    assert 'livetools_http_requests_total{route="runs",method="POST",status="201"} 1' in text
    assert "livetools_http_runs_open 1" in text
    assert 'livetools_http_request_seconds_bucket{route="runs",le="+Inf"}' in text
    assert "n1-" not in text  # run ids are never labels
