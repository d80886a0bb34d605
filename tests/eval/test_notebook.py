"""`eval` with `notebook=`: nbclient's own test notebooks (a registry package, pinned in
scripts/corpus.d/notebooks.toml) run through our tool and through `jupyter nbconvert --execute`
(the oracle) give the same outputs; edits round-trip as valid nbformat; a save by anyone else is
never overwritten; a missing kernel and a broken file get clear errors."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

from tests.corpus import corpus_project, realworld
from tests.eval.support import cell, kernel_pids, open_run
from tests.eval.test_python import gone

# Notebooks whose outputs are deterministic and need nothing nbclient injects (Check History in
# Memory wants nbclient's own --HistoryManager.hist_file; Sleep1s prints the time; Parallel
# Execute wants an injected variable).
SAME = [
    "Clear Output.ipynb",
    "Empty Cell.ipynb",
    "Inline Image.ipynb",
    "SVG.ipynb",
    "UnicodePy3.ipynb",
    "update-display-id.ipynb",
    "Skip Exceptions.ipynb",
]
ADDRESS = re.compile(r"0x[0-9a-f]+")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def corpus_notebooks(dest: Path) -> Path:
    folder = corpus_project("nbclient-notebooks") / "tests" / "files"
    shutil.copytree(folder, dest)
    return dest


def nbconvert(folder: Path, names: list[str]) -> Path:
    """The oracle: nbconvert executes copies (errors kept, as our run keeps them)."""
    out = folder / "oracle"
    argv = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute"]
    argv += ["--allow-errors", "--ExecutePreprocessor.timeout=120", "--output-dir", str(out)]
    done = subprocess.run([*argv, *names], cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def outputs(nb: dict[str, Any]) -> list[Any]:
    """What must match: per cell its type, count and outputs; streams of one name merged (a
    frontend shows them as one), addresses and ANSI colours dropped. A cell's count is the
    highest it or its results carry: nbclient takes the last message's, Jupyter's frontends
    (and we) the reply's, which differ only when a cell sends a result with another count."""

    def text(value: Any) -> str:
        return "".join(value) if isinstance(value, list) else str(value)

    cells = []
    for c in nb["cells"]:
        outs: list[dict[str, Any]] = []
        for o in c.get("outputs", []):
            kind = o["output_type"]
            if kind == "stream":
                if outs and outs[-1].get("name") == o["name"]:
                    outs[-1]["text"] += text(o["text"])
                else:
                    outs.append({"name": o["name"], "text": text(o["text"])})
            elif kind == "error":
                tb = [ANSI.sub("", line) for line in o["traceback"]]
                outs.append({"error": [o["ename"], o["evalue"], tb[-1:]]})
            else:
                data = {k: ADDRESS.sub("0x", text(v)) for k, v in o["data"].items()}
                outs.append({"kind": kind, "data": data})
        counts = [c.get("execution_count")] + [
            o.get("execution_count") for o in c.get("outputs", []) if "execution_count" in o
        ]
        known = [n for n in counts if n is not None]
        cells.append((c["cell_type"], max(known) if known else None, outs))
    return cells


@realworld
async def test_corpus_notebooks_match_nbconvert(tmp_path: Path) -> None:
    folder = corpus_notebooks(tmp_path / "nb")
    # The oracle executes its own copies beside our run (each is a kernel at a time).
    oracle_run = asyncio.ensure_future(
        asyncio.to_thread(nbconvert, corpus_notebooks(tmp_path / "oracle"), SAME)
    )
    async with open_run(folder, eval_idle_timeout=60) as run:
        for name in SAME:
            first = await cell(run, "", notebook=name)
            if name == "Skip Exceptions.ipynb":  # the run stops at the error, as Jupyter's
                assert first.is_error and "cell 1 raised" in first.text, first.text
                assert "not run: cells 2" in first.text and first.data["saved"]
                rest = await cell(run, "", notebook=name, cell="2-")
                assert not rest.is_error and rest.text.startswith("── cell 2 · In [2] ──\nok"), (
                    rest.text
                )
            else:
                assert not first.is_error, f"{name}: {first.text}"
            saved = nbformat.read(folder / name, as_version=4)
            nbformat.validate(saved)
            expected = json.loads(((await oracle_run) / name).read_text())
            assert outputs(json.loads((folder / name).read_text())) == outputs(expected), name
            if name == "Inline Image.ipynb":  # the image comes back as the image
                assert first.images == [(folder / "python.png").read_bytes()]
                assert "[image 1: PNG" in first.text
            if name == "update-display-id.ipynb":  # an update rewrote an earlier cell's output
                reread = await cell(run, "", notebook=name, op="read", cell="3")
                assert reread.text.endswith("── output ──\n8\n6\n8"), reread.text
        pids = kernel_pids(run)
        assert len(pids) == len(SAME)  # a kernel per notebook
    assert all(gone(pid) for pid in pids)


