"""The `serve --http` command line: its options, the checks that refuse an unsafe setup, and
the uvicorn server that runs the app until SIGTERM (then every run closes, within a bound).

Tokens come from the environment (`LIVETOOLS_HTTP_TOKEN`) or a file (`--token-file`), never
from the command line, where any local user could read them in the process list; with neither,
one is made (tokens.py). Flags that mean something only over HTTP are refused without `--http`
rather than ignored."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib
import logging
import os
import re
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .header_deadline import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, protocol_class
from .tokens import (
    TOKEN_ENV,
    MadeToken,
    TokenError,
    announce,
    env_token,
    make_token,
    read_token_file,
    warn_open,
)

LOG_ENV = "LIVETOOLS_HTTP_LOG"

HELP = """serve --http: MCP streamable HTTP (both protocol eras on one URL). With --root, one run
at /mcp; with --runs-under DIR, a run server: POST /runs {root, surface, conversation_id,
options} with the admin token answers {run_id, url, token}; GET /runs; DELETE /runs/ID; each
run's MCP endpoint is /runs/ID/mcp and takes only its own token. The token (single run: the run's;
run server: the admin's) comes from $LIVETOOLS_HTTP_TOKEN or --token-file (mode 600); with
neither, one is made, written to a 0600 file under $XDG_RUNTIME_DIR/livetools/http (else
~/.cache/livetools/http) and printed once. Clients send "Authorization: Bearer TOKEN".
--no-token serves without one (loopback only: every local user can then call the tools)."""

INSTANCE = re.compile(r"[A-Za-z0-9_.-]{1,40}")
DEFAULT_RUN_TTL = 1800.0
DEFAULT_MAX_RUNS = 64


class DefaultRoot(str):
    """`--root`'s default ("."), told apart from a `--root .` the user typed."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--http", metavar="[HOST:]PORT", help="serve MCP over HTTP (see below)")
    p.add_argument("--runs-under", metavar="DIR", help="--http: a run server for roots under DIR")
    p.add_argument("--instance", help="--http: run ids start with NAME- (routing by path)")
    p.add_argument(
        "--token-file", metavar="FILE", help=f"--http: the token, mode 600 (else ${TOKEN_ENV})"
    )
    p.add_argument(
        "--no-token",
        action="store_true",
        help="--http: serve loopback without a token (every local user can call the tools)",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        metavar="SECONDS",
        help=f"--http: a request's headers must arrive within this (default "
        f"{DEFAULT_HEADER_TIMEOUT:.0f})",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        metavar="SECONDS",
        help=f"--http: a request's body must arrive within this after its headers (default "
        f"{DEFAULT_BODY_TIMEOUT:.0f})",
    )
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
        metavar="SECONDS",
        help=f"--http: an idle run closes after this long (default {DEFAULT_RUN_TTL:.0f})",
    )
    p.add_argument(
        "--max-runs", type=int, help=f"--http: open runs at most (default {DEFAULT_MAX_RUNS})"
    )
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
    p.set_defaults(root=DefaultRoot("."))


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


HTTP_ONLY = (
    "runs_under",
    "instance",
    "token_file",
    "no_token",
    "header_timeout",
    "body_timeout",
    "allow_host",
    "allow_origin",
    "run_ttl",
    "max_runs",
    "token_verifier",
    "auth_issuer",
    "resource_url",
    "required_scope",
)


