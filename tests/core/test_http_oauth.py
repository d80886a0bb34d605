"""A harness's OAuth tokens over `serve --http`: with `--token-verifier` and `--auth-issuer`, every
MCP endpoint is an RFC 9728 protected resource. A 401 names its metadata and the scope to ask
for; the metadata names the authorization server; the `mcp` SDK's own OAuth client follows that
from the 401 to a token and calls a tool with it, in both eras. The authorization server is a
stand-in (an httpx mock at https://auth.example) that mints tokens recording what the client
asked for (scope, RFC 8707 resource), which the verifier below reads back, so the test sees that
the client asked for this run's scope and this endpoint as the audience."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.core.http_serving import WAIT, Served, connect, serve_http, text_of
from tests.core.mcp_conn import INITIALIZE, MCP_HEADERS
from tests.support import plugin_env

ISSUER = "https://auth.example"
ADMIN = "admin-token-for-the-oauth-test-0123456789"
WELL_KNOWN = "/.well-known/oauth-protected-resource"

# Tokens are "v1|<scopes>|<resource>": what the stand-in server granted, read back by the
# verifier (a real one would introspect or check a JWT).
VERIFIER = """
from mcp.server.auth.provider import AccessToken

class Verifier:
    async def verify_token(self, token):
        version, _, rest = token.partition("|")
        if version != "v1":
            return None
        scopes, _, resource = rest.partition("|")
        return AccessToken(
            token=token, client_id="c1", scopes=scopes.split(), resource=resource or None
        )
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    """A run server whose runs take the harness's OAuth tokens; one run open: (server, url)."""
    base = tmp_path_factory.mktemp("oauth")
    hooks = base / "hooks"
    hooks.mkdir()
    (hooks / "harness_oauth.py").write_text(textwrap.dedent(VERIFIER))
    under = base / "runs"
    (under / "proj").mkdir(parents=True)
    (under / "proj" / "a.py").write_text("def f(a, b):\n    return a + b\n")
    pythonpath = f"{hooks}:{plugin_env()['PYTHONPATH']}"
    args = ["--runs-under", str(under), "--token-verifier", "harness_oauth:Verifier"]
    args += ["--auth-issuer", ISSUER]
    env = {"PYTHONPATH": pythonpath, "LIVETOOLS_HTTP_TOKEN": ADMIN}
    with serve_http(*args, env=env) as server:
        made = httpx2.post(
            f"{server.url}/runs",
            json={"root": "proj"},
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=WAIT,
        )
        assert made.status_code == 201, made.text
        yield server, made.json()["url"]


def post(url: str, token: str | None = None) -> httpx2.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, content=json.dumps(INITIALIZE), headers=headers, timeout=WAIT)


def test_a_401_points_at_the_runs_metadata(served: tuple[Served, str]) -> None:
    server, path = served
    run_id = path.split("/")[2]
    refused = post(f"{server.url}{path}")
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer resource_metadata=")  # no token, so no error code
    # Read the way the SDK's client reads it.
    where = extract_resource_metadata_from_www_auth(refused)
    assert where is not None and where == f"{server.url}{WELL_KNOWN}{path}", challenge
    assert f'scope="livetools:run:{run_id}"' in challenge
    metadata = httpx2.get(where, timeout=WAIT).json()
    assert metadata["resource"] == f"{server.url}{path}"
    assert metadata["authorization_servers"] == [ISSUER]
    assert metadata["bearer_methods_supported"] == ["header"]
    assert metadata["scopes_supported"] == [f"livetools:run:{run_id}", "livetools:runs"]
    # The server as a whole, and the runs API's 401.
    whole = httpx2.get(f"{server.url}{WELL_KNOWN}", timeout=WAIT).json()
    assert whole["resource"] == server.url
    assert whole["scopes_supported"] == ["livetools:admin", "livetools:runs"]
    listed = httpx2.get(f"{server.url}/runs", timeout=WAIT)
    assert listed.status_code == 401
    assert f'resource_metadata="{server.url}{WELL_KNOWN}"' in listed.headers["www-authenticate"]
    # No lookup behind the metadata (a proxy may send any run's here), but only our paths.
    assert httpx2.get(f"{server.url}{WELL_KNOWN}/runs/n2-x/mcp", timeout=WAIT).status_code == 200
    assert httpx2.get(f"{server.url}{WELL_KNOWN}/etc/passwd", timeout=WAIT).status_code == 404


