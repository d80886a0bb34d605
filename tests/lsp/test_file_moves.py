"""`lsp_rename file=… move_to=…` (issue 32 §5): a file moves with its importers updated through
the server's `workspace/willRenameFiles`, all-or-nothing; on rxjs (the corpus) `tsc --noEmit`
reports what it reported before the move. A server without the request (gopls), or whose edit
leaves imports of the old path (basedpyright answers with empty edits), is refused with nothing
moved; a preview stages the move for `resolve`."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.lsp.test_realworld_differential import _rxjs
from tests.support import require_binary

TSLS = "typescript-language-server"


async def _tsc(root: Path) -> tuple[int, str]:
    tsc = require_binary("tsc", "npm install -g typescript@6 (plugins/lsp/test-deps.sh)")
    proc = await asyncio.create_subprocess_exec(
        tsc, "--noEmit", "--pretty", "false", "-p", ".",
        cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    errors = [line for line in out.decode().splitlines() if ": error TS" in line]
    return len(errors), "\n".join(errors[:5])


@realworld
async def test_a_move_on_rxjs_keeps_tsc_as_it_was(tmp_path: Path) -> None:
    require_binary(TSLS, "npm install -g typescript-language-server (plugins/lsp/test-deps.sh)")
    root = corpus_copy("rxjs", tmp_path)
    _rxjs(root)
    src = root / "src"
    before = await _tsc(src)
    old = "src/internal/util/isFunction.ts"
    spec = re.compile(r"['\"][./\w]*/isFunction['\"]")  # import, export … from, import()
    importers = sum(bool(spec.search(p.read_text())) for p in src.rglob("*.ts"))
    async with lsp_run(root, [TSLS]) as run:
        r = await run.call("lsp_rename", {"file": old, "move_to": "src/internal/checks/"})
        assert not r.is_error, r.text
    assert r.text.startswith(f"moved {old} → src/internal/checks/isFunction.ts;"), r.text
    assert f"import edits in {importers} files" in r.text.splitlines()[0], r.text[:300]
    assert not (root / old).exists() and (src / "internal/checks/isFunction.ts").exists()
    assert await _tsc(src) == before


async def test_the_fixture_moves_and_its_importer_follows(project) -> None:
    require_binary(TSLS, "npm install -g typescript-language-server (plugins/lsp/test-deps.sh)")
    root = project("ts")
    async with lsp_run(root, [TSLS]) as run:
        r = await run.call("lsp_rename", {"file": "src/shapes.ts", "move_to": "src/geo/"})
        assert not r.is_error, r.text
        assert "moved src/shapes.ts -> src/geo/shapes.ts (content unchanged)" in r.text, r.text
        assert '+import { Square, totalArea } from "./geo/shapes";' in r.text, r.text
        assert "the write added no diagnostics" in r.text, r.text
        # Back again, staged first: nothing moves until resolve accepts.
        r = await run.call(
            "lsp_rename", {"file": "src/geo/shapes.ts", "move_to": "src/shapes.ts", "preview": True}
        )
        assert r.text.startswith("(proposed) move src/geo/shapes.ts → src/shapes.ts"), r.text
        assert (root / "src/geo/shapes.ts").exists()
        edit_id = (r.data or {})["edit_id"]
    assert '"./geo/shapes"' in (root / "src/app.ts").read_text()
    assert edit_id.startswith("edit_")


async def test_refused_moves_move_nothing(project) -> None:
    require_binary("basedpyright", "uv sync")
    root = project("py")
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call("lsp_rename", {"file": "shapes.py", "move_to": "geo/shapes.py"})
        assert r.is_error and "leaves imports of shapes.py unchanged" in r.text, r.text
        assert "app.py:1: from shapes import Square" in r.text, r.text
        for args, said in [
            ({"move_to": "app.py"}, "move_to: app.py exists"),
            ({"move_to": "../elsewhere.py"}, "move_to:"),
            ({"move_to": "shapes.py"}, "exists"),
            ({"move_to": "x.py", "line": 1}, "pass file and move_to only (not line)"),
            ({"move_to": "x.py", "new_name": "y"}, "(not new_name)"),
        ]:
            r = await run.call("lsp_rename", {"file": "shapes.py", **args})
            assert r.is_error and said in r.text, (args, r.text)
    assert (root / "shapes.py").exists() and not (root / "geo").exists()


async def test_a_server_without_file_moves_is_named(project) -> None:
    require_binary("gopls", "apt-get install gopls (plugins/lsp/test-deps.sh)")
    root = project("go")
    async with lsp_run(root, ["gopls"]) as run:
        r = await run.call("lsp_rename", {"file": "shapes.go", "move_to": "geo/shapes.go"})
    assert r.is_error and "gopls cannot update the importers of a moved .go file" in r.text
    assert (root / "shapes.go").exists()