@realworld
async def test_corpus_notebooks_that_hang_die_or_ask(tmp_path: Path) -> None:
    folder = corpus_notebooks(tmp_path / "nb")
    async with open_run(folder, eval_idle_timeout=3, eval_interrupt_grace=10) as run:
        loop = await cell(run, "", notebook="Interrupt.ipynb")
        assert loop.is_error and loop.data["status"] == "interrupted", loop.text
        assert "cell 1 was interrupted" in loop.text and "not run: cells 2" in loop.text
        assert "KeyboardInterrupt" in loop.text
        kept = await cell(run, "", notebook="Interrupt.ipynb", cell="2")
        assert kept.text.startswith("── cell 2 · In [2] ──\ndone"), kept.text
        died = await cell(run, "", notebook="Autokill.ipynb")
        assert died.is_error and died.data["status"] == "died", died.text
        assert "the kernel died (killed by SIGTERM) during cell 1" in died.text, died.text
        again = await cell(run, "print('back')", notebook="Autokill.ipynb", op="run")
        assert "fresh python kernel" in again.text and "back" in again.text, again.text
        stdin = await cell(run, "", notebook="Disable Stdin.ipynb")
        assert stdin.is_error and "EOFError" in stdin.text, stdin.text
    for name in ("Interrupt.ipynb", "Autokill.ipynb", "Disable Stdin.ipynb"):
        nbformat.validate(nbformat.read(folder / name, as_version=4))


def write_nb(path: Path, cells: list[Any], minor: int = 5, **meta: Any) -> None:
    nb = nbformat.v4.new_notebook(cells=cells, metadata=meta)
    nb.nbformat_minor = minor
    for c in nb.cells if minor < 5 else []:
        del c["id"]  # ids came with 4.5
    nbformat.write(nb, path)


