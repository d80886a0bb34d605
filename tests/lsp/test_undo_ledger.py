"""A rename and its undo on real code report only what the basedpyright CLI finds newly present
(issue 32: a basedpyright undo listed import-cycle errors as new). cattrs' modules import each
other; basedpyright attaches each import cycle to the cycle's first file, whichever open file's
check finds it (at most 4 a file), so the cycles a file shows grow as the run opens other files,
with no edit to it. The run first looks at three of the cycle's files, as an agent would; then
renames `make_dict_structure_fn` and undoes it twice: by a rename back, and by writing the old
texts back at once (an apply_patch). The CLI checks every file in one order: its counts before and
after each step are the oracle (after an undo the files are byte-identical to the originals, so
the CLI's first answer stands for them)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from pathlib import Path

from livetools import Run
from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.support import require_binary

Key = tuple[str, str, str | None, str]  # file, severity, rule, message (as the ledger keys it)

OLD, NEW = "make_dict_structure_fn", "make_dict_structure_fn2"
RENAME = {"file": "src/cattrs/gen/__init__.py", "line": 697}
LOOKED_AT = ["src/cattrs/cols.py", "src/cattrs/dispatch.py", "src/cattrs/disambiguators.py"]
LINE = re.compile(
    r"^(?P<rel>\S+?):\d+: (?P<sev>error|warning)(?: \[(?P<code>[^\]]+)\])?"
    r"(?: \((?P<server>[^)]+)\))?: (?P<msg>.*)$"
)


def _one_line(message: str) -> str:
    return " ".join(message.split())


async def cli_keys(binary: str, root: Path) -> Counter[Key]:
    """Errors and warnings of the whole project, per file, as the basedpyright CLI counts them."""
    proc = await asyncio.create_subprocess_exec(
        binary, "--outputjson", cwd=root, stdout=asyncio.subprocess.PIPE, stderr=-3
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    report = json.loads(out)
    keys: Counter[Key] = Counter()
    for d in report["generalDiagnostics"]:
        if d["severity"] in ("error", "warning"):
            rel = Path(d["file"]).relative_to(root).as_posix()
            # The tool says the project's paths relative to it; so does the oracle here.
            message = _one_line(d["message"]).replace(f"{root}{os.sep}", "")
            keys[(rel, d["severity"], d.get("rule"), message)] += 1
    return keys


def reported_new(text: str) -> list[Key]:
    """basedpyright's lines under "new diagnostics after this write" (not those back again)."""
    out: list[Key] = []
    inside = False
    for line in text.splitlines():
        if line.startswith(("new diagnostics after", "back again")):
            inside = line.startswith("new")
            continue
        m = LINE.match(line)
        if inside and m and m["server"] in (None, "basedpyright"):
            out.append((m["rel"], m["sev"], m["code"], _one_line(m["msg"])))
    return out


def newly_present(
    before: Counter[Key], after: Counter[Key], renamed: tuple[str, str] | None
) -> Counter[Key]:
    """What the CLI has more of after than before; with `renamed`, a message of before that
    names the old symbol counts as the same message naming the new one (as the ledger does)."""
    if renamed is not None:
        word = re.compile(rf"(?<![\w$]){re.escape(renamed[0])}(?![\w$])")
        mapped: Counter[Key] = Counter()
        for (rel, sev, rule, msg), n in before.items():
            mapped[(rel, sev, rule, word.sub(renamed[1], msg))] += n
        before = mapped
    return after - before


def assert_only_new(step: str, text: str, grown: Counter[Key]) -> None:
    claimed = reported_new(text)
    wrong = [k for k in claimed if grown[k] <= 0]
    assert not wrong, f"{step}: {len(wrong)} reported as new, not new for the CLI: {wrong[:3]}"


async def look(run: Run) -> None:
    """What an agent reads first: three files of the cycles (the run now checks them)."""
    for rel in LOOKED_AT:
        d = await run.call("lsp", {"action": "diagnostics", "file": rel})
        assert not d.is_error, d.text
        if rel.endswith("cols.py"):
            assert "[reportImportCycles]" in d.text, d.text


