"""A run server started with `--sandbox bwrap` puts every run it creates in its own bwrap
sandbox (the command line's run options are each run's base), and no client can name another
sandbox or a launcher of its own: that boundary is the operator's."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from tests.core.http_serving import WAIT, connect, serve_http, text_of
from tests.sandboxes import require_bwrap

ADMIN = "admin-token-for-the-sandboxed-run-server"


def create(url: str, body: dict[str, object]) -> httpx2.Response:
    with httpx2.Client(timeout=WAIT, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        return http.post(f"{url}/runs", json=body)


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_every_created_run_starts_its_processes_in_the_servers_sandbox(
    era: str, tmp_path: Path
) -> None:
    require_bwrap()
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "pyproject.toml").write_text("[project]\nname = 'repo'\n")
    with serve_http(
        "--runs-under", str(tmp_path), "--sandbox", "bwrap", env={"LIVETOOLS_HTTP_TOKEN": ADMIN}
    ) as server:
        made = create(server.url, {"root": "repo"})
        assert made.status_code == 201, made.text
        run = made.json()
        async with connect(era, f"{server.url}{run['url']}", run["token"]) as conn:
            result = await conn.call(
                "eval",
                {
                    "code": "import os; os.getcwd()",
                    "description": "show where the kernel process is running",
                },
            )
            assert not result.is_error, text_of(result)
            assert "'/workspace'" in text_of(result)
        for options, says in [
            ({"sandbox": "none"}, "the server's sandbox"),
            ({"sandbox": {"wrap": "sh -c"}}, "the server's sandbox"),
        ]:
            refused = create(server.url, {"root": "repo", "options": options})
            assert refused.status_code == 400 and says in refused.text, refused.text


def test_a_client_may_not_bring_a_launcher(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    with serve_http("--runs-under", str(tmp_path), env={"LIVETOOLS_HTTP_TOKEN": ADMIN}) as server:
        refused = create(server.url, {"root": "repo", "options": {"sandbox": {"wrap": "sh -c"}}})
        assert refused.status_code == 400, refused.text
        assert "a launcher is the server's" in refused.text
        odd = create(server.url, {"root": "repo", "options": {"sandbox": "podman"}})
        assert odd.status_code == 400
