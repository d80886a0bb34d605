"""`serve --http` is never open to every local user by default: without a token it makes one
(a 0600 file in a 0700 state folder, printed once with the header to send) and another uid,
with curl on the loopback port, is refused before any cell runs; `--no-token` is explicit,
warned and loopback only; a token file others can read is refused."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tests.core.http_serving import WAIT, serve_http
from tests.support import missing, plugin_env

MODERN = "2026-07-28"
MADE = re.compile(r"it is in (\S+) \(mode 600.*\n\s+Authorization: Bearer ([0-9a-f]{64})\n")


def serve_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "livetools.faces.cli", "serve", *args]


def refused(*args: str, env: dict[str, str] | None = None) -> str:
    """The one-sentence stderr of a serve that must exit 2 before it listens."""
    done = subprocess.run(
        serve_argv(*args),
        env=plugin_env(**{"LIVETOOLS_HTTP_TOKEN": "", **(env or {})}),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def as_nobody_curl(url: str, code: str, token: str | None) -> tuple[str, str]:
    """(HTTP status, body) of a 2026-era tools/call of `eval`, sent by curl as uid nobody."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "eval",
            "arguments": {"code": code, "description": "write a marker file in the root"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = [
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {MODERN}",
        "Mcp-Method: tools/call",
        "Mcp-Name: eval",
    ]
    if token is not None:
        headers.append(f"Authorization: Bearer {token}")
    command = ["runuser", "-u", "nobody", "--", "curl", "-s"]
    command += ["-w", "\n%{http_code}", "-m", str(int(WAIT)), "-X", "POST", url]
    for header in headers:
        command += ["-H", header]
    command += ["--data-binary", json.dumps(body)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT + 10)
    body_text, _, status = done.stdout.rpartition("\n")
    return status, body_text


def require_second_uid() -> None:
    if os.geteuid() != 0 or not shutil.which("runuser") or not shutil.which("curl"):
        missing("a second uid: run as root with runuser (util-linux) and curl installed")


def test_another_user_cannot_call_a_tokenless_server(tmp_path: Path) -> None:
    require_second_uid()
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    state.mkdir(mode=0o700)
    marker = root / "ran"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    env = {"LIVETOOLS_HTTP_TOKEN": "", "XDG_RUNTIME_DIR": str(state)}
    with serve_http("--root", str(root), env=env) as server:
        made = MADE.search(server.log)
        assert made, server.log
        path, token = Path(made.group(1)), made.group(2)
        assert path.parent == state / "livetools" / "http"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.read_text().strip() == token
        assert server.log.count(token) == 1  # printed once

        url = f"{server.url}/mcp"
        assert as_nobody_curl(url, code, None)[0] == "401"
        assert as_nobody_curl(url, code, "0" * 64)[0] == "401"
        assert not marker.exists()  # refused before any cell ran
        status, answer = as_nobody_curl(url, code, token)
        assert status == "200", answer
        assert json.loads(answer)["result"].get("isError") is not True, answer
        assert marker.read_text() == "ran"
    assert not path.exists()  # the made token's file goes with the server


def test_no_token_is_explicit_and_warned(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {"LIVETOOLS_HTTP_TOKEN": "", "XDG_RUNTIME_DIR": str(state)}
    with serve_http("--no-token", "--root", str(tmp_path), env=env) as server:
        assert "WARNING: --no-token: every local user can call this server's tools" in server.log
        assert "Authorization: Bearer" not in server.log
    assert not (state / "livetools" / "http").exists() or not any(
        (state / "livetools" / "http").iterdir()
    )


def test_no_token_beyond_loopback_is_refused(tmp_path: Path) -> None:
    err = refused("--http", "0.0.0.0:0", "--no-token", "--root", str(tmp_path))
    assert "--no-token serves anyone who reaches 0.0.0.0: bind 127.0.0.1" in err


def test_no_token_with_a_token_is_refused(tmp_path: Path) -> None:
    err = refused(
        "--http",
        "127.0.0.1:0",
        "--no-token",
        "--root",
        str(tmp_path),
        env={"LIVETOOLS_HTTP_TOKEN": "s3cret-token-for-the-test-0123456789"},
    )
    assert "--no-token and $LIVETOOLS_HTTP_TOKEN: pick one" in err


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_token_file_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-for-the-test-0123456789\n")
    token_file.chmod(mode)
    args = ["--http", "127.0.0.1:0", "--root", str(tmp_path), "--token-file", str(token_file)]
    err = refused(*args)
    assert f"open to group or others (mode {mode:o}); run `chmod 600 {token_file}`" in err


def test_token_file_of_mode_600_is_used(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-for-the-test-0123456789\n")
    token_file.chmod(0o600)
    args = ("--root", str(tmp_path), "--token-file", str(token_file))
    with serve_http(*args, env={"LIVETOOLS_HTTP_TOKEN": ""}) as server:
        assert "WARNING" not in server.log and "Authorization: Bearer" not in server.log
        # a single run's token guards /metrics too (any local user read the counters before)
        auth = {"Authorization": "Bearer s3cret-token-for-the-test-0123456789"}
        assert httpx2.get(f"{server.url}/metrics", timeout=30).status_code == 401
        assert httpx2.get(f"{server.url}/metrics", headers=auth, timeout=30).status_code == 200


def test_a_refused_start_leaves_no_token_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    args = ["--http", "127.0.0.1:0", "--root", str(tmp_path), "--surface", "nonsense"]
    err = refused(*args, env={"XDG_RUNTIME_DIR": str(state)})
    assert "unknown surface" in err
    assert not list(state.rglob("*.token"))