def test_scope_and_audience_are_checked(served: tuple[Served, str]) -> None:
    server, path = served
    run_id = path.split("/")[2]
    url = f"{server.url}{path}"
    assert post(url, f"v1|livetools:run:{run_id}|{url}").status_code == 200
    assert post(url, "v1|livetools:runs|").status_code == 200  # no audience: the verifier's call
    # Issued for another resource: not accepted here (no token passthrough).
    elsewhere = post(url, f"v1|livetools:runs|{server.url}/runs/other/mcp")
    assert elsewhere.status_code == 401
    # A good token without this run's scope: 403 insufficient_scope, naming the scope.
    other = post(url, "v1|livetools:run:other|")
    assert other.status_code == 403
    challenge = other.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert f'scope="livetools:run:{run_id}"' in challenge
    # The runs API is the server's own resource, with its own scope.
    runs = f"{server.url}/runs"
    admin = f"v1|livetools:admin|{server.url}"
    assert httpx2.get(runs, headers={"Authorization": f"Bearer {admin}"}, timeout=WAIT).is_success
    for token, status in [(f"v1|livetools:admin|{url}", 401), ("v1|livetools:runs|", 403)]:
        assert (
            httpx2.get(runs, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT).status_code
            == status
        )
    bad = post(url, "not-a-token")
    assert bad.status_code == 401
    assert bad.headers["www-authenticate"].startswith('Bearer error="invalid_token", ')


class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class AuthServer:
    """The stand-in authorization server: metadata, registration, and a token endpoint that
    mints "v1|<scope asked>|<resource asked>"."""

    def __init__(self) -> None:
        self.asked: dict[str, str] = {}
        self.redirect: dict[str, str] = {}

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            return httpx2.Response(
                200,
                json={
                    "issuer": ISSUER,
                    "authorization_endpoint": f"{ISSUER}/authorize",
                    "token_endpoint": f"{ISSUER}/token",
                    "registration_endpoint": f"{ISSUER}/register",
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                },
            )
        if path == "/register":
            return httpx2.Response(201, json={**json.loads(request.content), "client_id": "c1"})
        if path == "/token":
            form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
            assert form["code"] == "the-code"
            resource = form.get("resource", "")
            token = f"v1|{self.asked.get('scope', '')}|{resource}"
            return httpx2.Response(
                200, json={"access_token": token, "token_type": "Bearer", "expires_in": 3600}
            )
        return httpx2.Response(404)

    async def on_redirect(self, url: str) -> None:
        """The browser step: the user approves at once."""
        self.asked = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}

    async def on_callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code="the-code", state=self.asked.get("state"))


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_the_sdk_client_follows_the_401_to_a_token(
    served: tuple[Served, str], era: str
) -> None:
    server, path = served
    run_id = path.split("/")[2]
    url = f"{server.url}{path}"
    auth_server = AuthServer()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=["http://127.0.0.1:9/callback"],  # type: ignore[list-item]
            client_name="livetools test",
        ),
        storage=Memory(),
        redirect_handler=auth_server.on_redirect,
        callback_handler=auth_server.on_callback,
    )
    http = httpx2.AsyncClient(
        auth=provider,
        mounts={ISSUER: httpx2.MockTransport(auth_server.handle)},
        timeout=httpx2.Timeout(WAIT),
    )
    async with http, connect(era, url, http=http) as conn:
        out = await conn.call("ast_grep", {"pattern": "$A + $B"})
    assert not out.is_error, text_of(out)
    assert "a.py:2: a + b" in text_of(out)
    # The client asked for what the 401 and the metadata named.
    assert f"livetools:run:{run_id}" in auth_server.asked["scope"].split()
    assert auth_server.asked["resource"] == url


