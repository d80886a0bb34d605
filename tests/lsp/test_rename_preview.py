"""`lsp_rename` with `preview: true` stages the rename for `resolve` (the same ledger and checks
as `ast_edit`): nothing is written until accept, accept writes every file at once, a file saved
in between refuses the whole edit, and discard writes nothing. Real basedpyright."""

from __future__ import annotations

from pathlib import Path

from livetools import Host
from tests.lsp.conftest import lsp_run
from tests.support import require_binary

RENAME = {"file": "shapes.py", "line": 22, "symbol": "total_area", "new_name": "area_sum"}


def texts(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.glob("*.py"))}


async def test_preview_stages_and_resolve_writes_or_refuses(project) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = project("py")
    before = texts(root)
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call("lsp_rename", {**RENAME, "preview": True})
        assert not r.is_error, r.text
        assert r.text.startswith('(proposed) rename "total_area" → "area_sum"'), r.text
        assert "+def area_sum" in r.text and texts(root) == before
        edit_id = r.data["edit_id"]
        assert sorted(r.data["files"]) == ["app.py", "shapes.py"]

        accepted = await run.call("resolve", {"edit_id": edit_id, "action": "accept"})
        assert not accepted.is_error, accepted.text
        after = texts(root)
        assert "area_sum" in after["app.py"] and "def area_sum" in after["shapes.py"]
        assert "total_area" not in after["app.py"] + after["shapes.py"]
        assert "new diagnostics" not in accepted.text, accepted.text

        # Staged, then the file is saved behind the run: the whole edit is refused.
        back = {**RENAME, "line": 22, "symbol": "area_sum", "new_name": "total", "preview": True}
        r = await run.call("lsp_rename", back)
        assert not r.is_error, r.text
        (root / "app.py").write_text(after["app.py"] + "# saved by someone else\n")
        refused = await run.call("resolve", {"edit_id": r.data["edit_id"], "action": "accept"})
        assert refused.is_error and "app.py" in refused.text, refused.text
        assert texts(root)["shapes.py"] == after["shapes.py"]  # nothing half-written

        r = await run.call("lsp_rename", back)
        dropped = await run.call("resolve", {"edit_id": r.data["edit_id"], "action": "discard"})
        assert not dropped.is_error and "nothing written" in dropped.text
        assert "def area_sum" in texts(root)["shapes.py"]


async def test_preview_without_resolve_in_the_run_says_so(project) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    import livetools_lsp
    from livetools.faces import harness

    root = project("py")
    host = Host(plugins=[("harness", harness), ("lsp", livetools_lsp)], entry_points=False)
    async with host.open_run(root, options={"lsp": {"prefer": ["basedpyright"]}}) as run:
        r = await run.call("lsp_rename", {**RENAME, "preview": True})
    assert r.is_error and "preview needs the resolve tool" in r.text, r.text
