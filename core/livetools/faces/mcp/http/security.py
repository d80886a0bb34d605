"""Who may reach what: Host and Origin checks against DNS rebinding, bearer tokens compared in
constant time, and the hook through which a harness plugs in its own token verifier.

Tokens only ever arrive in the `Authorization` header (never a query string, so never in a URL
or an access log) and are never logged."""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

log = logging.getLogger("livetools.serve.http")

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
ADMIN_SCOPE = "livetools:admin"  # a verified token with this scope manages runs
ANY_RUN_SCOPE = "livetools:runs"  # ... with this one opens every run
RUN_SCOPE_PREFIX = "livetools:run:"  # ... with "livetools:run:<id>" opens that run


class TokenVerifier(Protocol):
    """The SDK's `mcp.server.auth.provider.TokenVerifier`: a harness's own token check (OAuth
    introspection, JWT validation). A verified token opens the single run of `--root`; with
    `--runs-under` its scopes say what it opens (`ADMIN_SCOPE`, `ANY_RUN_SCOPE`,
    `RUN_SCOPE_PREFIX<id>`)."""

    async def verify_token(self, token: str) -> AccessToken | None: ...


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
    ) -> Gate:
        return cls(
            bind_host,
            frozenset(allow_hosts),
            frozenset(o.rstrip("/").lower() for o in allow_origins),
            admin_token,
            verifier,
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

    async def verified(self, token: str) -> AccessToken | None:
        if self.verifier is None:
            return None
        try:
            access = await self.verifier.verify_token(token)
        except Exception as exc:  # the harness's code: a failure is a refusal, never a 500
            log.warning("the token verifier failed: %s", type(exc).__name__)
            return None
        if access is None:
            return None
        if access.expires_at is not None:
            import time

            if access.expires_at < time.time():
                return None
        return access

    async def admits_admin(self, token: str | None) -> bool:
        if token is None:
            return False
        if self.admin_token is not None and same_secret(token, self.admin_token):
            return True
        access = await self.verified(token)
        return access is not None and ADMIN_SCOPE in access.scopes

    async def admits_run(
        self, token: str | None, run_id: str, run_token: str | None, *, single: bool
    ) -> bool:
        """The run's own token opens it (and nothing else). Without any token configured
        (loopback only) the single run is open."""
        if run_token is None and not self.has_tokens:
            return True
        if token is None:
            return False
        if run_token is not None and same_secret(token, run_token):
            return True
        access = await self.verified(token)
        if access is None:
            return False
        return (
            single
            or ANY_RUN_SCOPE in access.scopes
            or f"{RUN_SCOPE_PREFIX}{run_id}" in access.scopes
        )
