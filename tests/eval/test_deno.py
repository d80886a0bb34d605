"""The eval tool against Deno's real kernel: state, display, bridge via prompt(), idioms
rewritten, interrupts, and no kernel left behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from livetools_eval.builtin import deno_argv
from livetools_eval.hookspecs import KernelUnavailable
from tests.eval.support import cell, cpu_hog, kernel_pids, open_run
from tests.eval.test_python import gone
from tests.support import REQUIRE_ENV


@pytest.fixture(autouse=True)
def _need_deno() -> None:
    import os

    try:
        deno_argv()
    except KernelUnavailable as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


async def js(run: object, code: str, **args: object):  # type: ignore[no-untyped-def]
    return await cell(run, code, language="javascript", **args)  # type: ignore[arg-type]


async def test_state_display_errors_and_reset(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        assert (await js(run, "let x = 41;\nconst f = (n: number) => n + 1;\nf(x)")).text == "42"
        assert (await js(run, "let x = 1; x + 1")).text == "2"  # let may be declared again
        awaited = await js(run, "await new Promise((r) => setTimeout(r, 50));\n'done'")
        assert awaited.text == '"done"'
        shown = await js(
            run, "console.log('a');\nawait Deno.jupyter.display(Deno.jupyter.md`**b**`);\n({n: 1})"
        )
        assert shown.text == "a\n**b**\n{ n: 1 }"
        assert {"text/markdown": "**b**"} in shown.data["rich"]
        failed = await js(run, "function g() { throw new TypeError('nope'); }\ng()")
        assert failed.is_error and "TypeError: nope" in failed.text
        assert "\x1b[" not in failed.text
        reset = await js(run, "typeof x", reset=True)
        assert reset.text.endswith('"undefined"') and "reset" in reset.text
        pids = kernel_pids(run)
    assert all(gone(pid) for pid in pids)


async def test_bridge_from_javascript(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    async with open_run(tmp_path) as run:
        read = await js(run, "tool('read', {path: 'notes.txt'}).text.split('\\n')[1]")
        assert read.text == '"beta"'
        shown = await js(run, "tool('read', {path: 'notes.txt'})")
        assert shown.text == "alpha\nbeta", shown.text  # the tool's text, not a repr
        batch = await js(
            run, "tools([['echo', {text: 'a'}], 'picture', ['read', {path: 'x'}]]).map(r => r.ok)"
        )
        assert batch.text == "[ true, true, false ]"
        image = await js(run, "Deno.jupyter.image(tool('picture').images[0])")
        assert len(image.images) == 1 and image.images[0][:4] == b"\x89PNG"
        code = "try { tool('touch', {path: 'w.txt'}) } catch (e) { console.log(e.name, e.message) }"
        refused = await js(run, code, surface="runner")
        assert refused.text.startswith('ToolError unknown tool "touch" on surface "runner"')
        assert not (tmp_path / "w.txt").exists()
        asked = await js(run, "console.log(prompt('your name?'))")
        assert asked.text.startswith("null") and "end-of-file" in asked.text


async def test_idioms_rewritten_for_javascript(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    async with open_run(tmp_path, eval_idle_timeout=60) as run:
        await js(run, "0")  # the kernel's start is not what is timed
        t0 = time.monotonic()
        shell = await js(run, "!echo hi | cat\n!cat\n!exit 3\nconsole.log(_exit_code)")
        assert time.monotonic() - t0 < 30  # a reader waiting on stdin would hang for 60 s
        assert shell.text == "hi\n[exit code 3]\n3"
        moved = await js(run, "%cd sub\nDeno.cwd()")
        assert moved.text.endswith(f'"{tmp_path / "sub"}"')
        bash = await js(run, "%%bash\necho from bash; cat; echo err >&2")
        assert bash.text == "from bash\nerr"
        timed = await js(run, "%%timeit -n 10 -r 2\nMath.sqrt(2)")
        assert "per loop (mean ± std. dev. of 2 runs, 10 loops each)" in timed.text
        not_shell = await js(run, "const done = false;\n!done && console.log('ran')")
        assert not_shell.text == "ran"
        pip = await js(run, "%pip install lodash")
        assert pip.is_error and "npm:" in pip.text


async def test_idle_budget_interrupts_busy_javascript(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_idle_timeout=1.0, eval_interrupt_grace=2.0) as run:
        await js(run, "let kept = 7")
        t0 = time.monotonic()
        busy = await js(run, "while (true) {}")
        assert time.monotonic() - t0 < 30
        assert busy.is_error and busy.data["status"] == "interrupted", busy.text
        assert (await js(run, "kept")).text == "7"
        # a pending await does not answer an interrupt: the kernel is replaced, state lost
        stuck = await js(run, "await new Promise(() => {})")
        assert stuck.data["status"] in ("interrupted", "restarted"), stuck.text
        if stuck.data["status"] == "restarted":
            assert "was lost" in stuck.text
            after = await js(run, "typeof kept")
            assert "started a fresh javascript kernel" in after.text
        pids = kernel_pids(run)
    assert all(gone(pid) for pid in pids)


async def test_python_and_javascript_side_by_side(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        await cell(run, "x = 'py'")
        await js(run, "const x = 'js'")
        assert (await cell(run, "x")).text == "'py'"
        assert (await js(run, "x")).text == '"js"'
        pids = kernel_pids(run)
        assert len(pids) == 2
    assert all(gone(pid) for pid in pids)


async def test_output_trailing_idle_is_never_lost_under_load(tmp_path: Path) -> None:
    """Deno can send a cell's result or stream after its idle status; on a loaded machine the
    gap grows. Under a CPU hog, every `1+1` shows 2 and every console.log its line."""
    with cpu_hog():
        async with open_run(tmp_path) as run:
            for i in range(150):
                code = "1+1" if i % 2 else f"console.log('line {i}')"
                want = "2" if i % 2 else f"line {i}"
                result = await js(run, code)
                assert result.text == want, (i, result.text)
