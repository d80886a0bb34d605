"""gopls under `--sandbox bwrap`: Go's build cache is writable inside (a private HOME) and its
module cache is the host's, so position requests answer instead of "no package metadata"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from livetools import Host
from livetools.sandbox.bwrap import INSIDE_HOME, go_caches
from tests.lsp.conftest import lsp_run
from tests.sandboxes import bwrap_sandbox, require_bwrap
from tests.support import require_binary


def test_go_caches_inside_are_writable_and_the_module_cache_the_hosts(tmp_path: Path) -> None:
    require_binary("go", "apt-get install golang-go")
    assert go_caches()["GOCACHE"].startswith(INSIDE_HOME + "/")
    (tmp_path / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    (tmp_path / "w.go").write_text("package w\n\nfunc W() int { return 1 }\n")
    with bwrap_sandbox(tmp_path) as sandbox:
        script = 'go env GOCACHE GOMODCACHE && go build ./... && touch "$(go env GOCACHE)/probe"'
        argv = sandbox.command(["sh", "-c", script], cwd="/workspace", env=None)
        out = subprocess.run(
            argv, env=sandbox.host_env(None), capture_output=True, text=True, timeout=120
        )
    assert out.returncode == 0, out.stderr
    cache, mods = out.stdout.split()[:2]
    assert cache == go_caches()["GOCACHE"], out.stdout
    assert mods == go_caches().get("GOMODCACHE", mods), out.stdout


async def test_gopls_answers_references_inside_bwrap(tmp_path: Path) -> None:
    require_bwrap()
    require_binary("gopls", "apt-get install gopls")
    (tmp_path / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    (tmp_path / "lib.go").write_text("package main\n\nfunc Decode() int { return 1 }\n")
    (tmp_path / "main.go").write_text("package main\n\nfunc main() { _ = Decode() }\n")
    options = {"sandbox": "bwrap", "lsp": {"prefer": ["gopls"]}}
    async with Host().open_run(tmp_path, options=options) as run:
        asked = {"action": "references", "file": "lib.go", "line": 3, "symbol": "Decode"}
        r = await run.call("lsp", asked)
        assert not r.is_error and r.text.startswith("2 references"), r.text


async def test_status_names_a_server_whose_requests_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gopls whose Go cache cannot be written answers every position request with an error;
    status says so instead of "ready"."""
    require_binary("gopls", "apt-get install gopls")
    monkeypatch.setenv("GOCACHE", "/proc/livetools-unwritable")
    (tmp_path / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    (tmp_path / "lib.go").write_text("package main\n\nfunc Decode() int { return 1 }\n")
    async with lsp_run(tmp_path, ["gopls"]) as run:
        asked = {"action": "references", "file": "lib.go", "line": 3, "symbol": "Decode"}
        r = await run.call("lsp", asked)
        assert r.is_error, r.text
        r = await run.call("lsp", {"action": "status"})
        assert "failing requests (last: references" in r.text, r.text
