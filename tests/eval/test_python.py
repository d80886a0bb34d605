"""The eval tool against a real ipykernel: state, display, images, errors, caps, timeouts,
death, reset, and that no kernel outlives its run."""

from __future__ import annotations

import io
import time
from pathlib import Path

from livetools.procs import process_state, session_members
from tests.eval.support import DESC, cell, cpu_hog, kernel_pids, open_run


def gone(pid: int) -> bool:
    return process_state(pid) in (None, "Z", "X") and session_members(pid) == []


async def test_state_persists_and_last_expression_shows(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        first = await cell(run, "import math\nx = 41\nx + 1")
        assert (first.text, first.is_error) == ("42", False)
        second = await cell(run, "print('x is', x)\nmath.sqrt(x + 8)")
        assert second.text == "x is 41\n7.0"
        assert second.data["execution_count"] == 2
        assert (await cell(run, "y = 1;")).text == "(no output)"
        pids = kernel_pids(run)
        assert len(pids) == 1
    assert all(gone(pid) for pid in pids)


async def test_reset_starts_clean(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        await cell(run, "x = 1")
        old = kernel_pids(run)[0]
        result = await cell(run, "'x' in dir()", reset=True)
        assert "reset" in result.text and result.text.endswith("False")
        assert gone(old)
        only_reset = await cell(run, "", reset=True)
        assert not only_reset.is_error and "reset" in only_reset.text
        no_code = await run.call("eval", {"description": DESC, "reset": True})
        assert not no_code.is_error and "reset" in no_code.text, no_code.text
        empty = await cell(run, "  ")
        assert empty.is_error and "code is empty" in empty.text


async def test_dataframe_is_a_table_with_html_in_data(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        code = "import pandas as pd\ndf = pd.DataFrame({'name': ['ada', 'bob'], 'n': [3, 4]})\n"
        result = await cell(run, code + "display(df.head(1))\nprint('between')\ndf")
        lines = result.text.splitlines()
        assert lines[0].split() == ["name", "n"]
        assert lines[1].split() == ["0", "ada", "3"]
        assert lines[2] == "between"
        assert lines[-1].split() == ["1", "bob", "4"]
        assert any("<table" in r.get("text/html", "") for r in result.data["rich"])


async def test_matplotlib_figure_is_one_valid_png(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        code = (
            "import matplotlib.pyplot as plt\n"
            "fig, ax = plt.subplots(figsize=(4, 3))\nax.plot([1, 3, 2])\nfig"
        )
        result = await cell(run, code)
        assert not result.is_error, result.text
        assert len(result.images) == 1  # the figure was emitted twice: sent once
        import re

        import matplotlib.image

        size = re.fullmatch(r"\[image 1: PNG (\d+)x(\d+)\]", result.text)
        assert size, result.text
        pixels = matplotlib.image.imread(io.BytesIO(result.images[0]), format="png")
        assert pixels.shape[:2] == (int(size[2]), int(size[1]))
        assert pixels.shape[0] > 100 and pixels.std() > 0  # a real plot, not a blank
        two = await cell(run, "for k in (1, 2):\n    plt.plot([k, 0]); plt.show()")
        assert len(two.images) == 2 and "[image 2: PNG" in two.text


async def test_error_is_an_error_result_with_the_traceback(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        result = await cell(run, "print('before')\ndef f():\n    return 1 / 0\nf()")
        assert result.is_error
        assert result.text.startswith("before\n")
        assert "ZeroDivisionError: division by zero" in result.text
        assert "return 1 / 0" in result.text
        assert "\x1b[" not in result.text
        assert result.data["error"] == {"ename": "ZeroDivisionError", "evalue": "division by zero"}
        assert (await cell(run, "2 * 21")).text == "42"  # the kernel goes on


async def test_ansi_stripped_progress_settled_output_capped(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_max_chars=3000) as run:
        colored = await cell(run, "print('\\x1b[31mred\\x1b[0m'); print('10%\\r50%\\r100%')")
        assert colored.text == "red\n100%"
        big = await cell(run, "for i in range(5000):\n    print(f'line {i}')")
        assert big.text.startswith("line 0\nline 1\n")
        assert big.text.endswith("line 4999")
        assert "truncated:" in big.text and "more characters" in big.text
        assert len(big.text) < 3200


async def test_huge_output_keeps_head_and_tail_with_one_marker(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        line = await cell(run, "print('HEAD' + 'y' * 2_000_000 + 'TAIL')")
        assert line.text.startswith("HEADyyy") and line.text.endswith("yyyTAIL")
        assert line.text.count("… [truncated: ") == 1 and len(line.text) < 12_100
        many = await cell(run, "for i in range(300_000):\n    print(i)\nprint('END')")
        assert many.text.startswith("0\n1\n2\n") and many.text.endswith("299999\nEND")
        assert many.text.count("… [truncated: ") == 1


async def test_printed_lone_surrogate_is_replaced_not_a_traceback(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        printed = await cell(run, "print('a\\ud800b')")
        assert (printed.text, printed.is_error) == ("a?b", False)
        assert (await cell(run, "1 + 1")).text == "2"


async def test_help_page_and_input_gets_eof(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        helped = await cell(run, "len?")
        assert "Return the number of items in a container" in helped.text
        t0 = time.monotonic()
        asked = await cell(run, "name = input('name? ')")
        assert time.monotonic() - t0 < 30  # a reader waiting on stdin would hang for 60 s
        assert asked.is_error and "EOFError" in asked.text
        assert "end-of-file" in asked.text and "kernelbase" not in asked.text
        caught = await cell(run, "try:\n    input()\nexcept EOFError:\n    print('eof')")
        assert caught.text.startswith("eof")


async def test_idle_budget_interrupts_and_keeps_state(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_idle_timeout=1.0) as run:
        await cell(run, "0")  # the kernel's start is not what is timed
        t0 = time.monotonic()
        result = await cell(run, "x = 7\nimport time\ntime.sleep(60)")
        assert time.monotonic() - t0 < 30
        assert result.is_error and result.data["status"] == "interrupted"
        assert "state (variables, imports) is kept" in result.text
        assert (await cell(run, "x")).text == "7"


async def test_output_resets_the_idle_budget(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_idle_timeout=2.0) as run:
        code = "import time\nfor i in range(5):\n    print(i, flush=True)\n    time.sleep(0.8)"
        result = await cell(run, code)
        assert not result.is_error, result.text
        assert result.text.split() == ["0", "1", "2", "3", "4"]


async def test_unanswered_interrupt_restarts_and_says_state_was_lost(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_idle_timeout=0.5, eval_interrupt_grace=0.5) as run:
        await cell(run, "x = 1")
        code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"
        result = await cell(run, code)
        assert result.is_error and result.data["status"] == "restarted"
        assert "state (variables, imports) was lost" in result.text
        old = kernel_pids(run)[0]
        assert gone(old)
        after = await cell(run, "'x' in dir()")
        assert "started a fresh python kernel" in after.text
        assert after.text.endswith("False")


async def test_dead_kernel_is_reported_and_replaced(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        await cell(run, "x = 1")
        died = await cell(run, "import os\nos._exit(3)")
        assert died.is_error and died.data["status"] == "died"
        assert "died with exit code 3" in died.text and "state is lost" in died.text
        after = await cell(run, "'x' in dir()")
        assert not after.is_error
        assert "started a fresh python kernel" in after.text and after.text.endswith("False")
        # killed from outside between two calls
        import os
        import signal

        os.kill(kernel_pids(run)[-1], signal.SIGKILL)
        again = await cell(run, "1 + 1")
        assert "started a fresh python kernel" in again.text and again.text.endswith("2")
        pids = kernel_pids(run)
        assert len(pids) == 3
    assert all(gone(pid) for pid in pids)


async def test_kill_between_calls_never_swallows_the_next_cell(tmp_path: Path) -> None:
    """Ten times under a CPU hog: SIGKILL from outside, then at once the next cell. It runs
    in a fresh kernel and says the state was lost; the kill is never taken for its death."""
    import asyncio
    import os
    import signal

    with cpu_hog():
        async with open_run(tmp_path) as run:
            await cell(run, "x = 0")
            for i in range(10):
                os.kill(kernel_pids(run)[-1], signal.SIGKILL)
                result = await asyncio.wait_for(cell(run, f"x = {i}\nx * 2"), 120)
                assert not result.is_error, (i, result.text)
                assert "started a fresh python kernel" in result.text, result.text
                assert "killed by SIGKILL" in result.text and result.text.endswith(str(i * 2))


async def test_last_values_are_not_cached_in_the_kernel(tmp_path: Path) -> None:
    """IPython's Out cache would keep every cell's last value: 50 cells of a 200 KB string
    each grew the kernel by ~0.38 MB per cell."""

    def rss_kb(pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    async with open_run(tmp_path, eval_max_chars=200) as run:
        for _ in range(5):
            await cell(run, "'x' * 200_000")
        pid = kernel_pids(run)[0]
        before = rss_kb(pid)
        for i in range(50):
            await cell(run, f"'{i % 10}' * 200_000")
        grown = rss_kb(pid) - before
        assert grown < 5_000, f"the kernel grew {grown} KB over 50 cells"


async def test_no_kernel_left_after_close_even_mid_cell(tmp_path: Path) -> None:
    import asyncio

    from tests.eval.support import host

    run = await host().open_run(tmp_path)
    await cell(run, "import subprocess\np = subprocess.Popen(['sleep', '300'])")
    busy = asyncio.ensure_future(cell(run, "!sleep 120"))
    await asyncio.sleep(0.8)
    pids = kernel_pids(run)
    children = await cell_pids(run)
    assert len(children) >= 2  # the Popen'd sleep and the !sleep shell
    await run.aclose()
    result = await busy
    assert result.is_error
    assert all(gone(pid) for pid in pids)
    assert all(process_state(child) in (None, "Z", "X") for child in children)


async def cell_pids(run: object) -> list[int]:
    kernel = run.resource("eval").live["python"]  # type: ignore[attr-defined]
    return [p for p in session_members(kernel.pid) if p != kernel.pid]


async def test_description_must_be_five_to_ten_words(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        short = await run.call("eval", {"code": "1", "description": "too short"})
        assert short.is_error and "2 words; give 5-10" in short.text
        assert short.text.count("(got") == 1 and "(got 'too short')" in short.text
        ok = await run.call("eval", {"code": "1", "description": DESC})
        assert not ok.is_error
        bad_language = await run.call(
            "eval", {"code": "1", "description": DESC, "language": "cobol"}
        )
        assert bad_language.is_error and "python" in bad_language.text
