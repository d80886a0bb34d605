"""Who may reach what: Host and Origin checks against DNS rebinding, bearer tokens compared in
constant time, the hook through which a harness plugs in its own token verifier, and the OAuth
protected-resource metadata (RFC 9728) that tells a client where such tokens come from.

Tokens only ever arrive in the `Authorization` header (never a query string, so never in a URL
or an access log) and are never logged."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

log = logging.getLogger("livetools.serve.http")

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
ADMIN_SCOPE = "livetools:admin"  # a verified token with this scope manages runs
ANY_RUN_SCOPE = "livetools:runs"  # ... with this one opens every run
RUN_SCOPE_PREFIX = "livetools:run:"  # ... with "livetools:run:<id>" opens that run
WELL_KNOWN = "/.well-known/oauth-protected-resource"

# What a request's token earns: the route, a 401 (no token, or one nobody vouches for: log in),
# or a 403 (a good token without the scope this needs: ask for more, RFC 6750 insufficient_scope).
Verdict = Literal["ok", "unauthorized", "forbidden"]


class TokenVerifier(Protocol):
    """The SDK's `mcp.server.auth.provider.TokenVerifier`: a harness's own token check (OAuth
    introspection, JWT validation). A verified token opens the single run of `--root`; with
    `--runs-under` its scopes say what it opens (`ADMIN_SCOPE`, `ANY_RUN_SCOPE`,
    `RUN_SCOPE_PREFIX<id>`)."""

    async def verify_token(self, token: str) -> AccessToken | None: ...


@dataclass(frozen=True)
class ProtectedResource:
    """RFC 9728 metadata for a harness's OAuth tokens: which authorization server issues the
    tokens its verifier accepts, which scopes a client should ask for. A client that gets a 401
    reads the metadata URL from `WWW-Authenticate`, logs in there and comes back with a token.

    Every MCP endpoint is its own resource (`<origin>/mcp`, `<origin>/runs/<id>/mcp`), with its
    metadata at the RFC's path-suffixed URL (`/.well-known/oauth-protected-resource/runs/<id>/mcp`)
    and the server as a whole at the bare one. Answering needs no lookup, so any instance behind
    a proxy that routes only `/runs/<instance>-*` answers for every run alike."""

    issuer: str
    origin: str | None = None  # the public origin clients use (a proxy's); else the request's
    required_scopes: tuple[str, ...] = ()

    def base(self, scheme: str, host: str) -> str:
        return self.origin or f"{scheme}://{host}"

    def document(self, base: str, path: str, single: bool) -> dict[str, Any] | None:
        """The metadata of the resource at `path` ("" for the server), None if not one of ours."""
        from mcp.shared.auth import ProtectedResourceMetadata

        scopes = list(self.required_scopes)
        parts = path.strip("/").split("/")
        if path == "":
            scopes += [] if single else [ADMIN_SCOPE, ANY_RUN_SCOPE]
        elif single and path == "/mcp":
            pass
        elif not single and len(parts) == 3 and parts[0] == "runs" and parts[2] == "mcp":
            if not parts[1] or not all(c.isalnum() or c in "-_." for c in parts[1]):
                return None
            scopes += [f"{RUN_SCOPE_PREFIX}{parts[1]}", ANY_RUN_SCOPE]
        else:
            return None
        # Strings, validated by the model: its URLs keep an empty path (no trailing "/"), so
        # `resource` is exactly the URL the client used, as RFC 9728 section 3.3 has it compared.
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": base + path,
                "authorization_servers": [self.issuer],
                "scopes_supported": scopes or None,
                "resource_name": "livetools" if path == "" else "livetools run",
            }
        )
        return metadata.model_dump(mode="json", exclude_none=True)

    def challenge(
        self, base: str, path: str, verdict: Verdict, scopes: Iterable[str], *, token_sent: bool
    ) -> str:
        """`WWW-Authenticate` for a refusal of `path`: where the metadata is, which scope to ask
        for, and (RFC 6750 section 3.1) why, when a token was sent."""
        parts = [f'resource_metadata="{base}{WELL_KNOWN}{path}"']
        wanted = " ".join([*self.required_scopes, *scopes])
        if wanted:
            parts.append(f'scope="{wanted}"')
        if verdict == "forbidden":
            parts.insert(0, 'error="insufficient_scope"')
        elif token_sent:
            parts.insert(0, 'error="invalid_token"')
        return "Bearer " + ", ".join(parts)

    def audience_ok(self, access: AccessToken, base: str, path: str) -> bool:
        """A token its verifier says was issued for a resource (RFC 8707) is good only for that
        resource: this endpoint or the server as a whole; no passthrough of other audiences."""
        if not access.resource:
            return True
        given = access.resource.rstrip("/")
        return given in (base + path, base)


def parse_origin(value: str) -> str:
    """`https://mcp.example.org[:port]` (a trailing `/mcp` allowed: the single run's URL): the
    endpoints' paths are fixed, so only the origin can differ behind a proxy."""
    parts = urlsplit(value.strip())
    ok = parts.scheme in ("http", "https") and parts.netloc and not parts.query
    if not ok or parts.path.rstrip("/") not in ("", "/mcp"):
        raise ValueError(f"{value}: expected an origin such as https://mcp.example.org")
    return f"{parts.scheme}://{parts.netloc}".lower()


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """`example.org:8080` → `example.org`; `[::1]:80` → `[::1]` (the port may be anything:
    a proxy in front forwards its own)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


def bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


@dataclass
class Gate:
    """The checks every request passes before it reaches a route."""

    bind_host: str
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()
    admin_token: str | None = None
    verifier: TokenVerifier | None = None
    resource: ProtectedResource | None = None
    _hosts: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        hosts = {host_name(h) for h in self.allowed_hosts} | LOOPBACK_NAMES
        bound = host_name(self.bind_host if ":" not in self.bind_host else f"[{self.bind_host}]")
        if bound not in ("0.0.0.0", "[::]"):
            hosts.add(bound)
        self._hosts = frozenset(hosts)

    @classmethod
    def build(
        cls,
        bind_host: str,
        *,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
        admin_token: str | None = None,
        verifier: TokenVerifier | None = None,
        resource: ProtectedResource | None = None,
    ) -> Gate:
        return cls(
            bind_host,
            frozenset(allow_hosts),
            frozenset(o.rstrip("/").lower() for o in allow_origins),
            admin_token,
            verifier,
            resource,
        )

    @property
    def has_tokens(self) -> bool:
        return self.admin_token is not None or self.verifier is not None

    def host_ok(self, host: str | None) -> bool:
        return host is not None and host_name(host) in self._hosts

    def origin_ok(self, origin: str | None) -> bool:
        """No Origin: not a browser, fine. Else one of ours (any port) or allowed by name."""
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        scheme, sep, rest = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and host_name(rest) in self._hosts

    async def verified(self, token: str, audience: tuple[str, str] | None) -> AccessToken | None:
        """The verifier's word on a token, None for a refusal. `audience` is (base, path) of the
        endpoint asked for, checked against the token's resource when metadata is served."""
        if self.verifier is None:
            return None
        try:
            access = await self.verifier.verify_token(token)
        except Exception as exc:  # the harness's code: a failure is a refusal, never a 500
            log.warning("the token verifier failed: %s", type(exc).__name__)
            return None
        if access is None:
            return None
        if access.expires_at is not None and access.expires_at < time.time():
            return None
        resource = self.resource
        if (
            resource is not None
            and audience is not None
            and not resource.audience_ok(access, *audience)
        ):
            return None
        return access

    def _scoped(self, access: AccessToken, *needed: str) -> Verdict:
        """A verified token must carry the server's required scopes and one of `needed` (none
        needed: any)."""
        required = self.resource.required_scopes if self.resource is not None else ()
        if any(s not in access.scopes for s in required):
            return "forbidden"
        if needed and not any(s in access.scopes for s in needed):
            return "forbidden"
        return "ok"

    async def admin(self, token: str | None, audience: tuple[str, str] | None = None) -> Verdict:
        if token is None:
            return "unauthorized"
        if self.admin_token is not None and same_secret(token, self.admin_token):
            return "ok"
        access = await self.verified(token, audience)
        return "unauthorized" if access is None else self._scoped(access, ADMIN_SCOPE)

    async def run(
        self,
        token: str | None,
        run_id: str,
        run_token: str | None,
        *,
        single: bool,
        audience: tuple[str, str] | None = None,
    ) -> Verdict:
        """The run's own token opens it (and nothing else). Without any token configured
        (loopback only) the single run is open."""
        if run_token is None and not self.has_tokens:
            return "ok"
        if token is None:
            return "unauthorized"
        if run_token is not None and same_secret(token, run_token):
            return "ok"
        access = await self.verified(token, audience)
        if access is None:
            return "unauthorized"
        if single:
            return self._scoped(access)
        return self._scoped(access, ANY_RUN_SCOPE, f"{RUN_SCOPE_PREFIX}{run_id}")
