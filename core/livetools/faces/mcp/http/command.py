"""The `serve --http` command line: its options, the checks that refuse an unsafe setup, and
the uvicorn server that runs the app until SIGTERM (then every run closes, within a bound).

Tokens come from the environment (`LIVETOOLS_HTTP_TOKEN`) or a file (`--token-file`), never
from the command line, where any local user could read them in the process list."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

TOKEN_ENV = "LIVETOOLS_HTTP_TOKEN"
LOG_ENV = "LIVETOOLS_HTTP_LOG"

HELP = """serve --http: MCP streamable HTTP (both protocol eras on one URL). With --root, one run
at /mcp; with --runs-under DIR, a run server: POST /runs {root, surface, conversation_id,
options} with the admin token answers {run_id, url, token}; GET /runs; DELETE /runs/ID; each
run's MCP endpoint is /runs/ID/mcp and takes only its own token. The token (single run: the run's;
run server: the admin's) comes from $LIVETOOLS_HTTP_TOKEN or --token-file; clients send
"Authorization: Bearer TOKEN". Binding beyond loopback needs a token."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--http", metavar="[HOST:]PORT", help="serve MCP over HTTP (see below)")
    p.add_argument("--runs-under", metavar="DIR", help="--http: a run server for roots under DIR")
    p.add_argument("--instance", help="--http: run ids start with NAME- (routing by path)")
    p.add_argument("--token-file", metavar="FILE", help=f"--http: the token (else ${TOKEN_ENV})")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="--http: another Host name clients use (a proxy's), repeatable",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="--http: another browser Origin allowed, repeatable",
    )
    p.add_argument(
        "--run-ttl",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="--http: an idle run closes after this long (default 1800)",
    )
    p.add_argument("--max-runs", type=int, default=64, help="--http: open runs at most (503 past)")
    p.add_argument(
        "--token-verifier",
        metavar="MODULE:ATTR",
        help="--http: a TokenVerifier (or a factory of one) for the harness's tokens",
    )
    p.add_argument(
        "--auth-issuer",
        metavar="URL",
        help="--http: the OAuth authorization server issuing the verifier's tokens (serves RFC "
        "9728 metadata and points 401s at it)",
    )
    p.add_argument(
        "--resource-url",
        metavar="ORIGIN",
        help="--http: the public origin clients use (a proxy's), for the OAuth metadata",
    )
    p.add_argument(
        "--required-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="--http: a scope every verified token must carry (403 without), repeatable",
    )


class SetupError(Exception):
    pass


def parse_bind(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise SetupError(f"--http {value}: expected [HOST:]PORT, e.g. 8765 or 0.0.0.0:8765")
    return host, int(port)


def read_token(args: argparse.Namespace) -> str | None:
    if args.token_file:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SetupError(f"--token-file: {exc.strerror}") from None
        if not token:
            raise SetupError("--token-file: the file is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    return token or None


def load_verifier(spec: str | None) -> Any:
    if not spec:
        return None
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise SetupError("--token-verifier: expected MODULE:ATTR")
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise SetupError(f"--token-verifier {spec}: {exc}") from None
    verifier = found() if isinstance(found, type) or not hasattr(found, "verify_token") else found
    if not hasattr(verifier, "verify_token"):
        raise SetupError(f"--token-verifier {spec}: has no verify_token(token)")
    return verifier


def load_resource(args: argparse.Namespace, verifier: Any) -> Any:
    """The OAuth protected-resource settings, from the flags or from an `auth_settings` (the
    SDK's `AuthSettings`) that the harness's verifier carries; the flags win. Checked through
    the SDK's own validation (an https issuer, or loopback)."""
    from mcp.server.auth.routes import validate_issuer_url
    from mcp.server.auth.settings import AuthSettings

    from .security import ProtectedResource, parse_origin

    carried = getattr(verifier, "auth_settings", None)
    carried = carried if isinstance(carried, AuthSettings) else None
    issuer = args.auth_issuer or (str(carried.issuer_url) if carried else None)
    if issuer is None:
        if args.resource_url or args.required_scope:
            raise SetupError("--resource-url and --required-scope need --auth-issuer")
        return None
    if verifier is None:
        raise SetupError("--auth-issuer needs --token-verifier: the verifier checks its tokens")
    resource_url = args.resource_url or (carried.resource_server_url if carried else None)
    scopes = args.required_scope or (carried.required_scopes if carried else None)
    try:
        settings = AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]  # validated into an AnyHttpUrl
            resource_server_url=resource_url,  # type: ignore[arg-type]
            required_scopes=scopes or None,
            validate_token_resource=False,  # per endpoint, in the gate: each run is a resource
        )
        validate_issuer_url(settings.issuer_url)
        origin = parse_origin(str(settings.resource_server_url)) if resource_url else None
    except ValueError as exc:
        raise SetupError(f"OAuth metadata: {exc}") from None
    return ProtectedResource(
        str(settings.issuer_url), origin, tuple(settings.required_scopes or ())
    )


