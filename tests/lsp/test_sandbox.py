"""The lsp family inside a real bubblewrap sandbox (root at /workspace, private /tmp, no network,
own PID namespace): basedpyright and typescript-language-server run in the jail and speak its
paths; definition, references, rename, diagnostics on write and the project checker come back
relative to the root; every frame that crossed the edge is checked for the host root; nothing is
left after close or after a SIGKILLed host; a binary only the host has is "not usable" at once."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from livetools import Host, Ports, Run, hookimpl
from livetools.faces import harness
from livetools.faces.status import render_status, status_report
from livetools.procs import reaper_pid, session_members
from livetools.sandbox import BwrapSandbox
from livetools.sandbox.paths import _CONTENT_KEYS
from livetools_lsp import ServerSpec
from livetools_lsp import server as server_module
from tests.corpus import corpus_copy, realworld
from tests.lsp.test_on_write import new_diagnostics
from tests.lsp.test_other_servers import INSTALL
from tests.sandboxes import TOKEN_ENV, bwrap_sandbox, marked, require_bwrap
from tests.support import assert_gone, require_binary

INSIDE = "/workspace"

SHAPES_PY = '''\
"""Shapes."""


class Square:
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side * self.side


def total_area(shapes: list[Square]) -> float:
    return sum(s.area() for s in shapes)
'''

APP_PY = """\
from extlib import helper
from shapes import Square, total_area

unit = Square(1.0)
big = Square(3.0)
print(total_area([unit, big]), helper())
HOST_ROOT = "{root}/data.txt"  # content: reaches the server byte for byte
"""

SHAPES_TS = """\
/** A square of a given side. */
export class Square {
  constructor(public side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

export function totalArea(shapes: Square[]): number {
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}
"""

APP_TS = """\
import { Square, totalArea } from "./shapes";

const unit = new Square(1);
const big = new Square(3);
console.log(totalArea([unit, big]));
"""


def _python_project(root: Path) -> Path:
    """Two modules and a project venv (under the root) holding a third-party module: the
    interpreter path pushed to the server is a host path that must arrive as the inside's."""
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'sbx'\nversion = '0'\n")
    (root / "shapes.py").write_text(SHAPES_PY)
    (root / "app.py").write_text(APP_PY.format(root=root))
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")],
        check=True,
        timeout=120,
    )
    [site] = (root / ".venv" / "lib").glob("python3*/site-packages")
    (site / "extlib.py").write_text("def helper() -> int:\n    return 1\n")
    return root


def _ts_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "package.json").write_text('{ "name": "sbx", "version": "0.1.0", "private": true }\n')
    (root / "tsconfig.json").write_text(
        '{ "compilerOptions": { "target": "ES2020", "module": "commonjs", "strict": true, '
        '"noEmit": true }, "include": ["src"] }\n'
    )
    (root / "src" / "shapes.ts").write_text(SHAPES_TS)
    (root / "src" / "app.ts").write_text(APP_TS)
    return root


@dataclass
class Wire:
    """Every message as it crossed the sandbox's edge: what the server was sent (after the
    mapping) and what it wrote (before it)."""

    sent: list[Any] = field(default_factory=list)
    got: list[Any] = field(default_factory=list)

    def strings(self, messages: list[Any], content: bool = False) -> Iterator[str]:
        """Every string of `messages`; document contents only when `content`."""

        def walk(node: Any, key: str | None) -> Iterator[str]:
            if isinstance(node, str):
                if content or key not in _CONTENT_KEYS:
                    yield node
            elif isinstance(node, dict):
                for k, v in node.items():
                    yield from walk(v, k)
            elif isinstance(node, list):
                for v in node:
                    yield from walk(v, key)

        for message in messages:
            yield from walk(message, None)

    def assert_inside_only(self, root: Path) -> None:
        """The host root never reached the server outside document contents (so it never
        came back either); the inside's root did, both ways."""
        host = str(root)
        leaked = [s for s in self.strings(self.sent) if host in s]
        assert not leaked, leaked[:5]
        assert not [s for s in self.strings(self.got) if host in s]
        assert any(s.startswith(f"file://{INSIDE}/") for s in self.strings(self.sent))
        assert any(s.startswith(f"file://{INSIDE}/") for s in self.strings(self.got))


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    record = Wire()
    real = server_module.wire_maps

    def recording(sandbox: Any) -> tuple[Any, Any]:
        inbound, outbound = real(sandbox)

        def seen_in(message: Any) -> Any:
            record.got.append(message)
            return inbound(message) if inbound else message

        def seen_out(message: Any) -> Any:
            message = outbound(message) if outbound else message
            record.sent.append(message)
            return message

        return seen_in, seen_out

    monkeypatch.setattr(server_module, "wire_maps", recording)
    return record


