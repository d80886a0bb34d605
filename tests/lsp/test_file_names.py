"""Files served by their whole name (`Dockerfile`, `CMakeLists.txt`), not only by suffix: the
built-in docker-langserver and cmake-language-server answer for them, and `filenames` in
configuration adds names to a server."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.conftest import lsp_run
from tests.support import require_binary

DOCKERFILE = "FROM debian:12\nARG USER=app\nRUN useradd $USER\nUSER $USER\n"


async def test_a_dockerfile_by_its_name(tmp_path: Path) -> None:
    require_binary("docker-langserver", "bash plugins/lsp/deps/npm.sh")
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    async with lsp_run(tmp_path, ["docker-langserver"]) as run:
        r = await run.call("lsp", {"action": "symbols", "file": "Dockerfile"})
        assert not r.is_error and "FROM" in r.text, r.text
        r = await run.call(
            "lsp", {"action": "hover", "file": "Dockerfile", "line": 2, "symbol": "ARG"}
        )
        assert not r.is_error and "ARG" in r.text, r.text


async def test_cmakelists_by_its_name(tmp_path: Path) -> None:
    require_binary("cmake-language-server", "bash plugins/lsp/deps/pypi.sh")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(demo C)\nadd_executable(demo main.c)\n"
    )
    async with lsp_run(tmp_path, ["cmake-language-server"]) as run:
        r = await run.call(
            "lsp",
            {"action": "hover", "file": "CMakeLists.txt", "line": 3, "symbol": "add_executable"},
        )
        assert not r.is_error and "add_executable" in r.text, r.text


async def test_filenames_in_configuration(tmp_path: Path) -> None:
    require_binary("docker-langserver", "bash plugins/lsp/deps/npm.sh")
    (tmp_path / "Builderfile").write_text(DOCKERFILE)
    servers = {"docker-langserver": {"filenames": ["Builderfile"]}}
    async with lsp_run(tmp_path, ["docker-langserver"], servers=servers) as run:
        r = await run.call("lsp", {"action": "symbols", "file": "Builderfile"})
        assert not r.is_error and "FROM" in r.text, r.text
        spec = next(s for s in run.resource("lsp").specs if s.id == "docker-langserver")
        assert spec.serves("x.dockerfile") and spec.serves("Builderfile")