async def test_edit_ops_round_trip_and_validate(tmp_path: Path) -> None:
    v4 = nbformat.v4
    write_nb(
        tmp_path / "e.ipynb",
        [v4.new_markdown_cell("# Title"), v4.new_code_cell("a = 1"), v4.new_code_cell("a + 1")],
        kernelspec={"name": "python3", "language": "python", "display_name": "Python 3"},
    )
    async with open_run(tmp_path) as run:

        async def op(**args: Any) -> Any:
            result = await cell(run, args.pop("code", ""), notebook="e.ipynb", **args)
            nbformat.validate(nbformat.read(tmp_path / "e.ipynb", as_version=4))
            return result

        read = await op(op="read")
        assert read.text.startswith("e.ipynb: 3 cells (nbformat 4.5), kernel python3 → python")
        assert "── cell 1 · markdown · id " in read.text and "# Title" in read.text
        ids = read.data["ids"]
        added = await op(op="insert", cell="2", code="b = 2")
        assert (
            added.text.startswith("inserted cell 2 (code, id ") and "now has 4 cells" in added.text
        )
        new_id = added.data["ids"][0]
        md = await op(op="insert", code="%%markdown\n## End")
        assert "inserted cell 5 (markdown" in md.text
        moved = await op(op="move", cell=new_id, to=4)
        assert moved.text.startswith("moved cell 2 to 4"), moved.text
        ran = await op(cell="2-")  # a = 1, a + 1, b = 2; the markdown cell is not run
        assert ran.text.startswith("── cell 3 · id ") and "In [2] ──\n2\n" in ran.text, ran.text
        assert ran.text.endswith("saved e.ipynb (cells run: 2-4)")
        replaced = await op(op="replace", cell=ids[2], code="a * 10")
        assert "(its outputs were cleared)" in replaced.text
        again = await op(cell=ids[2])
        assert f"── cell 3 · id {ids[2]} · In [4] ──\n10" in again.text, again.text
        edit_run = await op(cell="3", code="a * 100")  # code with a cell: replace, then run
        assert "100" in edit_run.text
        appended = await op(code="print('tail')")  # code alone: a new cell at the end, run
        assert "── cell 6 · id " in appended.text and "In [6] ──\ntail" in appended.text
        deleted = await op(op="delete", cell="5-6")
        assert deleted.text.startswith("deleted cells 5-6; e.ipynb now has 4 cells")
        saved = nbformat.read(tmp_path / "e.ipynb", as_version=4)
        assert [c.source for c in saved.cells] == ["# Title", "a = 1", "a * 100", "b = 2"]
        assert [c.get("id") for c in saved.cells][:3] == [ids[0], ids[1], ids[2]]
        assert saved.cells[2].execution_count == 5 and saved.cells[2].outputs[0].data == {
            "text/plain": "100"
        }
        assert saved.metadata["language_info"]["name"] == "python"
        for args, expected in [
            ({"op": "delete"}, "cell: op=delete needs it"),
            ({"op": "move", "cell": "1"}, "to: op=move needs it"),
            ({"op": "move", "cell": "1", "to": 9}, "to: 9 is outside 1-4"),
            ({"cell": "7"}, "cell: 7 is outside 1-4 (cells are numbered from 1"),
            ({"cell": "3-1"}, "runs backwards"),
            ({"cell": "nope"}, "cell: no cell numbered or with id 'nope'"),
            ({"op": "read", "code": "x"}, "code: op=read takes none"),
        ]:
            bad = await cell(run, args.pop("code", ""), notebook="e.ipynb", **args)
            assert bad.is_error and expected in bad.text, (args, bad.text)
        plain = await cell(run, "1", cell="2")
        assert plain.is_error and "pass notebook" in plain.text
        # nbformat 4.0 files have no cell ids: none is added, the file stays valid
        write_nb(tmp_path / "old.ipynb", [v4.new_code_cell("x = 1")], minor=0)
        await cell(run, "y = 2", notebook="old.ipynb", op="insert")
        old = nbformat.read(tmp_path / "old.ipynb", as_version=4)
        assert old.nbformat_minor == 0 and all("id" not in c for c in old.cells)
        nbformat.validate(old)


async def test_a_save_by_someone_else_is_never_overwritten(tmp_path: Path) -> None:
    v4 = nbformat.v4
    path = tmp_path / "s.ipynb"
    write_nb(path, [v4.new_code_cell("import time"), v4.new_code_cell("time.sleep(4); 1")])
    async with open_run(tmp_path) as run:
        await cell(run, "", notebook="s.ipynb", op="read")
        theirs = nbformat.v4.new_notebook(cells=[v4.new_code_cell("print('theirs')")])
        nbformat.write(theirs, path)
        before = path.read_bytes()
        refused = await cell(run, "z = 1", notebook="s.ipynb", op="insert")
        assert refused.is_error and "changed on disk since this run last read" in refused.text
        assert "op=read" in refused.text and path.read_bytes() == before
        reread = await cell(run, "", notebook="s.ipynb", op="read")
        assert "print('theirs')" in reread.text
        write_nb(path, [v4.new_code_cell("import time"), v4.new_code_cell("time.sleep(4); 1")])
        await cell(run, "", notebook="s.ipynb", op="read")
        running = asyncio.ensure_future(cell(run, "", notebook="s.ipynb"))
        for _ in range(600):  # until the sleeping cell runs
            await asyncio.sleep(0.05)
            kernels = run.resource("eval").started
            if kernels and kernels[-1].alive and kernels[-1].started_in:
                break
        await asyncio.sleep(1.0)
        nbformat.write(theirs, path)  # Jupyter saves while our cell runs
        saved_by_them = path.read_bytes()
        result = await asyncio.wait_for(running, 120)
        assert result.is_error and not result.data["saved"], result.text
        assert "NOT saved: refused: s.ipynb changed since this run last read it" in result.text
        assert "In [2] ──\n1\n" in result.text and "its save was kept" not in result.text
        assert path.read_bytes() == saved_by_them