@asynccontextmanager
async def sandboxed(
    root: Path, server: str, *, plugins: tuple[tuple[str, object], ...] = (), **options: Any
) -> AsyncIterator[tuple[Run, BwrapSandbox]]:
    """A run whose processes start in a bwrap sandbox of `root`, closed (and the sandbox with
    it) on the way out."""
    with bwrap_sandbox(root) as sandbox:
        host = Host(plugins=[("harness", harness), *plugins])
        lsp = {"prefer": [server], **options}
        run = await host.open_run(root, ports=Ports(sandbox=sandbox), options={"lsp": lsp})
        try:
            yield run, sandbox
        finally:
            await run.aclose()


async def ok(run: Run, tool: str, args: dict[str, Any], *, relative: bool = True) -> Any:
    """A successful call; unless told otherwise, one that names no path of the inside."""
    result = await run.call(tool, args)
    assert not result.is_error, result.text
    if relative:
        assert INSIDE not in result.text + json.dumps(result.data), result.text
    return result


def server_tree(run: Run) -> list[int]:
    """Host pids of every process of the running servers' sessions (bwrap, its init, the
    server and what it started)."""
    sup = run.resource("lsp")
    return [p for s in sup.servers.values() if s.pid for p in session_members(s.pid)]


def assert_jailed(pids: list[int], name: str) -> None:
    """The processes named `name` run in another PID namespace, started in /workspace."""
    own = os.readlink("/proc/self/ns/pid")
    jailed = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if name in cmdline and "bwrap" not in cmdline.split(" ", 1)[0]:
                jailed.append((os.readlink(f"/proc/{pid}/ns/pid"), os.readlink(f"/proc/{pid}/cwd")))
        except OSError:
            continue
    assert jailed, f"no {name} process among {pids}"
    assert all(ns != own for ns, _ in jailed), jailed
    assert any(cwd == INSIDE for _, cwd in jailed), jailed  # started there (node may chdir)


