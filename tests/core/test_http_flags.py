"""`serve`'s HTTP flags are checked before anything starts: a flag that means something only
with `--http` is refused without it (it was ignored, and stdio served), `--root` beside
`--runs-under` is refused (it was ignored), `--instance` must be usable in a URL; and strings a
client sends to POST /runs that no path or UTF-8 text can hold are refused with 400 (they were
a 500, and a lone surrogate in a conversation id made every later `GET /runs` a 500)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tests.core.http_serving import WAIT, serve_http
from tests.support import plugin_env

ADMIN = "admin-token-for-the-flags-test-0123456789"


def refused(*args: str) -> str:
    """The one-sentence stderr of a `serve` that must exit 2 before it starts anything."""
    command = [sys.executable, "-m", "livetools.faces.cli", "serve", *args]
    done = subprocess.run(
        command,
        env=plugin_env(LIVETOOLS_HTTP_TOKEN=""),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and not done.stdout, done.stderr
    return done.stderr


def test_http_flags_without_http_are_refused(tmp_path: Path) -> None:
    err = refused(
        "--root",
        str(tmp_path),
        "--runs-under",
        str(tmp_path),
        "--instance",
        "n1",
        "--run-ttl",
        "5",
        "--token-file",
        "/nonexistent",
    )
    assert (
        "--runs-under, --instance, --token-file, --run-ttl only mean something with --http" in err
    )


@pytest.mark.parametrize(
    "flags",
    [
        ["--no-token"],
        ["--max-runs", "0"],
        ["--allow-host", "proxy.example"],
        ["--header-timeout", "5"],
        ["--body-timeout", "5"],
        ["--token-verifier", "m:V"],
    ],
)
def test_each_http_flag_needs_http(tmp_path: Path, flags: list[str]) -> None:
    err = refused("--root", str(tmp_path), *flags)
    assert f"{flags[0]} only mean something with --http" in err


def test_root_with_runs_under_is_refused(tmp_path: Path) -> None:
    err = refused("--http", "127.0.0.1:0", "--root", str(tmp_path), "--runs-under", str(tmp_path))
    assert "--root and --runs-under: pick one" in err
    # `--root .` typed out is a --root too, not the default
    err = refused("--http", "127.0.0.1:0", "--root", ".", "--runs-under", str(tmp_path))
    assert "--root and --runs-under: pick one" in err


@pytest.mark.parametrize("name", ["a/b", "", "x" * 41, "a b", "n1?x", "é"])
def test_bad_instance_is_refused(tmp_path: Path, name: str) -> None:
    err = refused("--http", "127.0.0.1:0", "--runs-under", str(tmp_path), "--instance", name)
    assert f"--instance {name!r}: 1 to 40 letters, digits" in err


def test_instance_needs_runs_under(tmp_path: Path) -> None:
    err = refused("--http", "127.0.0.1:0", "--root", str(tmp_path), "--instance", "n1")
    assert "--instance names the runs of a run server: it needs --runs-under DIR" in err


@pytest.mark.parametrize("flag", ["--header-timeout", "--body-timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan"])
def test_bad_read_timeout_is_refused(tmp_path: Path, flag: str, value: str) -> None:
    err = refused("--http", "127.0.0.1:0", "--no-token", "--root", str(tmp_path), flag, value)
    assert f"{flag} must be a positive number of seconds" in err


def post_raw(http: httpx2.Client, body: str) -> httpx2.Response:
    """`body` is JSON text as a client wrote it (escapes such as \\u0000 and \\ud800 kept)."""
    return http.post(
        "/runs", content=body.encode("ascii"), headers={"Content-Type": "application/json"}
    )


def test_runs_api_refuses_unusable_strings_and_stays_listable(tmp_path: Path) -> None:
    under = tmp_path / "runs"
    (under / "proj").mkdir(parents=True)
    args = ("--runs-under", str(under), "--instance", "n1.eu_2")
    with (
        serve_http(*args, env={"LIVETOOLS_HTTP_TOKEN": ADMIN}) as server,
        httpx2.Client(
            base_url=server.url, timeout=WAIT, headers={"Authorization": f"Bearer {ADMIN}"}
        ) as http,
    ):
        for body, field, what in [
            ('{"root": "proj\\u0000x"}', "root", "NUL"),
            ('{"root": "proj\\ud800"}', "root", "lone surrogate (\\ud800 at 4)"),
            ('{"root": "\\udfff"}', "root", "lone surrogate (\\udfff at 0)"),
            (
                '{"root": "proj", "conversation_id": "c\\udc80"}',
                "conversation_id",
                "lone surrogate",
            ),
            ('{"root": "proj", "conversation_id": "c\\u0000"}', "conversation_id", "NUL"),
        ]:
            answer = post_raw(http, body)
            assert answer.status_code == 400, (body, answer.text)
            assert answer.json()["error"].startswith(f'"{field}" contains a {what}'), answer.text
        long = json.dumps({"root": "proj", "conversation_id": "c" * 257})
        assert post_raw(http, long).status_code == 400
        listed = http.get("/runs")
        assert listed.status_code == 200 and listed.json() == {"runs": []}

        # An instance name with '.' and '_' makes ids its runs can be reached and deleted by.
        made = http.post("/runs", json={"root": "proj", "conversation_id": "c-\u00e9"})
        assert made.status_code == 201, made.text
        run_id = made.json()["run_id"]
        assert run_id.startswith("n1.eu_2-")
        assert http.get(f"/runs/{run_id}").json()["conversation_id"] == "c-\u00e9"
        assert http.get("/runs").status_code == 200
        assert http.delete(f"/runs/{run_id}").status_code == 204
        assert http.get(f"/runs/{run_id}").status_code == 404