def flag_name(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _given(value: object) -> bool:
    """A flag's value other than its default (None, False, []); a 0 counts as given."""
    return value is not None and value is not False and value != []


def check_flags(args: argparse.Namespace) -> None:
    """Flag combinations that would otherwise be ignored: SetupError names them."""
    given = [flag_name(d) for d in HTTP_ONLY if _given(getattr(args, d, None))]
    if not args.http:
        if given:
            raise SetupError(
                f"{', '.join(given)} only mean something with --http [HOST:]PORT; add it, or "
                "drop them to serve MCP over stdio"
            )
        return
    if args.runs_under and not isinstance(args.root, DefaultRoot):
        raise SetupError(
            "--root and --runs-under: pick one (--root serves one run; --runs-under serves runs "
            "that clients open under DIR with POST /runs)"
        )
    if args.instance is not None and not args.runs_under:
        raise SetupError("--instance names the runs of a run server: it needs --runs-under DIR")
    if args.instance is not None and not INSTANCE.fullmatch(args.instance):
        raise SetupError(
            f"--instance {args.instance!r}: 1 to 40 letters, digits, '_', '.' or '-' (it starts "
            "every run id, which is part of the run's URL)"
        )
    if args.no_token and (args.token_file or env_token() or args.token_verifier):
        source = "--token-file" if args.token_file else "--token-verifier"
        source = f"${TOKEN_ENV}" if not args.token_file and env_token() else source
        raise SetupError(f"--no-token and {source}: pick one")
    for flag in ("header_timeout", "body_timeout"):
        value = getattr(args, flag)
        if value is not None and not 0 < value < float("inf"):
            raise SetupError(f"--{flag.replace('_', '-')} must be a positive number of seconds")


def read_token(args: argparse.Namespace) -> str | None:
    try:
        return read_token_file(args.token_file) if args.token_file else env_token()
    except TokenError as exc:
        raise SetupError(str(exc)) from None


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
        check_flags(args)
        return asyncio.run(_serve(args, root, options))
    except (SetupError, TokenError) as exc:
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
    if args.no_token and not is_loopback(bind_host):
        raise SetupError(
            f"--no-token serves anyone who reaches {bind_host}: bind 127.0.0.1 or drop "
            f"--no-token (a token is then made, or give one with ${TOKEN_ENV} or --token-file)"
        )
    if runs_under is not None and args.no_token:
        raise SetupError(
            "--runs-under needs an admin token: drop --no-token (one is made, or give "
            f"${TOKEN_ENV} or --token-file)"
        )
    run_ttl = args.run_ttl if args.run_ttl is not None else DEFAULT_RUN_TTL
    max_runs = args.max_runs if args.max_runs is not None else DEFAULT_MAX_RUNS
    if max_runs < 1 or run_ttl <= 0:
        raise SetupError("--max-runs and --run-ttl must be positive")

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
    with contextlib.redirect_stdout(sys.stderr):
        host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    metrics = Metrics()
    runs = Runs(
        host,
        metrics,
        runs_under=runs_under,
        instance=args.instance,
        ttl=run_ttl if runs_under is not None else None,
        max_runs=max_runs,
        defaults=options if runs_under is not None else None,
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

    # Made once the port is known (0 = any) and after every refusal, so none leaves a file;
    # open_single reads `token` when it runs, after this.
    made: MadeToken | None = None
    if token is None and verifier is None and not args.no_token:
        made = make_token(bind_host, bound_port)
        token = made.token
    if args.no_token:
        warn_open(f"{bind_host}:{bound_port}")

    gate = Gate.build(
        bind_host,
        allow_hosts=args.allow_host,
        allow_origins=args.allow_origin,
        admin_token=token,  # single run: its token also guards /metrics (no runs API there)
        verifier=verifier,
        resource=resource,
    )
    app = App(runs, gate, metrics, opener)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        ws="none",
        http=protocol_class(
            args.header_timeout or DEFAULT_HEADER_TIMEOUT,
            args.body_timeout or DEFAULT_BODY_TIMEOUT,
        ),
    )
    server = _server_class()(config, made)
    # LIVETOOLS_HTTP_LOG=info adds one line per request (method, path, status, time; never a
    # header, so never a token).
    level = os.environ.get(LOG_ENV, "warning").upper()
    logging.basicConfig(stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("livetools.serve.http").setLevel(getattr(logging, level, logging.WARNING))
    shown = f"[{bind_host}]" if ":" in bind_host else bind_host
    what = f"runs under {runs_under}" if runs_under is not None else f"one run at /mcp on {root}"

    def ready() -> None:
        settle_heap()
        if made is not None:
            announce(made)
        print(
            f"livetools serve: listening on http://{shown}:{bound_port} ({what})",
            file=sys.stderr,
            flush=True,
        )

    app.on_ready = ready
    try:
        await server.serve(sockets=[sock])
    finally:
        if made is not None:
            made.remove()  # a failed startup never reaches shutdown
    return 0 if server.started else 1


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's, removing a made token's file at shutdown: after it, uvicorn raises the
        SIGTERM it caught again, and the process ends without unwinding."""

        def __init__(self, config: uvicorn.Config, made: MadeToken | None) -> None:
            super().__init__(config)
            self.made = made

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().shutdown(sockets=sockets)
            finally:
                if self.made is not None:
                    self.made.remove()

    return Server