async def test_basedpyright_in_bwrap(tmp_path: Path, wire: Wire) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = _python_project(tmp_path / "proj")
    async with sandboxed(root, "basedpyright") as (run, _):
        status = await ok(run, "lsp", {"action": "status"}, relative=False)
        assert status.text.startswith(
            "sandbox: bwrap (root at /workspace, no network): servers and checkers run inside it"
        ), status.text
        assert "usable: basedpyright (root .;" in status.text

        started = time.monotonic()
        r = await ok(
            run, "lsp", {"action": "definition", "file": "app.py", "line": 4, "symbol": "Square"}
        )
        first = time.monotonic() - started
        assert r.data["locations"] == [{"path": "shapes.py", "line": 4, "text": "class Square:"}]
        print(f"basedpyright in bwrap: first definition {first:.2f}s")

        # The project venv's interpreter (a host path under the root) reached the server as
        # /workspace/.venv/bin/python: it found the venv's site-packages inside.
        r = await ok(
            run, "lsp", {"action": "definition", "file": "app.py", "line": 6, "symbol": "helper"}
        )
        [where] = r.data["locations"]
        assert where["path"].startswith(".venv/lib/python3") and where["path"].endswith(
            "site-packages/extlib.py"
        ), r.text
        assert where["line"] == 1
        python = f"{INSIDE}/.venv/bin/python"
        assert python in wire.strings(wire.sent), "pythonPath was not mapped inside"

        r = await ok(
            run,
            "lsp",
            {"action": "references", "file": "shapes.py", "line": 12, "symbol": "total_area"},
        )
        assert sorted((d["path"], d["line"]) for d in r.data["locations"]) == [
            ("app.py", 2),
            ("app.py", 6),
            ("shapes.py", 12),
        ], r.text

        # The other read actions answer relative too (`ok` checks no inside path is shown).
        at = {"file": "shapes.py", "line": 12, "symbol": "total_area"}
        assert (
            "app.py:1: module (module) app.py; at 6"
            in (await ok(run, "lsp", {"action": "callers", **at})).text
        )
        assert "def total_area" in (await ok(run, "lsp", {"action": "hover", **at})).text
        r = await ok(run, "lsp", {"action": "symbols", "query": "Squ"})
        assert "shapes.py:4: class Square" in r.text, r.text
        await ok(run, "lsp", {"action": "symbols", "file": "shapes.py"})
        await ok(run, "lsp", {"action": "diagnostics", "file": "app.py"})
        tree = server_tree(run)
        assert_jailed(tree, "basedpyright")

        # Diagnostics on write, through the harness's edit (write wrapping).
        r = await run.call(
            "edit",
            {
                "path": "app.py",
                "old": "big = Square(3.0)\n",
                "new": "big = Square(3.0)\noops = nothing_here\n",
            },
        )
        assert not r.is_error, r.text
        news = new_diagnostics(r.text)
        error = 'app.py:6: error [reportUndefinedVariable]: "nothing_here" is not defined'
        assert news and news[0] == error and INSIDE not in r.text, r.text
        # The project checker (basedpyright's CLI) runs inside; its absolute paths are made
        # relative.
        r = await ok(run, "lsp", {"action": "diagnostics", "file": "*"})
        assert r.text.startswith("$ basedpyright (in .): exit 1\napp.py\n"), r.text
        assert 'app.py:6:8 - error: "nothing_here" is not defined' in r.text, r.text
        assert str(root) not in r.text
        r = await run.call("edit", {"path": "app.py", "old": "oops = nothing_here\n", "new": ""})
        assert new_diagnostics(r.text) == [] and "not ready" not in r.text, r.text

        # lsp_rename writes the files on the host, from the inside's WorkspaceEdit.
        r = await ok(
            run, "lsp_rename", {"file": "app.py", "line": 4, "symbol": "Square", "new_name": "Box"}
        )
        assert "edits in 2 files: app.py (" in r.text.splitlines()[0], r.text
        assert sorted(r.data["files"]) == ["app.py", "shapes.py"]
        assert "class Box:" in (root / "shapes.py").read_text()
        app = (root / "app.py").read_text()
        assert "Square" not in app and app.count("Box") == 3
        assert f'HOST_ROOT = "{root}/data.txt"' in app  # contents untouched by the mapping

        # The document's contents went byte for byte, the host root in them included.
        opened = [
            m["params"]["textDocument"]["text"]
            for m in wire.sent
            if m.get("method") == "textDocument/didOpen"
        ]
        assert any(f'"{root}/data.txt"' in text for text in opened)
        wire.assert_inside_only(root)

        # Status (`livetools status` too) names the sandbox; the server outlives the pid watchdog
        # of vscode-languageserver (every 3 s; it exits when the pid it was sent is gone).
        report = await status_report(run.host, run)
        assert report["resources"]["lsp"]["sandbox"] == "bwrap (root at /workspace, no network)"
        assert "sandbox: bwrap (root at /workspace, no network)" in render_status(report)
        sup = run.resource("lsp")
        [server] = sup.servers.values()
        while server.alive and server.uptime() < 6.0:  # past the watchdog's first two checks
            await server.wait_change(6.0 - server.uptime())
        assert server.alive, (server.failure, server.child and server.child.returncode)
        init = next(m for m in wire.sent if m.get("method") == "initialize")
        assert init["params"]["processId"] is None
        assert init["params"]["rootUri"] == f"file://{INSIDE}"
    assert_gone(tree, within=15)


async def test_typescript_in_bwrap(tmp_path: Path, wire: Wire) -> None:
    require_binary("typescript-language-server", INSTALL)
    root = _ts_project(tmp_path / "proj")
    async with sandboxed(root, "typescript-language-server") as (run, _):
        started = time.monotonic()
        r = await ok(
            run,
            "lsp",
            {"action": "definition", "file": "src/app.ts", "line": 3, "symbol": "Square"},
        )
        first = time.monotonic() - started
        assert r.data["locations"][0] == {
            "path": "src/shapes.ts",
            "line": 2,
            "text": "export class Square {",
        }, r.text
        print(f"typescript-language-server in bwrap: first definition {first:.2f}s")

        r = await ok(
            run,
            "lsp",
            {"action": "references", "file": "src/shapes.ts", "line": 9, "symbol": "totalArea"},
        )
        assert sorted((d["path"], d["line"]) for d in r.data["locations"]) == [
            ("src/app.ts", 1),
            ("src/app.ts", 5),
            ("src/shapes.ts", 9),
        ], r.text
        r = await ok(run, "lsp", {"action": "symbols", "query": "Squ"})
        assert "src/shapes.ts:2: class Square" in r.text, r.text
        r = await ok(
            run, "lsp", {"action": "hover", "file": "src/app.ts", "line": 3, "symbol": "Square"}
        )
        assert "A square of a given side." in r.text, r.text
        tree = server_tree(run)
        assert_jailed(tree, "typescript-language-server")
        assert_jailed(tree, "tsserver")

        r = await run.call(
            "edit",
            {
                "path": "src/app.ts",
                "old": "const big",
                "new": 'const bad: number = "x";\nconst big',
            },
        )
        assert not r.is_error, r.text
        news = new_diagnostics(r.text)
        assert news and news[0].startswith("src/app.ts:4: error [2322]"), r.text
        assert INSIDE not in r.text
        r = await run.call(
            "edit", {"path": "src/app.ts", "old": 'const bad: number = "x";\n', "new": ""}
        )
        assert new_diagnostics(r.text) == [] and "not ready" not in r.text, r.text

        r = await ok(
            run,
            "lsp_rename",
            {"file": "src/app.ts", "line": 3, "symbol": "Square", "new_name": "Box"},
        )
        assert "edits in 2 files" in r.text.splitlines()[0], r.text
        assert "export class Box {" in (root / "src" / "shapes.ts").read_text()
        app = (root / "src" / "app.ts").read_text()
        assert "Square" not in app and app.count("Box") == 3, app

        # tsc --noEmit inside, on the renamed project.
        r = await ok(run, "lsp", {"action": "diagnostics", "file": "*"})
        assert r.text.startswith("$ tsc --noEmit --pretty false (in .): clean"), r.text
        init = next(m for m in wire.sent if m.get("method") == "initialize")
        assert init["params"]["processId"] is None
        wire.assert_inside_only(root)
    assert_gone(tree, within=15)