async def test_missing_kernel_and_broken_files(tmp_path: Path) -> None:
    write_nb(
        tmp_path / "j.ipynb",
        [nbformat.v4.new_code_cell("println(1)")],
        kernelspec={"name": "julia-1.10", "language": "julia", "display_name": "Julia"},
    )
    (tmp_path / "notjson.ipynb").write_text('{"cells": [}\n')
    (tmp_path / "plain.ipynb").write_text('{"cells": []}\n')
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    del broken.cells[0]["source"]
    (tmp_path / "invalid.ipynb").write_text(json.dumps(broken))
    (tmp_path / "x.py").write_text("1\n")
    async with open_run(tmp_path) as run:
        missing = await cell(run, "", notebook="j.ipynb")
        assert missing.is_error and "needs the kernel 'julia-1.10' (language julia)" in missing.text
        assert "Kernels here: python (ipykernel)" in missing.text
        assert "nothing was started" in missing.text
        assert run.resource("eval").started == []
        read = await cell(run, "", notebook="j.ipynb", op="read")
        assert "kernel julia-1.10: not available in this run" in read.text
        for name, expected in [
            ("notjson.ipynb", "is not valid JSON (Expecting value at line 1, column 12)"),
            ("plain.ipynb", "not a notebook this can open (no nbformat field"),
            ("invalid.ipynb", "is not a valid nbformat 4 notebook: "),
            ("nothere.ipynb", "nothere.ipynb does not exist"),
            ("x.py", "x.py is not an .ipynb file"),
            ("../out.ipynb", "notebook:"),
        ]:
            bad = await cell(run, "", notebook=name)
            assert bad.is_error and expected in bad.text, (name, bad.text)
        invalid = await cell(run, "", notebook="invalid.ipynb")
        assert "source" in invalid.text, invalid.text
    assert (tmp_path / "notjson.ipynb").read_text() == '{"cells": [}\n'


async def test_each_notebook_has_its_own_kernel_in_its_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.txt").write_text("beside the notebook\n")
    async with open_run(tmp_path) as run:
        made = await cell(
            run, "secret = 42\nprint(open('data.txt').read())", notebook="sub/a.ipynb"
        )
        assert "beside the notebook" in made.text, made.text
        created = nbformat.read(tmp_path / "sub" / "a.ipynb", as_version=4)
        assert created.metadata["kernelspec"]["name"] == "python3"
        other = await cell(run, "'secret' in globals()", notebook="b.ipynb")
        assert "False" in other.text
        plain = await cell(run, "'secret' in globals()")
        assert plain.text == "False"
        bridge = await cell(run, "tool('read', {'path': 'sub/data.txt'})", notebook="sub/a.ipynb")
        assert "beside the notebook" in bridge.text, bridge.text
        reset = await cell(run, "'secret' in globals()", notebook="sub/a.ipynb", reset=True)
        assert reset.text.startswith("reset: the kernel of sub/a.ipynb was stopped")
        assert "False" in reset.text


async def test_a_deno_notebook(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        made = await cell(
            run, "const x: number = 20; x + 22", notebook="d.ipynb", language="javascript"
        )
        assert "42" in made.text, made.text
        nb = nbformat.read(tmp_path / "d.ipynb", as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "deno"
        nbformat.validate(nb)
        again = await cell(run, "x * 2", notebook="d.ipynb")
        assert "40" in again.text


async def test_an_installed_kernelspec_runs_its_notebooks(tmp_path: Path) -> None:
    """A notebook naming an installed kernelspec (bash_kernel; IRkernel when R is there) runs
    in that kernel, found by the kernelspec's own name."""
    from tests.eval.test_installed import need_kernelspec

    need_kernelspec("bash")
    write_nb(
        tmp_path / "b.ipynb",
        [nbformat.v4.new_code_cell("X=41; echo $((X + 1))")],
        kernelspec={"name": "bash", "language": "bash", "display_name": "Bash"},
    )
    async with open_run(tmp_path, eval_idle_timeout=30) as run:
        read = await cell(run, "", notebook="b.ipynb", op="read")
        assert "kernel bash → bash (bash), not started" in read.text, read.text
        ran = await cell(run, "", notebook="b.ipynb")
        assert "In [1] ──\n42" in ran.text, ran.text
        saved = nbformat.read(tmp_path / "b.ipynb", as_version=4)
        assert saved.cells[0].outputs[0]["text"] == "42\n"
        assert saved.metadata["language_info"]["name"] == "bash"