def settle_heap() -> None:
    """What startup built (modules, plugins, schemas: most of the heap) lives as long as the
    server; frozen, a full collection no longer walks it. With 50 runs open a full collection
    took ~100 ms of CPU before, ~37 ms after, and every call in flight stalls behind one."""
    gc.collect()
    gc.freeze()


def main(args: argparse.Namespace, root: Path | None, options: dict[str, Any]) -> int:
    try:
        return asyncio.run(_serve(args, root, options))
    except SetupError as exc:
        print(f"livetools serve: {exc}", file=sys.stderr)
        return 2


async def _serve(args: argparse.Namespace, root: Path | None, options: dict[str, Any]) -> int:
    import uvicorn

    from ....host import Host
    from ... import harness
    from ...surface import UsageError, resolve_surface
    from .metrics import Metrics
    from .runs import SINGLE_ID, Runs
    from .security import Gate, is_loopback
    from .transport import App

    bind_host, port = parse_bind(args.http)
    token = read_token(args)
    verifier = load_verifier(args.token_verifier)
    resource = load_resource(args, verifier)
    runs_under = Path(args.runs_under) if args.runs_under else None
    if runs_under is not None and not runs_under.is_dir():
        raise SetupError(f"--runs-under {args.runs_under}: not a directory")
    if not is_loopback(bind_host) and token is None and verifier is None:
        raise SetupError(
            f"--http {args.http}: binding beyond loopback needs a token (${TOKEN_ENV} or "
            "--token-file) or --token-verifier"
        )
    if runs_under is not None and token is None and verifier is None:
        raise SetupError(f"--runs-under needs an admin token (${TOKEN_ENV} or --token-file)")
    if args.max_runs < 1 or args.run_ttl <= 0:
        raise SetupError("--max-runs and --run-ttl must be positive")

    with contextlib.redirect_stdout(sys.stderr):
        host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    metrics = Metrics()
    runs = Runs(
        host,
        metrics,
        runs_under=runs_under,
        instance=args.instance,
        ttl=args.run_ttl if runs_under is not None else None,
        max_runs=args.max_runs,
        defaults=options if runs_under is not None else None,
    )
    gate = Gate.build(
        bind_host,
        allow_hosts=args.allow_host,
        allow_origins=args.allow_origin,
        admin_token=token if runs_under is not None else None,
        verifier=verifier,
        resource=resource,
    )
    opener: Callable[[], Awaitable[None]] | None = None
    if runs_under is None:
        assert root is not None
        try:
            surface = resolve_surface(host, args.surface)
        except UsageError as exc:
            raise SetupError(str(exc)) from None

        async def open_single() -> None:
            await runs.open(
                root,
                surface,
                args.surface or "agent",
                options=options,
                run_id=SINGLE_ID,
                token=token,
                mint_token=False,
            )

        opener = open_single

    app = App(runs, gate, metrics, opener)
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it every response after a connection's first waits ~40 ms on the delayed ACK of
    # its headers (Nagle), which was the floor of every call over a kept-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind_host, port))
    except OSError as exc:
        raise SetupError(f"--http {args.http}: {exc.strerror}") from None
    sock.listen(1024)
    sock.setblocking(False)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        ws="none",
    )
    server = uvicorn.Server(config)
    # LIVETOOLS_HTTP_LOG=info adds one line per request (method, path, status, time; never a
    # header, so never a token).
    level = os.environ.get(LOG_ENV, "warning").upper()
    logging.basicConfig(stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("livetools.serve.http").setLevel(getattr(logging, level, logging.WARNING))
    shown = f"[{bind_host}]" if ":" in bind_host else bind_host
    what = f"runs under {runs_under}" if runs_under is not None else f"one run at /mcp on {root}"

    def ready() -> None:
        settle_heap()
        print(
            f"livetools serve: listening on http://{shown}:{bound_port} ({what})",
            file=sys.stderr,
            flush=True,
        )

    app.on_ready = ready
    await server.serve(sockets=[sock])
    return 0 if server.started else 1
