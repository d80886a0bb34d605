"""§1 of issue 12: a document opened by an earlier call and then changed on disk outside the tool
must never be renamed through the server's stale copy. The repro: references on a symbol of file
A, three lines inserted at the top of A, then a rename of a symbol used in A."""

from __future__ import annotations

from pathlib import Path

import pytest

from livetools_lsp.rename import Workspace
from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.lsp.test_rename import edit, workspace
from tests.support import require_binary

INSERTED = "# one\n# two\n# three\n"

CASES = [
    ("basedpyright", "basedpyright-langserver", "app.py", "shapes.py", "Square", "Box"),
    (
        "typescript-language-server",
        "typescript-language-server",
        "src/app.ts",
        "src/shapes.ts",
        "Square",
        "Box",
    ),
]


@pytest.mark.parametrize(("server", "binary", "use", "decl", "old", "new"), CASES)
async def test_rename_after_an_outside_edit_uses_the_current_text(
    project, server: str, binary: str, use: str, decl: str, old: str, new: str
) -> None:
    require_binary(binary, "plugins/lsp/test-deps.sh")
    root = project("py" if use.endswith(".py") else "ts")
    async with lsp_run(root, [server]) as run:
        r = await run.call("lsp", {"action": "references", "file": use, "line": 3, "symbol": old})
        assert not r.is_error, r.text
        app = root / use
        app.write_text(INSERTED + app.read_text())  # outside the tool
        r = await run.call("lsp_rename", {"file": use, "line": 6, "symbol": old, "new_name": new})
        assert not r.is_error, r.text
        text = app.read_text()
        assert text.startswith(INSERTED)
        assert old not in text, text
        assert text.count(f"{new}(") == 3, text
        assert f"class {new}" in (root / decl).read_text()


def test_an_edit_that_does_not_cover_the_old_name_refuses_the_whole_rename(tmp_path: Path) -> None:
    work = workspace(tmp_path, {"a.py": "# new line\nold = 1\n", "b.py": "from a import old\n"})
    work.old = "old"
    uri_b = (tmp_path / "b.py").as_uri()
    uri_a = (tmp_path / "a.py").as_uri()
    # b's edit is right; a's was computed before "# new line" was inserted above.
    with pytest.raises(Exception, match=r"refused the whole rename: .*a\.py:1 covers '# n'"):
        work.apply_edit(
            {"changes": {uri_b: [edit(0, 14, 17, "new")], uri_a: [edit(0, 0, 3, "new")]}}
        )


def test_a_file_move_may_edit_its_import_path(tmp_path: Path) -> None:
    work: Workspace = workspace(tmp_path, {"old.py": "X = 1\n", "use.py": "from old import X\n"})
    work.old = "X"
    work.apply_edit(
        {
            "documentChanges": [
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
    assert work.texts[tmp_path / "use.py"] == "from new import Y\n"


@realworld
async def test_click_rename_after_an_outside_edit(tmp_path: Path) -> None:
    """The issue's own repro on click (src layout): references in utils.py, 3 lines inserted at
    its top, then a rename of a name utils.py uses."""
    require_binary("basedpyright-langserver", "uv sync")
    root = corpus_copy("click", tmp_path)
    utils = root / "src" / "click" / "utils.py"
    lines = utils.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.startswith("def format_filename("))
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call(
            "lsp",
            {
                "action": "references",
                "file": "src/click/utils.py",
                "line": line,
                "symbol": "format_filename",
            },
        )
        assert not r.is_error, r.text
        utils.write_text(INSERTED + utils.read_text())
        r = await run.call(
            "lsp_rename",
            {
                "file": "src/click/utils.py",
                "line": line + 3,
                "symbol": "format_filename",
                "new_name": "fmt_renamed",
            },
        )
        assert not r.is_error, r.text
        text = utils.read_text()
        assert text.startswith(INSERTED)
        assert "def fmt_renamed(" in text
        # Nothing but the name changed: every other line is as before.
        assert text.replace("fmt_renamed", "format_filename") == INSERTED + "\n".join(lines) + "\n"


@realworld
async def test_rxjs_rename_after_an_outside_edit(tmp_path: Path) -> None:
    """The same repro on rxjs with typescript-language-server: references in EmptyError.ts, 3
    lines inserted at its top, then a rename of the createErrorClass it imports (9 files)."""
    require_binary("typescript-language-server", "plugins/lsp/test-deps.sh")
    root = corpus_copy("rxjs", tmp_path)
    # The npm package ships src/ with tsconfig.base.json but no tsconfig.json of its own.
    (root / "src" / "tsconfig.json").write_text(
        '{"extends": "./tsconfig.base.json", "include": ["./**/*.ts"]}'
    )
    util = root / "src" / "internal" / "util"
    users = sorted(p for p in root.rglob("*.ts") if "createErrorClass" in p.read_text())
    before = {p: p.read_text() for p in users}
    decl = util / "createErrorClass.ts"
    line = next(
        i
        for i, t in enumerate(before[decl].splitlines(), 1)
        if t.startswith("export function createErrorClass")
    )
    empty = util / "EmptyError.ts"
    async with lsp_run(root, ["typescript-language-server"]) as run:
        r = await run.call(
            "lsp",
            {
                "action": "references",
                "file": "src/internal/util/EmptyError.ts",
                "line": 3,
                "symbol": "EmptyError",
            },
        )
        assert not r.is_error, r.text
        empty.write_text("// one\n// two\n// three\n" + before[empty])  # outside the tool
        r = await run.call(
            "lsp_rename",
            {
                "file": "src/internal/util/createErrorClass.ts",
                "line": line,
                "symbol": "createErrorClass",
                "new_name": "makeErrorClass",
            },
        )
        assert not r.is_error, r.text
    expected = {**before, empty: "// one\n// two\n// three\n" + before[empty]}
    for path in users:
        text = path.read_text()
        assert "makeErrorClass" in text, path
        # Nothing but the name changed, in every file, the outside-edited one included.
        assert text.replace("makeErrorClass", "createErrorClass") == expected[path], path