def texts(root: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in sorted(root.rglob("*.py"))}


@realworld
async def test_rename_and_undo_report_only_what_the_cli_finds_new(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    cli = require_binary("basedpyright", "uv sync")
    root = corpus_copy("cattrs", tmp_path)
    original = texts(root)
    before = await cli_keys(cli, root)
    cycles = sum(n for k, n in before.items() if k[2] == "reportImportCycles")
    assert cycles >= 4, "cattrs' import cycles are what this test is about"
    async with lsp_run(root, ["basedpyright"]) as run:
        await look(run)
        r = await run.call("lsp_rename", {**RENAME, "symbol": OLD, "new_name": NEW})
        assert not r.is_error, r.text
        renamed = texts(root)
        written = [p for p in original if renamed[p] != original[p]]
        assert len(written) >= 8, written
        after = await cli_keys(cli, root)
        errors = [sum(n for k, n in c.items() if k[1] == "error") for c in (before, after)]
        assert errors[0] == errors[1], errors  # the rename itself breaks nothing
        assert_only_new("rename", r.text, newly_present(before, after, (OLD, NEW)))

        back = await run.call("lsp_rename", {**RENAME, "symbol": NEW, "new_name": OLD})
        assert not back.is_error, back.text
        assert texts(root) == original
        assert_only_new("undo by rename", back.text, newly_present(after, before, (NEW, OLD)))

        r = await run.call("lsp_rename", {**RENAME, "symbol": OLD, "new_name": NEW})
        assert not r.is_error and texts(root) == renamed, r.text
        assert_only_new("rename again", r.text, newly_present(before, after, (OLD, NEW)))
        async with run.writing(written) as notes:
            for path in written:
                path.write_text(original[path])
        assert texts(root) == original
        assert_only_new("undo by writing", "\n".join(notes), newly_present(after, before, None))


@realworld
async def test_an_undo_in_a_fresh_run_reports_only_what_the_cli_finds_new(tmp_path: Path) -> None:
    """The undo is the first write of its run (the rename was an earlier run's): every file it
    writes is opened with the renamed text now, as the issue's undo was (it reported 3 of
    converters.py's cycles as new in 3 of 5 tries before the ledger set cycles apart)."""
    require_binary("basedpyright-langserver", "uv sync")
    cli = require_binary("basedpyright", "uv sync")
    root = corpus_copy("cattrs", tmp_path)
    original = texts(root)
    async with lsp_run(root, ["basedpyright"]) as run:
        r = await run.call("lsp_rename", {**RENAME, "symbol": OLD, "new_name": NEW})
        assert not r.is_error, r.text
    renamed = texts(root)
    written = [p for p in original if renamed[p] != original[p]]
    before = await cli_keys(cli, root)
    async with lsp_run(root, ["basedpyright"]) as run:
        await look(run)
        async with run.writing(written) as notes:
            for path in written:
                path.write_text(original[path])
    after = await cli_keys(cli, root)
    text = "\n".join(notes)
    assert "new diagnostics after this write" in text, text  # the old names are back
    assert_only_new("undo by writing", text, newly_present(before, after, None))


async def test_a_write_closing_an_import_cycle_reports_it(tmp_path: Path) -> None:
    """The other side: a file in no cycle before that is in one after the write is news (the
    ledger sets apart only more cycles in a file that had some). The CLI agrees."""
    require_binary("basedpyright-langserver", "uv sync")
    cli = require_binary("basedpyright", "uv sync")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'c'\nversion = '0'\n")
    (tmp_path / "a.py").write_text("import b\n\nX = 1\nprint(b.Y)\n")
    (tmp_path / "b.py").write_text("Y = 2\n")
    before = await cli_keys(cli, tmp_path)
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        await run.call("lsp", {"action": "diagnostics", "file": "a.py"})
        r = await run.call("write", {"path": "b.py", "content": "import a\n\nY = 2\nprint(a.X)\n"})
    grown = newly_present(before, await cli_keys(cli, tmp_path), None)
    assert [k[:3] for k in grown] == [("a.py", "error", "reportImportCycles")], grown
    assert reported_new(r.text) == list(grown), r.text
