"""One running language server for one (spec, root): process, connection, documents, diagnostics.

What the research on real servers made necessary: every server->client request is answered
(configuration by section, capability registration, progress creation, refreshes — a
MethodNotFound reply crashes basedpyright); documents are opened before position requests and
re-sent in full with a new version whenever the disk moved on; push diagnostics are matched to
our document version (or, for servers that send none, to the time of our change); pull
diagnostics are used wherever the server offers them (pyright-family stop pushing once a client
can pull); `$/progress` tells whether the server is still indexing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livetools import ToolError
from livetools.files import read_text
from livetools.procs import ProcessStartError
from livetools.sandbox import Process, Sandbox, spawn, wire_maps
from livetools.wire import FramedReader, FramedWriter

from .jsonrpc import (
    CONTENT_MODIFIED,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    ConnectionLost,
    Endpoint,
    RpcError,
    RpcTimeout,
)
from .pyenv import PythonEnv, pyright_settings, python_env
from .spec import ServerSpec
from .watching import CHANGED, WatchedFiles, file_events, watchers_from

SHUTDOWN_TIMEOUT = 2.0
SETTLE = 0.15  # after a version-less publish, a second one often follows
READY_STDERR_LINES = 400  # of the server's stderr searched for its ready line
_TOUCHED_WAIT = 3.0  # how long a re-publish after a watched-file event is waited for
_MESSAGES = 20


class ServerGone(ToolError):
    """The server crashed, hung or could not start; the next call starts a fresh one."""


@dataclass
class Document:
    uri: str
    version: int
    text: str
    language_id: str
    sent_at: float = field(default_factory=time.monotonic)  # when this version was sent
    path: Path | None = None
    stamp: tuple[int, int] | None = None  # (mtime_ns, size) of the disk text last sent
    # When a watched file changed on disk since this version was sent: a push server's
    # re-publish for it may be on its way (an import now resolves, or no longer does).
    touched_at: float = 0.0


@dataclass
class Published:
    version: int | None
    items: list[dict[str, Any]]
    at: float


@dataclass
class Readiness:
    """What the server said about loading its project: running `$/progress` (token -> title,
    start), the last end, each finished progress as (began, ended), and when its spec's
    `ready_log` line last arrived. Cross-file answers are complete only once it is loaded."""

    active: dict[str, str] = field(default_factory=dict)  # progress token -> title
    began: dict[str, float] = field(default_factory=dict)  # progress token -> start
    last_end: float = 0.0
    spans: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=64))
    logged_ready: float = 0.0
    waited_out: bool = False  # a cross-file wait for loading ran out once

    def settled_since(self, sent: float) -> bool:
        """Whether loading moved on while a request sent at `sent` ran: a progress that was
        running then has ended, or the ready line arrived — its answer may predate the load."""
        if self.logged_ready > sent:
            return True
        return any(began < sent < ended for began, ended in self.spans)


def path_uri(path: Path) -> str:
    return path.resolve().as_uri()


def uri_path(uri: str) -> Path | None:
    if not uri.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return Path(unquote(parsed.path))


def _tracer(name: str) -> Any:
    """LIVETOOLS_LSP_TRACE=FILE appends one line per message (time, direction, method or id,
    version): how a server's ordering problem is found without a debugger."""
    target = os.environ.get("LIVETOOLS_LSP_TRACE")
    if not target:
        return None
    start = time.monotonic()

    def trace(direction: str, message: dict[str, Any]) -> None:
        params = message.get("params")
        doc = params.get("textDocument") if isinstance(params, dict) else None
        version = params.get("version") if isinstance(params, dict) else None
        if isinstance(doc, dict):
            version = doc.get("version", version)
        uri = (doc or {}).get("uri") if isinstance(doc, dict) else None
        if isinstance(params, dict) and uri is None:
            uri = params.get("uri")
        what = message.get("method") or f"reply {message.get('id')}"
        if what == "$/progress" and isinstance(params, dict):  # token, kind and count
            value = params.get("value")
            value = value if isinstance(value, dict) else {}
            what += f" {params.get('token')} {value.get('kind')} {value.get('message') or ''}"
        line = f"{time.monotonic() - start:8.3f} {name} {direction} {what} {uri or ''} {version}"
        with open(target, "a", encoding="utf-8") as out:
            out.write(line.rstrip() + "\n")

    return trace