@realworld
async def test_click_in_bwrap(tmp_path: Path, wire: Wire) -> None:
    """A real project: click's src layout found inside (no config of its own), the same 37
    references to `echo` under src/click as on the host."""
    require_binary("basedpyright-langserver", "uv sync")
    root = corpus_copy("click", tmp_path)
    async with sandboxed(root, "basedpyright") as (run, _):
        # tests/ imports the package absolutely: only the automatic `src` search path finds it.
        at = {"file": "tests/test_utils.py", "line": 16, "symbol": "echo"}
        r = await ok(run, "lsp", {"action": "definition", **at})
        assert r.data["locations"][0]["path"] == "src/click/utils.py", r.text
        # The standard library is outside the root: the same host path inside (read-only).
        at = {"file": "src/click/utils.py", "line": 1, "symbol": "os"}
        r = await ok(run, "lsp", {"action": "definition", **at})
        assert r.data["locations"][0].get("outside_root") is True, r.text
        echo = {"action": "references", "file": "src/click/utils.py", "line": 219}
        r = await ok(run, "lsp", {**echo, "symbol": "echo", "path": "src/click"})
        assert r.text.startswith('37 references to "echo" under src/click'), r.text
        assert all(d["path"].startswith("src/click/") for d in r.data["locations"])
        tree = server_tree(run)
        wire.assert_inside_only(root)
    assert_gone(tree, within=15)


async def test_paths_in_messages_read_as_the_hosts(tmp_path: Path) -> None:
    """A diagnostic that names files ("Cycle detected in import chain /workspace/a.py ...")
    reads as it would without a sandbox: the project's paths relative to it, never the
    inside's (nor the host's absolute ones)."""
    require_binary("basedpyright-langserver", "uv sync")
    root = tmp_path / "cyc"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'c'\nversion = '0'\n"
        '[tool.basedpyright]\nreportImportCycles = "error"\n'
    )
    (root / "a.py").write_text("import b\n\nX = 1\nprint(b.Y)\n")
    (root / "b.py").write_text("import a\n\nY = 2\nprint(a.X)\n")
    async with sandboxed(root, "basedpyright") as (run, _):
        r = await ok(run, "lsp", {"action": "diagnostics", "file": "a.py"})
        chain = "1: error [reportImportCycles]: Cycle detected in import chain a.py b.py"
        assert chain in r.text and str(root) not in r.text and INSIDE not in r.text, r.text


def test_a_message_maps_every_path_in_it(tmp_path: Path) -> None:
    sandbox = BwrapSandbox(tmp_path)
    host = tmp_path.resolve()
    try:
        said = (
            f"chain\n  {INSIDE}/a.py\n  see file://{INSIDE}/c.py#L1, not {INSIDE}2/x "
            f'nor /x{INSIDE}/y; "{INSIDE}".'
        )
        back = sandbox.paths.inbound({"message": said, "text": said})
        assert back == {
            "message": f"chain\n  {host}/a.py\n  see {host.as_uri()}/c.py#L1, not {INSIDE}2/x "
            f'nor /x{INSIDE}/y; "{host}".',
            "text": said,  # contents stay as they are
        }
        assert sandbox.paths.outbound(back) == {"message": said, "text": said}
    finally:
        sandbox.close()


