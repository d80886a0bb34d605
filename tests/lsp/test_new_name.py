"""A `new_name` that is not an identifier is refused before any server is asked (a server may
accept "foo-bar" and write it into every file); names that are identifiers in the file's language,
non-ASCII or `$`-led, still reach the real server and rename."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import lsp_run
from tests.support import require_binary

BAD = ["foo-bar", "1st", "two words", "shapes.Box", "Box()", "Box\n"]


def texts(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("bad", BAD)
async def test_not_an_identifier_is_refused_before_the_server(project, bad: str) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = project("py")
    before = texts(root)
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call(
            "lsp_rename", {"file": "app.py", "line": 3, "symbol": "Square", "new_name": bad}
        )
        assert r.is_error, r.text
        assert "is not an identifier" in r.text and "new_name" in r.text, r.text
        # Refused before asking: no server was even started, nothing changed.
        assert run.resource("lsp").servers == {}
    assert texts(root) == before


async def test_non_ascii_identifier_reaches_the_server(project) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = project("py")
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call(
            "lsp_rename", {"file": "app.py", "line": 3, "symbol": "Square", "new_name": "Größe2"}
        )
        assert not r.is_error, r.text
        assert "class Größe2(Shape):" in (root / "shapes.py").read_text()


async def test_dollar_name_reaches_typescript(project) -> None:
    require_binary("typescript-language-server", "npm install -g typescript-language-server")
    root = project("ts")
    async with lsp_run(root, ["typescript-language-server"]) as run:
        r = await run.call(
            "lsp_rename",
            {"file": "src/app.ts", "line": 3, "symbol": "Square", "new_name": "$Square"},
        )
        assert not r.is_error, r.text
        assert "export class $Square implements Shape" in (root / "src/shapes.ts").read_text()
