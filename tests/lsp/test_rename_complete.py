"""A rename is complete or refused (issue 32 §1): a use of the old name the server's edit leaves
alone refuses the whole rename with the list, nothing written; a mention the server resolves to
nothing (a comment, a string) is named in a note. Real basedpyright."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.lsp.conftest import lsp_run
from tests.support import require_binary

MOD = "def helper() -> int:\n    return 1\n"
USER = "from pkg.mod import helper\n\nprint(helper())\n"


def layout(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\nversion = '0'\n")
    (root / "pkg" / "pkg").mkdir()
    (root / "pkg" / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "pkg" / "mod.py").write_text(MOD)
    (root / "pkg" / "pkg" / "notes.py").write_text("# helper() is the one to call\nX = 1\n")


async def test_a_use_beside_the_servers_project_is_renamed_too(tmp_path: Path) -> None:
    """basedpyright serves `pkg/` (its nearest pyproject) and renamed only `pkg/pkg/mod.py`,
    leaving `scripts/use.py` importing a name that no longer exists. The search finds the use,
    opens the file in the server and asks again: both files change."""
    require_binary("basedpyright-langserver", "uv sync")
    layout(tmp_path)
    (tmp_path / "scripts").mkdir()
    user = tmp_path / "scripts" / "use.py"
    user.write_text(USER)  # under the run root, beside the project
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        r = await run.call(
            "lsp_rename",
            {"file": "pkg/pkg/mod.py", "line": 1, "symbol": "helper", "new_name": "aid"},
        )
    assert not r.is_error, r.text
    assert sorted(r.data["edits"]) == ["pkg/pkg/mod.py", "scripts/use.py"], r.text
    assert user.read_text() == USER.replace("helper", "aid")


def test_the_refusal_lists_what_is_left() -> None:
    from types import SimpleNamespace

    from livetools_lsp.completeness import Mentions, refusal

    server: Any = SimpleNamespace(spec=SimpleNamespace(id="srv"))
    assert refusal(server, "f", Mentions(unresolved=["a.py:1"], others=2)) is None
    error = refusal(server, "f", Mentions(missed=["a.py:3"], unopened=["b/c.py:9"]))
    assert error is not None
    assert "1 uses it resolves to the same declaration (a.py:3)" in str(error)
    assert "1 mentions in files outside its root, which it cannot check (b/c.py:9)" in str(error)
    assert "nothing was written" in str(error)


async def test_a_comment_mention_is_named_not_refused(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    layout(tmp_path)
    (tmp_path / "pkg" / "pkg" / "user.py").write_text(USER)
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        r = await run.call(
            "lsp_rename",
            {"file": "pkg/pkg/mod.py", "line": 1, "symbol": "helper", "new_name": "aid"},
        )
    assert not r.is_error, r.text
    assert "aid()" in (tmp_path / "pkg" / "pkg" / "user.py").read_text()
    assert 'not renamed: 1 mentions of "helper"' in r.text and "pkg/pkg/notes.py:1" in r.text