def test_without_an_issuer_there_is_no_metadata(tmp_path: Path) -> None:
    with serve_http("--root", str(tmp_path), env={"LIVETOOLS_HTTP_TOKEN": ADMIN}) as server:
        assert httpx2.get(f"{server.url}{WELL_KNOWN}/mcp", timeout=WAIT).status_code == 404
        refused = post(f"{server.url}/mcp")
        assert refused.status_code == 401
        assert "resource_metadata" not in refused.headers["www-authenticate"]


def issuer_refused(*args: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "serve", "--http", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=plugin_env(),
    )
    assert done.returncode == 2, done.stderr
    return done.stderr


def test_the_setup_is_checked(tmp_path: Path) -> None:
    assert "--auth-issuer needs --token-verifier" in issuer_refused(
        "--root", str(tmp_path), "--auth-issuer", ISSUER
    )
    assert "need --auth-issuer" in issuer_refused(
        "--root", str(tmp_path), "--resource-url", "https://mcp.example"
    )


class Fixed:
    """A verifier that vouches for one token with fixed scopes, resource and expiry."""

    def __init__(self, **fields: object) -> None:
        self.fields = fields

    async def verify_token(self, token: str) -> object:
        from mcp.server.auth.provider import AccessToken

        return AccessToken(token=token, client_id="c", **self.fields) if token == "t" else None  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_gate_verdicts() -> None:
    """Required scopes, expiry and audience, on the gate alone."""
    import time

    from livetools.faces.mcp.http.security import Gate, ProtectedResource

    base = "https://mcp.example"
    required = ProtectedResource(ISSUER, base, ("org:tools",))

    async def verdict(metadata: ProtectedResource | None, **fields: object) -> str:
        gate = Gate.build("127.0.0.1", verifier=Fixed(**fields), resource=metadata)  # type: ignore[arg-type]
        return await gate.run("t", "r1", None, single=False, audience=(base, "/runs/r1/mcp"))

    assert await verdict(None, scopes=["livetools:run:r1"]) == "ok"
    assert await verdict(required, scopes=["livetools:run:r1"]) == "forbidden"
    assert await verdict(required, scopes=["livetools:run:r1", "org:tools"]) == "ok"
    assert await verdict(None, scopes=["livetools:runs"], expires_at=int(time.time()) - 5) == (
        "unauthorized"
    )
    aimed = {"scopes": ["livetools:runs"]}
    assert await verdict(None, **aimed, resource="https://else.example") == "ok"  # no metadata
    lax = ProtectedResource(ISSUER, base)
    assert await verdict(lax, **aimed, resource="https://else.example") == "unauthorized"
    assert await verdict(lax, **aimed, resource=f"{base}/runs/r1/mcp") == "ok"
    assert await verdict(lax, **aimed, resource=f"{base}/") == "ok"
    assert await verdict(lax, **aimed, resource=f"{base}/runs/r2/mcp") == "unauthorized"


def test_auth_settings_carried_by_the_verifier() -> None:
    """A harness that builds its verifier in Python hands the SDK's AuthSettings with it."""
    import argparse

    from mcp.server.auth.settings import AuthSettings

    from livetools.faces.mcp.http.command import SetupError, load_resource

    verifier = Fixed(scopes=[])
    verifier.auth_settings = AuthSettings(  # type: ignore[attr-defined]
        issuer_url=ISSUER,  # type: ignore[arg-type]
        resource_server_url="https://mcp.example/mcp",  # type: ignore[arg-type]
        required_scopes=["org:tools"],
        validate_token_resource=False,
    )
    flags = argparse.Namespace(auth_issuer=None, resource_url=None, required_scope=[])
    resource = load_resource(flags, verifier)
    assert (resource.issuer, resource.origin, resource.required_scopes) == (
        ISSUER,
        "https://mcp.example",
        ("org:tools",),
    )
    flags.auth_issuer = "http://auth.example"  # not https, not loopback
    with pytest.raises(SetupError, match="HTTPS"):
        load_resource(flags, verifier)
