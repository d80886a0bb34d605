"""Diagnostics on a write that changes several files (a rename) reflect the whole write: a push
server that checks the first file before the others reach it (gopls under load: "undeclared
name: Box" in main.go of a Square -> Box rename) publishes again once it has them, and that
later publish is the one reported. A pygls fake (tests/lsp/package_server.py) makes the order
certain, which gopls does only now and then."""

from __future__ import annotations

import sys
from pathlib import Path

from livetools import hookimpl
from livetools_lsp import ServerSpec
from tests.lsp.conftest import lsp_run

PACKAGE = Path(__file__).with_name("package_server.py")


class PackageServer:
    @hookimpl
    def livetools_lsp_servers(self) -> ServerSpec:
        return ServerSpec(
            id="package",
            command=(sys.executable, str(PACKAGE)),
            extensions={".pkg": "pkg"},
            probe=(sys.executable, "--version"),
        )


async def test_a_renamed_name_is_not_reported_undeclared(tmp_path: Path) -> None:
    (tmp_path / "a.pkg").write_text("use Square\n")
    (tmp_path / "b.pkg").write_text("def Square\n")
    paths = [tmp_path / "a.pkg", tmp_path / "b.pkg"]  # the user first: checked against old b
    async with lsp_run(tmp_path, plugins=[("package", PackageServer())]) as run:
        async with run.writing(paths) as notes:
            for path in paths:
                path.write_text(path.read_text().replace("Square", "Box"))
        assert not any("new diagnostics" in note for note in notes), notes
        assert not any("not ready" in note or "unavailable" in note for note in notes), notes

        # A write that does break the user is still reported (a.pkg is now a dependent).
        async with run.writing(paths[1:]) as notes:
            paths[1].write_text("def Circle\n")
        assert notes == [
            "new diagnostics after this write (1, package; also checked 1 other file: a.pkg):\n"
            "a.pkg:1: error [UndeclaredName]: undeclared name: Box"
        ], notes
