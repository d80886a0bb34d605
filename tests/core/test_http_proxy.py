"""Two run servers behind Debian's nginx with `docs/http-nginx.conf`: runs created through the
proxy land on the instance their id names, MCP calls follow them there in both eras, and an
instance that dies gives clean errors (502) for its own runs only."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx2
import pytest

from tests.core.http_serving import WAIT, Served, connect, serve_http, text_of
from tests.core.mcp_conn import INITIALIZE, MCP_HEADERS
from tests.support import REPO, plugin_env, require_binary

ADMIN = "admin-token-behind-the-proxy"
CONF = REPO / "docs" / "http-nginx.conf"
INITIALIZE_BODY = json.dumps(INITIALIZE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.1)


@contextmanager
def start_cluster(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, dict[str, Served]]]:
    """nginx on a loopback port in front of instances n1 and n2 (started with `extra`); the
    proxy's URL is known before the instances start, so they can be told it."""
    nginx = require_binary("nginx", "apt-get install nginx (Debian's package)")
    under = tmp_path / "runs"
    (under / "proj").mkdir(parents=True)
    port = free_port()
    proxy = f"http://127.0.0.1:{port}"
    env = {"LIVETOOLS_HTTP_TOKEN": ADMIN, **(env or {})}
    args = [a.replace("@PROXY@", proxy) for a in extra]
    with ExitStack() as stack:
        instances = {
            name: stack.enter_context(
                serve_http("--runs-under", str(under), "--instance", name, *args, env=env)
            )
            for name in ("n1", "n2")
        }
        prefix = tmp_path / "nginx"
        prefix.mkdir()
        conf = CONF.read_text()
        conf = conf.replace("@LISTEN@", f"127.0.0.1:{port}")
        for name, served in instances.items():
            conf = conf.replace(f"@{name.upper()}@", served.url.removeprefix("http://"))
        (prefix / "nginx.conf").write_text(conf)
        proc = subprocess.Popen(
            [nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_listening(port)
            yield proxy, instances
        finally:
            proc.terminate()
            proc.wait(WAIT)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    with start_cluster(tmp_path) as (proxy, instances):
        yield proxy, dict(instances)


@pytest.mark.anyio
async def test_runs_follow_their_instance_and_a_dead_one_fails_alone(
    cluster: tuple[str, dict[str, object]],
) -> None:
    proxy, instances = cluster
    auth = {"Authorization": f"Bearer {ADMIN}"}
    with httpx2.Client(base_url=proxy, timeout=WAIT, headers=auth) as http:
        runs = [http.post("/runs", json={"root": "proj"}).json() for _ in range(4)]
    by_instance: dict[str, list[dict[str, str]]] = {"n1": [], "n2": []}
    for run in runs:
        by_instance[run["run_id"].split("-")[0]].append(run)
    assert by_instance["n1"] and by_instance["n2"], runs  # both instances took runs
    for name, served in instances.items():
        with httpx2.Client(base_url=served.url, timeout=WAIT, headers=auth) as http:  # type: ignore[attr-defined]
            held = {r["id"] for r in http.get("/runs").json()["runs"]}
        assert held == {r["run_id"] for r in by_instance[name]}

    timings: dict[str, float] = {}
    for era in ("handshake", "modern"):
        for run in runs:
            async with connect(era, f"{proxy}{run['url']}", token=run["token"]) as conn:
                out = await conn.call("echo", {"text": run["run_id"]})
                assert text_of(out) == run["run_id"]
    run = by_instance["n1"][0]
    direct = instances["n1"].url  # type: ignore[attr-defined]
    for where, base in (("direct", direct), ("proxy", proxy)):
        async with connect("modern", f"{base}{run['url']}", token=run["token"]) as conn:
            await conn.call("echo", {"text": "warm"})
            started = time.perf_counter()
            for _ in range(20):
                await conn.call("echo", {"text": "x"})
            timings[where] = (time.perf_counter() - started) / 20 * 1000
    print(
        f"echo per call: direct {timings['direct']:.1f} ms, through nginx {timings['proxy']:.1f} ms"
    )

    dead = instances["n2"]
    dead.proc.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
    dead.proc.wait(WAIT)  # type: ignore[attr-defined]
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    with httpx2.Client(base_url=proxy, timeout=WAIT) as http:
        for run in by_instance["n2"]:
            r = http.post(
                run["url"],
                content=ping,
                headers={**headers, "Authorization": f"Bearer {run['token']}"},
            )
            assert r.status_code == 502
        assert http.post("/runs/n3-abc/mcp", content=ping, headers=headers).status_code == 404
    for run in by_instance["n1"]:
        async with connect("modern", f"{proxy}{run['url']}", token=run["token"]) as conn:
            assert text_of(await conn.call("echo", {"text": "alive"})) == "alive"
    with httpx2.Client(base_url=proxy, timeout=WAIT, headers=auth) as http:
        made = http.post("/runs", json={"root": "proj"})  # the live instance takes new runs
        assert made.status_code == 201 and made.json()["run_id"].startswith("n1-")


def test_oauth_metadata_through_the_proxy(tmp_path: Path) -> None:
    """Instances told the proxy's origin (--resource-url) answer RFC 9728 metadata for any run
    through it: the 401 of a run on either instance points at the proxy, the metadata names the
    run's URL there, and a token issued for that URL opens the run."""
    from tests.core.test_http_oauth import ISSUER, VERIFIER, WELL_KNOWN

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "harness_oauth.py").write_text(textwrap.dedent(VERIFIER))
    oauth = ["--token-verifier", "harness_oauth:Verifier", "--auth-issuer", ISSUER]
    oauth += ["--resource-url", "@PROXY@"]  # nginx passes $host, which has no port
    pythonpath = f"{hooks}:{plugin_env()['PYTHONPATH']}"
    with start_cluster(tmp_path, *oauth, env={"PYTHONPATH": pythonpath}) as (proxy, _):
        auth = {"Authorization": f"Bearer {ADMIN}"}
        with httpx2.Client(base_url=proxy, timeout=WAIT) as http:
            runs = [
                http.post("/runs", json={"root": "proj"}, headers=auth).json() for _ in range(4)
            ]
            assert {r["run_id"].split("-")[0] for r in runs} == {"n1", "n2"}, runs
            for run in runs:
                url = f"{proxy}{run['url']}"
                refused = http.post(run["url"], content=INITIALIZE_BODY, headers=MCP_HEADERS)
                assert refused.status_code == 401
                where = f"{proxy}{WELL_KNOWN}{run['url']}"
                assert f'resource_metadata="{where}"' in refused.headers["www-authenticate"]
                metadata = http.get(where)
                assert metadata.status_code == 200, metadata.text
                assert metadata.json()["resource"] == url
                token = f"v1|livetools:run:{run['run_id']}|{url}"
                opened = http.post(
                    run["url"],
                    content=INITIALIZE_BODY,
                    headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
                )
                assert opened.status_code == 200, opened.text