class HostOnly:
    """A server whose binary is on the host's PATH in a folder the sandbox does not show (under
    the host's /tmp)."""

    @hookimpl
    def livetools_lsp_servers(self) -> ServerSpec:
        return ServerSpec(id="host-only", command=("lt-ls-host-only",), extensions={".hx": "hx"})


async def test_a_binary_only_the_host_has_is_not_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.hx").write_text("hello\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "lt-ls-host-only").write_text("#!/bin/sh\nexec sleep 600\n")
    (tools / "lt-ls-host-only").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    args = {"action": "hover", "file": "a.hx", "line": 1, "symbol": "hello"}
    plugins = (("host-only", HostOnly()),)

    async with sandboxed(root, "host-only", plugins=plugins) as (run, _):
        started = time.monotonic()
        r = await run.call("lsp", args)
        assert time.monotonic() - started < 30
        assert r.is_error
        assert r.text == (
            "no usable language server for a.hx: host-only: "
            "binary not on PATH inside sandbox bwrap: lt-ls-host-only"
        ), r.text
        status = await ok(run, "lsp", {"action": "status"}, relative=False)
        assert (
            "not usable: host-only: binary not on PATH inside sandbox bwrap: lt-ls-host-only"
            in status.text
        ), status.text
        assert run.resource("lsp").servers == {}

    # A sandbox that cannot start anything says so, instead of "binary not on PATH".
    with bwrap_sandbox(root, bwrap="no-such-bwrap") as broken:
        host = Host(plugins=[("harness", harness), *plugins])
        run = await host.open_run(root, ports=Ports(sandbox=broken))
        try:
            started = time.monotonic()
            r = await run.call("lsp", args)
            assert time.monotonic() - started < 30
            assert r.is_error
            assert "the sandbox cannot start processes" in r.text, r.text
            assert "no-such-bwrap" in r.text, r.text
        finally:
            await run.aclose()


HOST_SCRIPT = """
import asyncio, sys
from pathlib import Path
from livetools import Host

async def main(root):
    run = await Host().open_run(Path(root), options={"sandbox": "bwrap", "lsp": {"prefer": ["basedpyright"]}})
    args = {"action": "definition", "file": "app.py", "line": 4, "symbol": "Square"}
    result = await run.call("lsp", args)
    sup = run.resource("lsp")
    print(result.is_error, [s.pid for s in sup.servers.values()], flush=True)
    await asyncio.sleep(600)

asyncio.run(main(sys.argv[1]))
"""  # noqa: E501


def test_nothing_survives_a_sigkilled_host(tmp_path: Path) -> None:
    require_bwrap()
    require_binary("basedpyright-langserver", "uv sync")
    root = _python_project(tmp_path / "proj")
    token = uuid.uuid4().hex
    # passed inside by name: a sandbox's environment is an allow-list
    env = {**os.environ, TOKEN_ENV: token, "LIVETOOLS_SANDBOX_ENV": TOKEN_ENV}
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_SCRIPT, str(root)],
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    pids: list[int] = []
    try:
        assert host.stdout is not None
        ready, _, _ = select.select([host.stdout], [], [], 180)
        assert ready, "the host did not answer a definition within 180s"
        line = host.stdout.readline().decode()
        assert line.startswith("False ["), line
        [sid] = json.loads(line.split(" ", 1)[1])
        tree = session_members(sid)
        pids = marked(token, {p for p in (os.getpid(), host.pid, reaper_pid()) if p})
        assert set(tree) <= set(pids), (tree, pids)
        assert len(tree) >= 3, tree  # bwrap, its init, the server (and its node)
        assert_jailed(tree, "basedpyright")
    finally:
        os.killpg(host.pid, signal.SIGKILL)
        host.wait(30)
    assert_gone(pids, within=20)


def test_a_workspace_edit_keyed_by_uri_is_mapped(tmp_path: Path) -> None:
    """typescript-language-server answers a rename with `changes` keyed by document URI: the
    keys must come back as the host's, the new text untouched."""
    sandbox = BwrapSandbox(tmp_path)
    try:
        edit = {
            "changes": {
                f"file://{INSIDE}/src/a.ts": [{"newText": f"{INSIDE}/x", "range": {}}],
                "untitled:b": [],
            }
        }
        back = sandbox.paths.inbound(edit)
        assert back == {
            "changes": {
                f"{tmp_path.resolve().as_uri()}/src/a.ts": [
                    {"newText": f"{INSIDE}/x", "range": {}}
                ],
                "untitled:b": [],
            }
        }
        assert sandbox.paths.outbound(back) == edit
    finally:
        sandbox.close()
