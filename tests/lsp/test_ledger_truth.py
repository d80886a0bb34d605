"""The write's "new diagnostics" tell the truth: a rename does not report the errors that were
already there because their message now names the new symbol (cattrs' `make_dict_structure_fn`
rename: 31 "new" where the basedpyright CLI counts the same 307 before and after). Real
basedpyright, with its CLI as the oracle."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from tests.lsp.conftest import lsp_run
from tests.support import require_binary

CODE = """def make(x: int) -> int:
    return x


make("a")
make("b")
"""


async def cli_errors(binary: str, root: Path) -> list[str]:
    proc = await asyncio.create_subprocess_exec(
        binary, "--outputjson", cwd=root, stdout=asyncio.subprocess.PIPE, stderr=-3
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    report = json.loads(out)
    return sorted(d["message"] for d in report["generalDiagnostics"] if d["severity"] == "error")


async def test_a_rename_is_not_blamed_for_errors_that_name_the_symbol(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    cli = require_binary("basedpyright", "uv sync")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'r'\nversion = '0'\n")
    (tmp_path / "m.py").write_text(CODE)
    before = await cli_errors(cli, tmp_path)
    assert len(before) == 2 and all('"make"' in m for m in before), before
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        r = await run.call(
            "lsp_rename", {"file": "m.py", "line": 1, "symbol": "make", "new_name": "build"}
        )
        assert not r.is_error, r.text
        assert "new diagnostics" not in r.text, r.text
    after = await cli_errors(cli, tmp_path)
    assert after == [m.replace('"make"', '"build"') for m in before], after


C_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "lsp" / "c"
# Warnings of the header's own, and a use of the field the test renames.
HEADER_EXTRA = (
    "static inline int unused_helper(int a, int b) { int z; return a; }\n"
    "static inline double half_area(const struct square *sq) { int bad = sq->side; "
    "return square_area(sq) / 2; }\n#endif"
)


def _c_project(tmp_path: Path) -> Path:
    """The c fixture with a header that has warnings of its own and a compile database with
    warnings on (clangd checks an includer against the header on disk)."""
    root = tmp_path / "c"
    shutil.copytree(C_FIXTURE, root)
    (root / "compile_flags.txt").unlink()
    header = root / "include" / "shapes.h"
    header.write_text(header.read_text().replace("#endif", HEADER_EXTRA))
    flags = ["cc", "-std=c11", "-Iinclude", "-Wall", "-Wextra", "-Wconversion", "-c"]
    commands = [
        {"directory": str(root), "file": str(root / f), "arguments": [*flags, f]}
        for f in ("src/main.c", "src/shapes.c")
    ]
    (root / "compile_commands.json").write_text(json.dumps(commands))
    return root


async def test_a_header_edit_reports_the_includer_it_breaks(tmp_path: Path) -> None:
    """src/shapes.c uses `side` and is not open: the header edit that renames the field is
    reported in it; the undo does not call the header's old warning (hidden by the error
    meanwhile) the undo's doing."""
    require_binary("clangd", "apt-get install clangd")
    root = _c_project(tmp_path)
    header = (root / "include" / "shapes.h").read_text()
    async with lsp_run(root, ["clangd"]) as run:
        await run.call("lsp", {"action": "diagnostics", "file": "src/main.c"})
        broken = header.replace("double side;", "double length;")
        r = await run.call("write", {"path": "include/shapes.h", "content": broken})
        assert "src/shapes.c:4: error [no_member]: No member named 'side'" in r.text, r.text
        r = await run.call("write", {"path": "include/shapes.h", "content": header})
        assert "the write added no new diagnostics" in r.text, r.text
        assert "back again (1; there when the run first saw the file" in r.text, r.text
        assert "include/shapes.h:13: warning [-Wfloat-conversion]" in r.text, r.text


async def test_a_rename_opening_a_header_blames_none_of_its_warnings(tmp_path: Path) -> None:
    """The rename edits the header, which the run never opened: its six warnings were there
    before and are not reported (its baseline is the first publish for the old text)."""
    require_binary("clangd", "apt-get install clangd")
    root = _c_project(tmp_path)
    async with lsp_run(root, ["clangd"]) as run:
        r = await run.call(
            "lsp_rename",
            {"file": "src/shapes.c", "line": 3, "symbol": "square_area", "new_name": "sq_area"},
        )
        assert not r.is_error and "include/shapes.h (2)" in r.text, r.text
        assert "the write added no diagnostics" in r.text, r.text
        d = await run.call("lsp", {"action": "diagnostics", "file": "include/shapes.h"})
        assert "warnings (clangd)" in d.text.splitlines()[0], d.text  # they are there


async def test_deleting_a_module_reports_its_importer(tmp_path: Path) -> None:
    """A module deleted through the run (a harness reporting it with run.writing): its
    importer, never opened, now fails to import it, and the write says so."""
    require_binary("basedpyright-langserver", "uv sync")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'd'\nversion = '0'\n")
    (tmp_path / "helpers.py").write_text("def helper() -> int:\n    return 1\n")
    (tmp_path / "uses.py").write_text("from helpers import helper\n\nprint(helper())\n")
    (tmp_path / "main.py").write_text("print(1)\n")
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        await run.call("lsp", {"action": "diagnostics", "file": "main.py"})
        async with run.writing(["helpers.py"]) as notes:
            (tmp_path / "helpers.py").unlink()
        text = "\n".join(notes)
        assert 'uses.py:1: error [reportMissingImports]: Import "helpers"' in text, text


GO_VET = """package main

import "fmt"

func add(a int, b int) int {
\treturn a + b
}

func main() {
\tfmt.Println("total:\\n")
\tfmt.Println(add(1, 2))
}
"""


async def test_a_fix_does_not_report_the_vet_finding_it_uncovers(tmp_path: Path) -> None:
    """gopls drops its vet findings while a file has type errors: the fix brings the old one
    back, which is said as such, not as something the fix introduced (`go vet` finds it on
    the original file)."""
    require_binary("gopls", "apt-get install gopls")
    (tmp_path / "go.mod").write_text("module example.com/gv\n\ngo 1.19\n")
    (tmp_path / "main.go").write_text(GO_VET)
    async with lsp_run(tmp_path, ["gopls"]) as run:
        broken = GO_VET.replace("add(1, 2)", 'add(1, "x")')
        r = await run.call("write", {"path": "main.go", "content": broken})
        assert "main.go:11: error [IncompatibleAssign]" in r.text, r.text
        r = await run.call("write", {"path": "main.go", "content": GO_VET})
        assert "checked by gopls: the write added no new diagnostics" in r.text, r.text
        assert "main.go:10: warning: fmt.Println arg list ends with redundant newline" in r.text