def disk_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


# A write within this long of the last look may share its mtime tick: such files are re-read.
_MTIME_TICK_NS = 2_000_000_000


def _lookup(settings: Mapping[str, Any], section: str | None) -> Any:
    if not section:
        return dict(settings)
    node: Any = settings
    for part in section.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def client_capabilities() -> dict[str, Any]:
    links = {"dynamicRegistration": False, "linkSupport": True}
    kinds = [
        "",
        "quickfix",
        "refactor",
        "refactor.extract",
        "refactor.inline",
        "refactor.rewrite",
        "source",
        "source.organizeImports",
        "source.fixAll",
    ]
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": True},
        "workspace": {
            "configuration": True,
            "workspaceFolders": True,
            "applyEdit": True,  # answered only while a code action's command runs
            "didChangeConfiguration": {"dynamicRegistration": True},
            "didChangeWatchedFiles": {"dynamicRegistration": True},
            "symbol": {"dynamicRegistration": True},
            "diagnostics": {"refreshSupport": True},
            "workspaceEdit": {
                "documentChanges": True,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
            },
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": True, "didSave": True},
            "publishDiagnostics": {"versionSupport": True, "tagSupport": {"valueSet": [1, 2]}},
            "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": False},
            "definition": links,
            "typeDefinition": links,
            "implementation": links,
            "references": {"dynamicRegistration": False},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": kinds}},
                "isPreferredSupport": True,
            },
            "rename": {"prepareSupport": True},
            # typescript-language-server offers call hierarchy only to clients that declare it.
            "callHierarchy": {"dynamicRegistration": False},
        },
    }


