"""lsp_rename against real Python servers, and the WorkspaceEdit shapes it applies (changes,
documentChanges with file operations) checked on a staged edit without a server."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from livetools import ToolError
from livetools_lsp.rename import Workspace
from tests.lsp.conftest import lsp_run
from tests.support import require_binary


def read(path: Path) -> str:
    return path.read_text()


@pytest.mark.parametrize(
    ("server", "binary"), [("basedpyright", "basedpyright-langserver"), ("pylsp", "pylsp")]
)
async def test_rename_across_files(project, server: str, binary: str) -> None:
    require_binary(binary, "uv sync")
    root = project("py")
    async with lsp_run(root, [server]) as run:
        r = await run.call(
            "lsp_rename", {"file": "app.py", "line": 3, "symbol": "Square", "new_name": "Box"}
        )
        assert not r.is_error, r.text
        assert r.text.startswith('renamed "Square" to "Box": '), r.text
        assert "edits in 2 files: app.py (" in r.text.splitlines()[0]
        assert "-from shapes import Square, total_area" in r.text
        assert "+from shapes import Box, total_area" in r.text
        assert "class Box(Shape):" in read(root / "shapes.py")
        app = read(root / "app.py")
        assert "Square" not in app and app.count("Box(") == 3
        assert sorted(r.data["files"]) == ["app.py", "shapes.py"]
        # The server sees the renamed code: navigation still works on the new name.
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 4, "symbol": "Box"}
        )
        assert "shapes.py:15: class Box(Shape):" in r.text, r.text


async def test_rename_refusals(project) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = project("py")
    before = read(root / "app.py")
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call(
            "lsp_rename", {"file": "app.py", "line": 3, "symbol": "Circle", "new_name": "Box"}
        )
        assert r.is_error and 'symbol "Circle" is not on line 3' in r.text
        r = await run.call(
            "lsp_rename", {"file": "app.py", "line": 5, "symbol": "(", "new_name": "Box"}
        )
        assert r.is_error, r.text
        # The readonly surface never sees the write-tier rename.
        r = await run.call(
            "lsp_rename",
            {"file": "app.py", "line": 3, "symbol": "Square", "new_name": "Box"},
            surface="readonly",
        )
        assert r.is_error and "unknown tool" in r.text
    assert read(root / "app.py") == before


def workspace(root: Path, tmp_text: dict[str, str]) -> Workspace:
    for name, text in tmp_text.items():
        (root / name).write_text(text)
    sup = SimpleNamespace(root=root)
    server = SimpleNamespace(encoding="utf-16", spec=SimpleNamespace(id="fake"))
    return Workspace(sup, server)  # type: ignore[arg-type]


def edit(line: int, start: int, end: int, new: str) -> dict[str, Any]:
    return {
        "range": {
            "start": {"line": line, "character": start},
            "end": {"line": line, "character": end},
        },
        "newText": new,
    }


def test_changes_and_utf16_columns(tmp_path: Path) -> None:
    work = workspace(tmp_path, {"a.py": "s = '😀'; old = 1\nprint(old)\n"})
    uri = (tmp_path / "a.py").as_uri()
    # '😀' is two UTF-16 code units: "old" starts at UTF-16 column 10, Python index 9.
    work.apply_edit({"changes": {uri: [edit(0, 10, 13, "new"), edit(1, 6, 9, "new")]}})
    assert work.texts[tmp_path / "a.py"] == "s = '😀'; new = 1\nprint(new)\n"


def test_document_changes_with_file_rename(tmp_path: Path) -> None:
    work = workspace(tmp_path, {"old.py": "X = 1\n", "use.py": "from old import X\n"})
    work.apply_edit(
        {
            "documentChanges": [
                {
                    "textDocument": {"uri": (tmp_path / "old.py").as_uri(), "version": 1},
                    "edits": [edit(0, 0, 1, "Y")],
                },
                {
                    "kind": "rename",
                    "oldUri": (tmp_path / "old.py").as_uri(),
                    "newUri": (tmp_path / "new.py").as_uri(),
                },
                {
                    "textDocument": {"uri": (tmp_path / "use.py").as_uri(), "version": 1},
                    "edits": [edit(0, 5, 8, "new"), edit(0, 16, 17, "Y")],
                },
            ]
        }
    )
    assert work.texts[tmp_path / "old.py"] is None
    assert work.texts[tmp_path / "new.py"] == "Y = 1\n"
    assert work.texts[tmp_path / "use.py"] == "from new import Y\n"
    assert work.moves == ["old.py -> new.py"]


def test_edits_outside_the_root_or_overlapping_are_refused(tmp_path: Path) -> None:
    work = workspace(tmp_path, {"a.py": "abc\n"})
    with pytest.raises(ToolError, match="outside the project root"):
        work.apply_edit({"changes": {"file:///etc/hosts": [edit(0, 0, 1, "x")]}})
    uri = (tmp_path / "a.py").as_uri()
    with pytest.raises(ToolError, match="overlapping edits"):
        work.apply_edit({"changes": {uri: [edit(0, 0, 2, "x"), edit(0, 1, 3, "y")]}})
