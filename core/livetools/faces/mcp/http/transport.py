"""The ASGI app of `serve --http`: the gate (Host 421, Origin 403, token 401, body 413) in front
of every route, then

- `/mcp`: the one run of `--root`;
- `/runs` (admin token): POST opens a run → `{run_id, url, token}`, GET lists them;
  `/runs/<id>` DELETE closes one; `/runs/<id>/mcp` is that run's MCP endpoint (its own token);
- `/healthz` (no token) and `/metrics` (the admin token; a single run's token is its admin token);
- `/.well-known/oauth-protected-resource[/<endpoint>]` (no token): RFC 9728 metadata when a
  harness's verifier comes with an authorization server (`--auth-issuer`).

The MCP endpoints are the SDK's session manager of each run, so both protocol eras are served
on the same URL; a plain 2026-era tools/call is answered by `direct` first, without the SDK's
per-request objects, and everything else reaches the SDK with its body replayed."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Message, Receive, Scope, Send

from .cancel import DropWatch, cancel_dropped
from .framing import ONE_BODY, JsonAnswers, one_body
from .metrics import Metrics
from .runs import SINGLE_ID, RunRefused, Runs, RunSlot
from .security import (
    ADMIN_SCOPE,
    ANY_RUN_SCOPE,
    RUN_SCOPE_PREFIX,
    WELL_KNOWN,
    Gate,
    Verdict,
    bearer,
)

log = logging.getLogger("livetools.serve.http")

ADMIN_BODY_LIMIT = 64 * 1024  # POST /runs bodies are small JSON objects


def _error(status: int, message: str, **headers: str) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def _unauthorized(message: str = "missing or invalid bearer token") -> Response:
    return _error(401, message, **{"WWW-Authenticate": 'Bearer realm="livetools"'})


class App:
    def __init__(
        self,
        runs: Runs,
        gate: Gate,
        metrics: Metrics,
        open_single: Callable[[], Awaitable[None]] | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.runs = runs
        self.open_single = open_single
        self.on_ready = on_ready
        self.gate = gate
        self.metrics = metrics
        self.single = runs.runs_under is None
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.monotonic()
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        route = "other"
        try:
            route = await self._route(scope, receive, watch)
        finally:
            seconds = time.monotonic() - started
            self.metrics.request(route, scope.get("method", "?"), status or 499, seconds)
            # Path and status only: a token never rides in a URL, and headers are not logged.
            log.info("%s %s %s %.3fs", scope.get("method"), scope.get("path"), status, seconds)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        try:
            async with self.runs.serving():
                if self.open_single is not None:
                    await self.open_single()
                self.ready = True
                await send({"type": "lifespan.startup.complete"})
                if self.on_ready is not None:
                    # The socket listens already: connections queue until uvicorn serves.
                    self.on_ready()
                message = await receive()  # lifespan.shutdown
                self.ready = False
        except BaseException as exc:
            if not self.ready and message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            raise
        await send({"type": "lifespan.shutdown.complete"})

    # -- routing -----------------------------------------------------------------------------

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> str:
        request = Request(scope, receive)
        headers = request.headers
        if not self.gate.host_ok(headers.get("host")):
            self.metrics.refused["host"] += 1
            await _error(421, "Host header not allowed by this server")(scope, receive, send)
            return "refused"
        if not self.gate.origin_ok(headers.get("origin")):
            self.metrics.refused["origin"] += 1
            await _error(403, "Origin not allowed by this server")(scope, receive, send)
            return "refused"
        path = scope["path"].rstrip("/") or "/"
        method = scope["method"]
        token = bearer(headers.get("authorization"))
        parts = path.strip("/").split("/")

        if path == "/healthz":
            await JSONResponse({"ok": self.ready, "runs": len(self.runs.list())})(
                scope, receive, send
            )
            return "healthz"
        if path == WELL_KNOWN or path.startswith(WELL_KNOWN + "/"):
            await self._metadata(scope, path[len(WELL_KNOWN) :])(scope, receive, send)
            return "metadata"
        if path == "/metrics":
            if self.gate.has_tokens:
                verdict = await self.gate.admin(token, self._audience(scope, ""))
                if verdict != "ok":
                    refusal = self._refusal(scope, verdict, token, "", [ADMIN_SCOPE], "/metrics")
                    await refusal(scope, receive, send)
                    return "metrics"
            self.metrics.tool_calls = self.runs.tool_calls()
            text = self.metrics.render()
            await PlainTextResponse(text, media_type="text/plain; version=0.0.4")(
                scope, receive, send
            )
            return "metrics"
        if self.single and path == "/mcp":
            slot = self.runs.get(SINGLE_ID)
            await self._mcp(slot, SINGLE_ID, token, scope, receive, send)
            return "mcp"
        if not self.single and parts[0] == "runs":
            if len(parts) == 3 and parts[2] == "mcp":
                await self._mcp(self.runs.get(parts[1]), parts[1], token, scope, receive, send)
                return "run_mcp"
            if (verdict := await self.gate.admin(token, self._audience(scope, ""))) != "ok":
                refusal = self._refusal(scope, verdict, token, "", [ADMIN_SCOPE], "the runs API")
                await refusal(scope, receive, send)
                return "runs"
            if len(parts) == 1 and method == "POST":
                response = await self._create(request)
            elif len(parts) == 1 and method == "GET":
                response = JSONResponse({"runs": [self._describe(s) for s in self.runs.list()]})
            elif len(parts) == 2 and method == "DELETE":
                closed = await self.runs.close(parts[1])
                response = Response(status_code=204) if closed else _error(404, "no such run")
            elif len(parts) == 2 and method == "GET":
                slot = self.runs.get(parts[1])
                response = (
                    JSONResponse(self._describe(slot)) if slot else _error(404, "no such run")
                )
            else:
                response = _error(405 if len(parts) <= 2 else 404, f"{method} {path}: not served")
            await response(scope, receive, send)
            return "runs"
        await _error(404, f"{path}: not served here")(scope, receive, send)
        return "other"

    async def _mcp(
        self,
        slot: RunSlot | None,
        run_id: str,
        token: str | None,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        if slot is None:
            await _error(404, "no such run (closed, expired, or never opened)")(
                scope, receive, send
            )
            return
        path = scope["path"].rstrip("/")
        audience = self._audience(scope, path)
        verdict = await self.gate.run(
            token, run_id, slot.token, single=self.single, audience=audience
        )
        if verdict != "ok":
            scopes = [] if self.single else [f"{RUN_SCOPE_PREFIX}{run_id}", ANY_RUN_SCOPE]
            refusal = self._refusal(scope, verdict, token, path, scopes[:1], "this run")
            await refusal(scope, receive, send)
            return
        self.metrics.protocols[_protocol_label(scope)] += 1
        with slot.serving():
            rest = await slot.face.direct.serve(scope, receive, send)
            if rest is None:
                self.metrics.direct_calls += 1
            else:
                await self._through_sdk(slot, scope, rest, send)

    async def _through_sdk(self, slot: RunSlot, scope: Scope, receive: Receive, send: Send) -> None:
        handshake = _handshake_post(scope)
        single, connection = False, receive
        if handshake:
            headers = dict(scope.get("headers") or ())
            limit, asks_nothing = slot.face.direct.max_body, slot.face.asks_nothing
            receive, single = await one_body(headers, receive, limit, asks_nothing)
        watch = DropWatch(scope, receive, send)
        if single:
            await self._one_body(slot, scope, watch, connection)
            return
        # A handshake-era POST answered by one event goes out as JSON (see framing).
        answers = JsonAnswers(watch.send) if handshake else None
        try:
            await slot.face.manager.handle_request(
                scope, watch.receive, watch.send if answers is None else answers.send
            )
            if answers is not None:
                await answers.flush()
        finally:
            await cancel_dropped(slot.face.manager.handle_request, watch)

    async def _one_body(
        self, slot: RunSlot, scope: Scope, watch: DropWatch, connection: Receive
    ) -> None:
        """A `one_body` POST in the SDK's JSON mode. That mode waits for the answer without
        listening to the connection, so a watcher does (on `connection`, whose body was read
        already: the SDK gets it replayed): a client gone before the answer gets its call
        cancelled, as on the SSE path."""
        handle = slot.face.manager.handle_request
        self.metrics.one_body_calls += 1

        async def watch_drop() -> None:
            while (await connection()).get("type") != "http.disconnect":
                pass
            if not watch.finished:
                await cancel_dropped(handle, watch)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch_drop)  # before the flag: its own requests are ordinary
            flag = ONE_BODY.set(True)
            try:
                await handle(scope, watch.receive, watch.send)
            finally:
                ONE_BODY.reset(flag)
                tasks.cancel_scope.cancel()

    # -- tokens and OAuth metadata ----------------------------------------------------------

    @staticmethod
    def _origin_of(scope: Scope) -> tuple[str, str]:
        host = next((v for k, v in scope.get("headers") or () if k == b"host"), b"localhost")
        return scope.get("scheme", "http"), host.decode("latin-1")

    def _audience(self, scope: Scope, path: str) -> tuple[str, str] | None:
        """(origin, path) of the resource asked for, to check a token's audience against; None
        without OAuth metadata (then the verifier alone decides)."""
        resource = self.gate.resource
        return None if resource is None else (resource.base(*self._origin_of(scope)), path)

    def _refusal(
        self,
        scope: Scope,
        verdict: Verdict,
        token: str | None,
        path: str,
        scopes: list[str],
        what: str,
    ) -> Response:
        """401 (log in) or 403 (a token without the scope `what` needs). With OAuth metadata
        configured, `WWW-Authenticate` says where it is and which scope to ask for."""
        resource = self.gate.resource
        if resource is None:
            if verdict == "forbidden":
                return _error(403, f"the token does not open {what}")
            return _unauthorized(f"{what}: missing or invalid bearer token")
        base = resource.base(*self._origin_of(scope))
        challenge = resource.challenge(base, path, verdict, scopes, token_sent=token is not None)
        status, message = (
            (403, f"the token does not carry the scope {what} needs")
            if verdict == "forbidden"
            else (401, f"{what}: missing or invalid bearer token")
        )
        return _error(status, message, **{"WWW-Authenticate": challenge})

    def _metadata(self, scope: Scope, suffix: str) -> Response:
        """RFC 9728 protected-resource metadata of the server ("") or one MCP endpoint."""
        resource = self.gate.resource
        if resource is None:
            return _error(404, "no OAuth metadata: this server takes its own bearer tokens")
        if scope["method"] != "GET":
            return _error(405, "GET only")
        base = resource.base(*self._origin_of(scope))
        document = resource.document(base, suffix, self.single)
        if document is None:
            return _error(404, f"{suffix}: not an MCP endpoint of this server")
        return JSONResponse(document, headers={"Cache-Control": "public, max-age=3600"})

    # -- the runs API ------------------------------------------------------------------------

    async def _create(self, request: Request) -> Response:
        from ...surface import UsageError, resolve_surface

        body = await _read_limited(request, ADMIN_BODY_LIMIT)
        if body is None:
            return _error(413, f"request body over {ADMIN_BODY_LIMIT} bytes")
        try:
            spec = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "the body must be a JSON object: {root, surface?, options?}")
        if not isinstance(spec, dict) or not isinstance(spec.get("root"), str):
            return _error(400, 'the body needs "root": a folder under --runs-under')
        surface_name = spec.get("surface") or "agent"
        options = spec.get("options") or {}
        conversation_id = spec.get("conversation_id")
        if not isinstance(surface_name, str) or not isinstance(options, dict):
            return _error(400, '"surface" must be a string and "options" an object')
        if conversation_id is not None and not isinstance(conversation_id, str):
            return _error(400, '"conversation_id" must be a string')
        for name, value in (("root", spec["root"]), ("conversation_id", conversation_id)):
            if value is not None and (problem := _unusable(value)):
                return _error(400, f'"{name}" {problem}')
        if conversation_id is not None and len(conversation_id) > MAX_CONVERSATION_ID:
            return _error(400, f'"conversation_id": at most {MAX_CONVERSATION_ID} characters')
        try:
            root = self.runs.confine(spec["root"])
            surface = resolve_surface(self.runs.host, surface_name)
            slot = await self.runs.open(
                root,
                surface,
                surface_name,
                conversation_id=conversation_id,
                options=self.runs.options_for(options),
            )
        except UsageError as exc:
            return _error(400, f"surface: {exc}")
        except RunRefused as exc:
            return _error(exc.status, str(exc))
        log.info("run %s opened", slot.id)
        return JSONResponse(
            {"run_id": slot.id, "url": f"/runs/{slot.id}/mcp", "token": slot.token},
            status_code=201,
        )

    def _describe(self, slot: RunSlot) -> dict[str, Any]:
        root = slot.root
        under = self.runs.runs_under
        shown = str(root.relative_to(under)) if under is not None else str(root)
        return {
            "id": slot.id,
            "root": shown,
            "surface": slot.surface_name,
            "conversation_id": slot.conversation_id,
            "idle_seconds": round(slot.idle_seconds(), 1),
            "calls": slot.face.calls,
            "url": f"/runs/{slot.id}/mcp" if not self.single else "/mcp",
            # families that failed to connect (their tools answer why) and the run's problems
            "unavailable": dict(slot.run.unavailable),
            "problems": list(slot.run.problems),
        }


MAX_CONVERSATION_ID = 256


def _unusable(text: str) -> str | None:
    """Why a client's string cannot name a folder or a conversation, None when it can: a NUL
    (no path holds one) or a lone surrogate (no UTF-8 does: it would fail every listing that
    shows it, not only this request)."""
    if "\x00" in text:
        return "contains a NUL character; send the name without it"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"contains a lone surrogate (\\u{ord(text[exc.start]):04x} at {exc.start}), which no "
            "UTF-8 text holds; send the name as valid Unicode"
        )
    return None


def _handshake_post(scope: Scope) -> bool:
    """A POST the SDK serves on its 2025-11-25 path (no version header, or a handshake one)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    if scope.get("method") != "POST":
        return False
    for key, value in scope.get("headers") or ():
        if key == b"mcp-protocol-version":
            return value.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
    return True


def _protocol_label(scope: Scope) -> str:
    """The request's MCP-Protocol-Version when the SDK knows it: a label from a closed set, so
    a client cannot mint series."""
    from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

    for key, value in scope.get("headers") or ():
        if key == b"mcp-protocol-version":
            version = value.decode("latin-1")
            return version if version in KNOWN_PROTOCOL_VERSIONS else "other"
    return "none"


async def _read_limited(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            return None
    return bytes(body)
