"""The write's "new diagnostics" tell the truth: a rename does not report the errors that were
already there because their message now names the new symbol (cattrs' `make_dict_structure_fn`
rename: 31 "new" where the basedpyright CLI counts the same 307 before and after). Real
basedpyright, with its CLI as the oracle."""

from __future__ import annotations

import asyncio
import json
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
