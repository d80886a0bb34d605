"""The gate of `serve --http`: Host (421) and Origin (403) against DNS rebinding, bearer tokens
(401, compared in constant time, only from the Authorization header), the request body limit
(413), no open server beyond loopback, tokens never in the log, and a harness's own
token verifier."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.core.http_serving import WAIT, connect, serve_http, text_of
from tests.core.mcp_conn import INITIALIZE, MCP_HEADERS
from tests.support import plugin_env

TOKEN = "s3cret-token-for-the-test-0123456789"


def post(url: str, body: Any = INITIALIZE, **headers: str) -> httpx2.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    with httpx2.Client(timeout=WAIT) as client:
        return client.post(url, content=data, headers={**MCP_HEADERS, **headers})


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Loopback, no token: the single run is open, the gate still checks Host and Origin."""
    with serve_http("--no-token", "--root", str(tmp_path_factory.mktemp("open"))) as server:
        yield server


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("tok")
    env = {"LIVETOOLS_HTTP_TOKEN": TOKEN, "LIVETOOLS_HTTP_LOG": "info"}
    with serve_http("--root", str(root), env=env) as server:
        yield server


def test_wrong_host_is_421(open_server: Any) -> None:
    r = post(f"{open_server.url}/mcp", Host="evil.example:80")
    assert r.status_code == 421
    r = post(f"{open_server.url}/mcp", Host=f"localhost:{open_server.url.rsplit(':', 1)[1]}")
    assert r.status_code == 200


def test_wrong_origin_is_403(open_server: Any) -> None:
    assert post(f"{open_server.url}/mcp", Origin="http://evil.example").status_code == 403
    assert post(f"{open_server.url}/mcp", Origin="null").status_code == 403
    assert post(f"{open_server.url}/mcp", Origin="http://localhost:5173").status_code == 200


def test_oversize_body_is_413(open_server: Any) -> None:
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * (5 << 20) + b'"}'
    assert post(f"{open_server.url}/mcp", big).status_code == 413


def test_missing_or_wrong_token_is_401(token_server: Any) -> None:
    url = f"{token_server.url}/mcp"
    r = post(url)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert post(url, Authorization="Bearer nope").status_code == 401
    assert post(url, Authorization=f"Basic {TOKEN}").status_code == 401
    assert post(url, Authorization=f"Bearer {TOKEN[:-1]}").status_code == 401
    # A token in the query string is not a credential (it would end up in logs and history).
    assert post(f"{url}?token={TOKEN}").status_code == 401
    assert post(url, Authorization=f"Bearer {TOKEN}").status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_token_opens_the_run_and_never_reaches_the_log(era: str, token_server: Any) -> None:
    async with connect(era, f"{token_server.url}/mcp", token=TOKEN) as conn:
        out = await conn.call("echo", {"text": "authorized"})
        assert text_of(out) == "authorized"
    assert "/mcp" in token_server.log  # the request log is on
    assert TOKEN not in token_server.log


def test_no_open_server_beyond_loopback(tmp_path: Path) -> None:
    """--no-token is loopback only, and a run server always has an admin token."""
    command = [sys.executable, "-m", "livetools.faces.cli", "serve", "--http", "0.0.0.0:0"]
    env = plugin_env()
    env.pop("LIVETOOLS_HTTP_TOKEN", None)
    done = subprocess.run(
        [*command, "--no-token", "--root", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2
    assert "--no-token serves anyone who reaches 0.0.0.0" in done.stderr
    command[-1] = "127.0.0.1:0"
    done = subprocess.run(
        [*command, "--no-token", "--runs-under", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2 and "--runs-under needs an admin token" in done.stderr


def test_beyond_loopback_with_a_token_checks_it(tmp_path: Path) -> None:
    env = {"LIVETOOLS_HTTP_TOKEN": TOKEN}
    with serve_http("--root", str(tmp_path), env=env, bind="0.0.0.0:0") as server:
        port = server.url.rsplit(":", 1)[1]
        url = f"http://127.0.0.1:{port}/mcp"
        assert post(url).status_code == 401
        assert post(url, Authorization=f"Bearer {TOKEN}").status_code == 200
        # Any Host but loopback names and --allow-host ones is refused, even when bound widely.
        assert post(url, Host="evil.example", Authorization=f"Bearer {TOKEN}").status_code == 421


VERIFIER = '''
from mcp.server.auth.provider import AccessToken

class Verifier:
    """A harness's verifier: "admin" manages runs, "reader" opens every run."""

    async def verify_token(self, token):
        scopes = {"admin": ["livetools:admin"], "reader": ["livetools:runs"]}.get(token)
        if scopes is None:
            return None
        return AccessToken(token=token, client_id="harness", scopes=scopes)
'''


def test_harness_token_verifier(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "harness_auth.py").write_text(textwrap.dedent(VERIFIER))
    under = tmp_path / "runs"
    (under / "proj").mkdir(parents=True)
    env = plugin_env()
    env["PYTHONPATH"] = f"{hooks}:{env['PYTHONPATH']}"
    env.pop("LIVETOOLS_HTTP_TOKEN", None)
    args = ["--runs-under", str(under), "--token-verifier", "harness_auth:Verifier"]
    with serve_http(*args, env={"PYTHONPATH": env["PYTHONPATH"]}) as server:
        with httpx2.Client(base_url=server.url, timeout=WAIT) as http:
            assert http.post("/runs", json={"root": "proj"}).status_code == 401
            # A token the verifier vouches for, without the scope: 403 (RFC 6750
            # insufficient_scope), so a client asks for more rather than logging in again.
            reader = {"Authorization": "Bearer reader"}
            assert http.post("/runs", json={"root": "proj"}, headers=reader).status_code == 403
            made = http.post(
                "/runs", json={"root": "proj"}, headers={"Authorization": "Bearer admin"}
            )
            assert made.status_code == 201, made.text
            url = made.json()["url"]
        assert post(f"{server.url}{url}").status_code == 401
        assert post(f"{server.url}{url}", Authorization="Bearer admin").status_code == 403
        assert post(f"{server.url}{url}", Authorization="Bearer nobody").status_code == 401
        assert post(f"{server.url}{url}", Authorization="Bearer reader").status_code == 200
        token = made.json()["token"]
        assert post(f"{server.url}{url}", Authorization=f"Bearer {token}").status_code == 200


@pytest.mark.anyio
async def test_fastmcp_client_with_a_bearer_token(token_server: Any) -> None:
    import anyio
    from fastmcp import Client as FastClient

    with anyio.fail_after(WAIT):
        async with FastClient(f"{token_server.url}/mcp", auth=TOKEN) as client:
            result = await client.call_tool("echo", {"text": "fast"})
    assert "fast" in "".join(getattr(c, "text", "") for c in result.content)