class LanguageServer:
    """Start with `await LanguageServer.launch(...)`; every request goes through `request`,
    which turns a crash, a hang or an error answer into a ToolError the model can act on."""

    def __init__(
        self,
        spec: ServerSpec,
        root: Path,
        binary: str,
        request_timeout: float,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.spec = spec
        self.root = root
        self.binary = binary  # inside the sandbox: the inside's path
        self.request_timeout = request_timeout
        self.sandbox = sandbox
        self.child: Process | None = None
        self.endpoint: Endpoint | None = None
        self.capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.encoding = "utf-16"
        self.registrations: dict[str, str] = {}  # registration id -> method
        # While a code action's command runs: the edits it sends back (workspace/applyEdit).
        self.capturing: list[dict[str, Any]] | None = None
        self.watched = WatchedFiles(root, frozenset(spec.extensions))
        self._watch_lock = asyncio.Lock()
        self.documents: dict[str, Document] = {}
        self.published: dict[str, Published] = {}
        self.versioned = False  # some publish carried a version (clangd), not none (tsserver)
        self._root_prefix = f"{root.resolve()}{os.sep}"  # resolved once, not at each publish
        self.readiness = Readiness()
        self.messages: deque[str] = deque(maxlen=_MESSAGES)
        self.started_at = time.monotonic()
        self.failure: str | None = None  # set once it crashed or hung: the next call restarts
        # The last request it answered with an error, until one succeeds: status shows it (a
        # gopls without a writable Go cache failed every request while status said "ready").
        self.failing: str | None = None
        self.settings: Mapping[str, Any] = spec.settings
        self.python: PythonEnv | None = None
        self._changed = asyncio.Condition()
        self._ready_log = re.compile(spec.ready_log) if spec.ready_log else None

    # -- life cycle --------------------------------------------------------------------------

    @classmethod
    async def launch(
        cls,
        spec: ServerSpec,
        root: Path,
        binary: str,
        *,
        request_timeout: float,
        init_timeout: float,
        sandbox: Sandbox | None = None,
    ) -> LanguageServer:
        server = cls(spec, root, binary, request_timeout, sandbox)
        try:
            await server._start(init_timeout)
        except BaseException:
            await server.aclose()
            raise
        return server

    async def _start(self, init_timeout: float) -> None:
        if self.spec.python_env:
            self.python = await asyncio.to_thread(python_env, self.root)
            self.settings = pyright_settings(self.spec.settings, self.python)
        env = dict(os.environ)
        env.update(self.spec.env)
        argv = (self.binary, *self.spec.command[1:])
        try:
            self.child = await spawn(self.sandbox, argv, cwd=self.root, env=env, name=self.spec.id)
        except ProcessStartError as exc:
            raise ServerGone(f"{self.spec.id} could not start: {exc}") from None
        assert self.child.stdout is not None and self.child.stdin is not None
        # Inside a sandbox the server speaks its own paths; every frame is mapped at the wire.
        inbound, outbound = wire_maps(self.sandbox)
        self.endpoint = Endpoint(
            FramedReader(self.child.stdout, transform=inbound),
            FramedWriter(self.child.stdin, transform=outbound),
            on_request=self._on_request,
            on_notification=self._on_notification,
            on_lost=self._on_lost,
            trace=_tracer(self.spec.id),
        )
        self.endpoint.start()
        root_uri = path_uri(self.root)
        params = {
            # vscode-languageserver servers (basedpyright, typescript-language-server) poll this
            # pid every 3 s and exit when it is gone: in a sandbox's PID namespace the host's pid
            # names nobody (or a stranger), so none is sent there.
            "processId": os.getpid() if self.sandbox is None else None,
            "clientInfo": {"name": "livetools"},
            "rootUri": root_uri,
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": root_uri, "name": self.root.name}],
            "initializationOptions": dict(self.spec.init_options or {}),
            "capabilities": client_capabilities(),
        }
        await self.send_watched()  # the snapshot later changes are told against
        result = await self.request("initialize", params, bound=init_timeout, what="initialize")
        if not isinstance(result, dict):
            raise ServerGone(f"{self.spec.id} answered initialize with {result!r:.200}")
        self.capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        self.encoding = self.capabilities.get("positionEncoding") or "utf-16"
        await self.notify("initialized", {})
        if self.settings:
            await self.notify("workspace/didChangeConfiguration", {"settings": dict(self.settings)})
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child else None

    @property
    def alive(self) -> bool:
        return (
            self.failure is None
            and self.child is not None
            and self.child.returncode is None
            and self.endpoint is not None
            and self.endpoint.lost is None
        )

    def uptime(self) -> float:
        return time.monotonic() - self.started_at

    async def aclose(self) -> None:
        """Bounded: shutdown + exit if it still answers, then the whole session is killed."""
        if self.endpoint is not None and self.alive:
            with contextlib.suppress(ToolError, ConnectionLost, RpcError, RpcTimeout, OSError):
                await self.endpoint.request("shutdown", None, SHUTDOWN_TIMEOUT)
                await self.endpoint.notify("exit", None)
        if self.failure is None:
            self.failure = "stopped"
        self.watched.close()
        if self.child is not None:
            await self.child.aclose(grace=1.0)
        if self.endpoint is not None:
            await self.endpoint.aclose()

    # -- requests ----------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Any,
        *,
        bound: float | None = None,
        what: str | None = None,
        soft: bool = False,
    ) -> Any:
        """One request; a content-modified answer is retried once (the document just moved).
        A timeout means a hung server (stopped, restarted at the next call) unless `soft`:
        then the bound was only how long the caller could wait, and RpcTimeout is raised."""
        if self.endpoint is None:
            raise ServerGone(f"{self.spec.id} is not running")
        if self.failure is not None:
            raise ServerGone(f"{self.spec.id} is not usable: {self.failure}")
        bound = bound if bound is not None else self.request_timeout
        for attempt in range(2):
            try:
                answer = await self.endpoint.request(method, params, bound)
                self.failing = None
                return answer
            except RpcError as exc:
                if exc.code in (CONTENT_MODIFIED, REQUEST_CANCELLED) and attempt == 0:
                    continue
                if exc.code == METHOD_NOT_FOUND:
                    raise ToolError(f"{self.spec.id} does not support {what or method}") from None
                self.failing = f"{what or method}: {exc.message[:200]}"
                raise ToolError(
                    f"{self.spec.id} answered {what or method} with an error: {exc.message}"
                ) from None
            except RpcTimeout:
                if soft:
                    raise
                self.failure = f"did not answer {method} within {bound:g}s"
                await self._kill()
                raise ServerGone(
                    f"{self.spec.id} did not answer {what or method} within {bound:g}s; it was "
                    "stopped and the next call starts it again"
                ) from None
            except ConnectionLost as exc:
                raise ServerGone(await self.crash_report(what or method, str(exc))) from None
        raise AssertionError("unreachable")

    async def notify(self, method: str, params: Any) -> None:
        if self.endpoint is None or self.failure is not None:
            raise ServerGone(f"{self.spec.id} is not usable: {self.failure or 'not running'}")
        try:
            await self.endpoint.notify(method, params)
        except ConnectionLost as exc:
            raise ServerGone(await self.crash_report(method, str(exc))) from None

    async def crash_report(self, during: str, reason: str) -> str:
        code = await self.child.wait(1.0) if self.child else None
        tail = self.child.stderr_tail(8).strip() if self.child else ""
        exit_text = f"exit code {code}" if code is not None else reason
        self.failure = f"crashed ({exit_text})"
        text = f"{self.spec.id} crashed during {during} ({exit_text})"
        if code is not None and reason.startswith("the server wrote invalid output"):
            text += f"; {reason}"
        elif code is None:
            await self._kill()
        if tail:
            text += f"; stderr tail:\n{tail[-1500:]}\n"
        else:
            text += "; "
        return text + "the next call starts it again"

    async def _kill(self) -> None:
        if self.child is not None:
            await self.child.aclose(grace=0)

    # -- server -> client --------------------------------------------------------------------

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            items = (params or {}).get("items") or []
            return [_lookup(self.settings, item.get("section")) for item in items]
        if method == "client/registerCapability":
            for reg in (params or {}).get("registrations") or []:
                self.registrations[str(reg.get("id"))] = str(reg.get("method"))
                if reg.get("method") == "workspace/didChangeWatchedFiles":
                    watchers = watchers_from(reg.get("registerOptions"), uri_path)
                    self.watched.register(str(reg.get("id")), watchers)
            self._wake()
            return None
        if method == "client/unregisterCapability":
            for reg in (params or {}).get("unregisterations") or []:
                self.registrations.pop(str(reg.get("id")), None)
                self.watched.unregister(str(reg.get("id")))
            return None
        if method == "workspace/workspaceFolders":
            return [{"uri": path_uri(self.root), "name": self.root.name}]
        if method == "workspace/applyEdit":
            if self.capturing is not None and isinstance((params or {}).get("edit"), dict):
                self.capturing.append(params["edit"])  # applied by the caller's checked write
                return {"applied": True}
            return {"applied": False, "failureReason": "livetools applies edits itself"}
        if method == "window/showDocument":
            return {"success": False}
        if method in ("window/workDoneProgress/create", "window/showMessageRequest"):
            return None
        if method.startswith("workspace/") and method.endswith("/refresh"):
            return None
        raise RpcError(method, METHOD_NOT_FOUND, f"livetools does not handle {method}")

    def _relative(self, diagnostics: Any) -> list[dict[str, Any]]:
        """The items, with the project's absolute paths in their messages made relative:
        clangd writes an included file's notes into the message ("/…/CLI/Option.hpp:21:10:
        note: error occurred here"), and the model reads paths relative to the root."""
        items = [d for d in diagnostics or [] if isinstance(d, dict)]
        prefix = self._root_prefix
        for i, item in enumerate(items):
            message = item.get("message")
            if isinstance(message, str) and prefix in message:
                items[i] = {**item, "message": message.replace(prefix, "")}
        return items

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            uri = str(params.get("uri"))
            version = params.get("version")
            self.versioned = self.versioned or isinstance(version, int)
            self.published[uri] = Published(
                version if isinstance(version, int) else None,
                self._relative(params.get("diagnostics")),
                time.monotonic(),
            )
            self._wake()
        elif method == "$/progress" and isinstance(params, dict):
            token = str(params.get("token"))
            value = params.get("value") or {}
            kind = value.get("kind") if isinstance(value, dict) else None
            now = time.monotonic()
            if kind == "begin":
                self.readiness.active[token] = str(value.get("title") or "")
                self.readiness.began[token] = now
            elif kind == "end":
                self.readiness.active.pop(token, None)
                began = self.readiness.began.pop(token, now)
                self.readiness.spans.append((began, now))
                self.readiness.last_end = now
                self._wake()
        elif (
            method == "window/logMessage"
            and isinstance(params, dict)
            and self._ready_log is not None
            and self._ready_log.search(str(params.get("message") or ""))
        ):
            self.readiness.logged_ready = time.monotonic()
            self._wake()
        elif (
            method in ("window/logMessage", "window/showMessage")
            and isinstance(params, dict)
            and int(params.get("type") or 4) <= 2  # errors and warnings only
        ):
            self.messages.append(str(params.get("message"))[:300])

    def _on_lost(self, reason: str) -> None:
        self._wake()

    def _wake(self) -> None:
        async def notify_all() -> None:
            async with self._changed:
                self._changed.notify_all()

        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(notify_all())

    async def wait_change(self, seconds: float) -> None:
        """Sleep until a publish, a progress end or a lost connection, at most `seconds`."""
        if seconds <= 0:
            return
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), seconds)

    # -- capabilities ------------------------------------------------------------------------

    def supports(self, provider: str, method: str) -> bool:
        """Static capability (`provider` truthy) or a dynamic registration of `method`."""
        if self.capabilities.get(provider):
            return True
        return method in self.registrations.values()

    @property
    def pulls(self) -> bool:
        return self.supports("diagnosticProvider", "textDocument/diagnostic")

    async def loaded(self, bound: float = 45.0) -> None:
        """For servers that answer wrongly while loading their project: wait for the first
        progress end — during the warm-up window for it to begin, then for as long as it runs
        (a loaded machine can take many seconds), at most `bound`."""
        if not self.spec.await_progress:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        while self.readiness.last_end == 0 and self.alive:
            remaining = deadline - loop.time()
            if not self.readiness.active:
                remaining = min(remaining, self.spec.warmup - self.uptime())
            if remaining <= 0:
                return
            await self.wait_change(min(remaining, 0.25))

    async def idle(self, bound: float) -> None:
        """Wait until no `$/progress` is running (a rename must see the finished index); a
        fresh server gets a moment to announce its indexing first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        while (remaining := deadline - loop.time()) > 0 and self.alive:
            fresh = self.uptime() < 1.0 and self.readiness.last_end == 0
            if self.loading() is None and not fresh:
                return
            await self.wait_change(min(remaining, 0.1))

    def busy(self) -> str | None:
        """Why an empty answer may only mean "not ready yet", or None."""
        loading = self.loading()
        if loading:
            return loading
        if self.spec.await_progress and self.readiness.last_end:
            return None  # it said when its project was loaded: the warm-up guess is moot
        if self.uptime() < self.spec.warmup:
            return f"started {self.uptime():.1f}s ago"
        return None

    def loading(self) -> str | None:
        """Why a cross-file answer now could miss part of the project, or None: a progress
        is running, the spec's ready line has not arrived yet, or (`await_progress`) the first
        progress has not ended."""
        if self.readiness.active:
            titles = ", ".join(t for t in self.readiness.active.values() if t) or "work"
            return f"still busy ({titles})"
        if not self._ready_logged():
            return "project not loaded yet"
        waits = self.spec.await_progress and self.uptime() < self.spec.warmup
        if waits and not self.readiness.last_end:
            return "project not loaded yet"
        return None

    def _ready_logged(self) -> bool:
        """The spec's ready line has arrived (or it has none). Some say it only on stderr
        (Perl::LanguageServer's "initial parsing done")."""
        if self._ready_log is None or self.readiness.logged_ready:
            return True
        tail = self.child.stderr_tail(READY_STDERR_LINES) if self.child else ""
        if not (tail and self._ready_log.search(tail)):
            return False
        self.readiness.logged_ready = time.monotonic()
        return True

    async def ready(self, bound: float) -> str | None:
        """Wait until the project is loaded (see `loading`), at most `bound`; None when it
        is, else why not. A fresh server gets a moment to announce its loading first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        while self.alive:
            fresh = self.uptime() < 0.5 and not self.readiness.last_end
            reason = self.loading() or ("starting" if fresh else None)
            remaining = deadline - loop.time()
            if reason is None or remaining <= 0:
                return reason
            await self.wait_change(min(remaining, 0.1))
        return None

    # -- documents ---------------------------------------------------------------------------

    def _sync_kind(self) -> int:
        sync = self.capabilities.get("textDocumentSync")
        if isinstance(sync, dict):
            return int(sync.get("change") or 0)
        return int(sync) if isinstance(sync, int) else 1

    async def sync(self, path: Path, text: str | None = None) -> tuple[Document, bool]:
        """Make the server see `path` as on disk (or `text`): didOpen the first time, a full
        didChange with a new version when it changed. Returns the document and whether a new
        version was sent."""
        uri = path_uri(path)
        stamp = None
        if text is None:
            stamp = disk_stamp(path)
            text = await read_text(path, self.root)
        doc = self.documents.get(uri)
        if doc is None:
            doc = Document(uri, 1, text, self.spec.language_id(path), path=path)
            doc.stamp = stamp
            self.documents[uri] = doc
            await self.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": doc.language_id,
                        "version": doc.version,
                        "text": text,
                    }
                },
            )
            return doc, True
        doc.stamp = stamp
        if doc.text == text:
            return doc, False
        doc.version += 1
        doc.text = text
        doc.sent_at = time.monotonic()
        if self._sync_kind() == 0:
            return doc, True
        await self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": doc.version},
                "contentChanges": [{"text": text}],
            },
        )
        return doc, True

    async def refresh(self) -> list[str]:
        """Before a request whose answer depends on file content: every open document whose
        disk state moved on (mtime/size, then the text itself) is sent again, and one that is
        gone is closed — an answer computed on a stale copy would be wrong (a rename would
        write its ranges into the wrong text). Returns the uris that were re-sent."""
        moved: list[str] = []
        await self.send_watched()
        now = time.time_ns()
        for uri, doc in list(self.documents.items()):
            if doc.path is None:
                continue
            stamp = disk_stamp(doc.path)
            if stamp is None:
                await self.close(doc.path)
                moved.append(uri)
                continue
            if stamp == doc.stamp and now - stamp[0] > _MTIME_TICK_NS:
                continue
            try:
                _, sent = await self.sync(doc.path)
            except ToolError:
                await self.close(doc.path)
                sent = True
            if sent:
                moved.append(uri)
        return moved

    async def send_watched(self) -> list[tuple[Path, int]]:
        """Tell the server which watched files were created, changed or deleted on disk since
        the last look (by the run or behind it); the first look only takes the snapshot."""
        async with self._watch_lock:
            changes = await asyncio.to_thread(self.watched.changes)
            if changes and self.endpoint is not None and self.failure is None:
                events = file_events(changes, path_uri)
                await self.notify("workspace/didChangeWatchedFiles", {"changes": events})
                now = time.monotonic()
                for doc in self.documents.values():
                    doc.touched_at = now
                # An open file's own edit reaches the server as didChange; any other does not.
                behind = any(k != CHANGED or path_uri(p) not in self.documents for p, k in changes)
                if behind and not self.watched.registered:
                    await self._resend_open({path_uri(p) for p, _ in changes})
        return changes

    async def _resend_open(self, changed: set[str]) -> None:
        """A server that asked to watch nothing (clangd) checks what a file includes only when
        the file itself changes: each open document goes again as a new version (its text
        unchanged), so a deleted header is missed and a created one found. Not the changed
        files themselves: clangd published nothing for a header resent right after its open
        with the same text, and the write waited out its 10 s for that publish."""
        await self.resend([d for d in self.documents.values() if d.uri not in changed])

    async def resend(self, docs: list[Document], reopen: bool = False) -> None:
        """`docs` again as new versions, text unchanged: checked again against what they
        include now (clangd re-reads an edited header only for a file that changes)."""
        for doc in docs:
            if doc.path is None or self._sync_kind() == 0 or doc.uri not in self.documents:
                continue
            doc.version += 1
            doc.sent_at = time.monotonic()
            if reopen:
                await self.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
                item = {"uri": doc.uri, "languageId": doc.language_id, "version": doc.version}
                await self.notify(
                    "textDocument/didOpen", {"textDocument": item | {"text": doc.text}}
                )
                continue
            params = {
                "textDocument": {"uri": doc.uri, "version": doc.version},
                "contentChanges": [{"text": doc.text}],
            }
            await self.notify("textDocument/didChange", params)

    async def save(self, doc: Document) -> None:
        sync = self.capabilities.get("textDocumentSync")
        save = sync.get("save") if isinstance(sync, dict) else None
        params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
        if isinstance(save, dict) and save.get("includeText"):
            params["text"] = doc.text
        await self.notify("textDocument/didSave", params)

    async def close(self, path: Path) -> None:
        uri = path_uri(path)
        if self.documents.pop(uri, None) is not None and self.alive:
            await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self.published.pop(uri, None)

    # -- diagnostics -------------------------------------------------------------------------

    async def diagnostics(self, doc: Document, wait: float) -> list[dict[str, Any]] | None:
        """Diagnostics of `doc` at its current version: pulled when the server can, else the
        first publish for this version (version-less servers: the first one after it was sent).
        None when nothing arrived within `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        pull_failed = False
        while True:
            # Pull support may be registered dynamically a moment after initialize.
            if self.pulls and not pull_failed:
                report = await self._pull(doc, deadline)
                if report is not None:
                    return report
                pull_failed = True
                continue
            entry = self.published.get(doc.uri)
            # After a watched file changed, the publish before it may be stale: wait a moment
            # for the re-publish (a server that sends none thinks nothing changed).
            waiting = (
                entry is not None
                and entry.at < doc.touched_at
                and time.monotonic() - doc.touched_at < _TOUCHED_WAIT
            )
            # A server with a ready line (biome's project scan) may first publish an empty
            # list for a file opened before it loaded: wait for the line, then take the newest.
            scanning = not self._ready_logged()
            if (
                entry is not None
                and not waiting
                and not (scanning and loop.time() < deadline)
                and (
                    (entry.version is not None and entry.version >= doc.version)
                    or (entry.version is None and entry.at >= doc.sent_at)
                )
            ):
                if entry.version is None:
                    # How long the check took, not the project load it waited for (the first
                    # open of a typescript-language-server project: 2.1 s, then 0.08 s).
                    latency = max(entry.at - max(doc.sent_at, self.readiness.last_end), 0.0)
                    await self._settle(doc.uri, entry, deadline, latency)
                    return self.published[doc.uri].items
                return entry.items
            quiet = self.spec.unchanged_after
            if (
                entry is not None
                and entry.version is None
                and quiet is not None
                and time.monotonic() - doc.sent_at >= quiet
            ):
                return entry.items  # no publish since the change: nothing changed
            if not self.alive:
                reason = self.endpoint.lost if self.endpoint else None
                raise ServerGone(await self.crash_report("diagnostics", reason or "exited"))
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            await self.wait_change(min(remaining, 0.25))

    async def _pull(self, doc: Document, deadline: float) -> list[dict[str, Any]] | None:
        """A full pull report's items; None when the server's pull fails (then push is used)."""
        loop = asyncio.get_running_loop()
        while (remaining := deadline - loop.time()) > 0:
            try:
                report = await self.request(
                    "textDocument/diagnostic",
                    {"textDocument": {"uri": doc.uri}},
                    bound=remaining,
                    what="diagnostics",
                    soft=True,
                )
            except RpcTimeout:
                return None
            except ServerGone:
                raise
            except ToolError:
                return None
            if isinstance(report, dict) and report.get("kind") == "full":
                return self._relative(report.get("items"))
            await asyncio.sleep(0.05)
        return None

    async def _settle(
        self, uri: str, entry: Published, deadline: float, latency: float = 0.0
    ) -> None:
        """After a version-less publish, the later ones within a settle spell: the spec's
        `settle` (typescript-language-server publishes syntax first, the semantic errors a
        moment later), or as long as the first took when that was longer (a loaded machine)."""
        loop = asyncio.get_running_loop()
        spell = max(SETTLE, self.spec.settle, latency)
        end = min(deadline, loop.time() + spell)
        while (remaining := end - loop.time()) > 0:
            await self.wait_change(remaining)
            if self.published.get(uri) is not entry:
                entry = self.published[uri]
                end = min(deadline, loop.time() + spell)
