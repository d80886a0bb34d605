"""tool()/tools() in a Python cell: the run's tools over the kernel's stdin channel, with the
caller's surface and approval."""

from __future__ import annotations

import time
from pathlib import Path

from livetools import ApprovalRequest, Ports
from tests.eval.support import cell, host, open_run


async def test_cell_reads_a_file_through_another_tool(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    async with open_run(tmp_path) as run:
        code = "r = tool('read', {'path': 'notes.txt'})\nprint(r.data)\nr.text.splitlines()"
        result = await cell(run, code)
        assert not result.is_error, result.text
        assert result.text == "{'path': 'notes.txt'}\n['alpha', 'beta']"
        missing = await cell(run, "tool('read', path='nope.txt')")
        assert missing.is_error and "ToolError: no file nope.txt" in missing.text
        # the traceback ends at the cell's line: no frame of the helper that raised it
        assert "_livetools_setup" not in missing.text and "----> 1 tool(" in missing.text
        shown = await cell(run, "tool('read', {'path': 'notes.txt'})")
        assert shown.text == "alpha\nbeta", shown.text  # the tool's text, not a repr
        images = await cell(run, "p = tool('picture')\nlen(p.images), p.images[0][:4]")
        assert images.text == "(1, b'\\x89PNG')"


async def test_cell_cannot_escalate_past_its_callers_surface(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        code = (
            "try:\n    tool('touch', {'path': 'x.txt', 'content': 'hi'})\n"
            "except ToolError as e:\n    print('refused:', e)"
        )
        refused = await cell(run, code, surface="runner")  # read + exec, no write
        assert refused.text.startswith('refused: unknown tool "touch" on surface "runner"')
        assert not (tmp_path / "x.txt").exists()
        allowed = await cell(run, "tool('touch', {'path': 'x.txt', 'content': 'hi'}).text")
        assert "wrote x.txt" in allowed.text
        assert (tmp_path / "x.txt").read_text() == "hi"
        nested = await cell(run, "tool('eval', {'code': '1', 'description': 'a b c d e'})")
        assert nested.is_error and "cannot be called from inside its own call" in nested.text
    plan = await host().open_run(tmp_path)
    async with plan:
        hidden = await cell(plan, "1", surface="plan")  # eval itself is exec: not on plan
        assert hidden.is_error and "unknown tool" in hidden.text


async def test_bridge_calls_go_through_approval(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append((request.tool, request.surface))
        return request.tool != "touch"

    async with open_run(tmp_path, ports=Ports(approve=approve)) as run:
        code = "try:\n    tool('touch', {'path': 'y.txt'})\nexcept ToolError as e:\n    print(e)"
        result = await cell(run, code)
        assert "the operator declined this touch call" in result.text
        assert asked == [("eval", "agent"), ("touch", "agent")]
        assert not (tmp_path / "y.txt").exists()


async def test_batch_runs_concurrently_on_the_host(tmp_path: Path) -> None:
    async with open_run(tmp_path, call_timeouts={"nap": 10}) as run:
        code = (
            "import time\nt = time.monotonic()\n"
            "rs = tools([('echo', {'text': 'a'}), ('read', {'path': 'missing'}), 'picture',"
            " {'name': 'echo', 'args': {'text': 'b'}}])\n"
            "print([(r.ok, r.text) for r in rs])\n"
        )
        result = await cell(run, code)
        assert result.text.startswith(
            "[(True, 'a'), (False, 'no file missing'), (True, 'a 2x2 red square'), (True, 'b')]"
        )
        # nap is serialized per run by the host; meet is parallel-safe: the 4 calls of one
        # batch are in flight together (serialized, the first would wait alone).
        met = await cell(run, "print([r.text for r in tools([('meet', {'size': 4})] * 4)])")
        assert met.text == "['met 4', 'met 4', 'met 4', 'met 4']", met.text


async def test_long_bridge_call_does_not_trip_the_idle_budget(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_idle_timeout=2.0, call_timeouts={"nap": 30}) as run:
        t0 = time.monotonic()
        result = await cell(run, "tool('nap', {'seconds': 4}).text")
        assert not result.is_error, result.text
        assert result.text == "'slept 4.0'"
        assert time.monotonic() - t0 >= 4


async def test_tool_from_worker_threads(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        code = (
            "from concurrent.futures import ThreadPoolExecutor\n"
            "with ThreadPoolExecutor(4) as pool:\n"
            "    out = list(pool.map(lambda i: tool('echo', {'text': str(i)}).text, range(8)))\n"
            "out"
        )
        result = await cell(run, code)
        assert result.text == "['0', '1', '2', '3', '4', '5', '6', '7']"


async def test_call_stopped_mid_bridge_leaves_a_usable_kernel(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        await cell(run, "x = 5")  # the kernel starts without the tight bound (slow under load)
        run.options["call_timeouts"] = {"eval": 3.0}  # read per call: only this one is cut
        t0 = time.monotonic()
        stopped = await cell(run, "tool('stall', {'seconds': 300})")
        assert time.monotonic() - t0 < 60
        assert stopped.is_error and "timed out after 3s" in stopped.text, stopped.text
        run.options["call_timeouts"] = {}
        after = await cell(run, "x")  # the abandoned cell was interrupted; state kept
        assert after.text == "5", after.text
