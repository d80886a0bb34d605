"""Diagnostics on write when the wait for the baseline (the old text's diagnostics) runs out: the
new text is still sent, the result says the baseline is unknown with the current counts instead of
claiming what is new, and the next write is judged against a known state again. A pygls fake
(tests/lsp/late_server.py), since no real server can be made to stay silent on demand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from livetools import hookimpl
from livetools_lsp import ServerSpec
from tests.lsp.conftest import lsp_run

LATE = Path(__file__).with_name("late_server.py")


class LateServer:
    def __init__(self, log: Path) -> None:
        self.log = log

    @hookimpl
    def livetools_lsp_servers(self) -> ServerSpec:
        return ServerSpec(
            id="late",
            command=(sys.executable, str(LATE), str(self.log)),
            extensions={".late": "late"},
            probe=(sys.executable, "--version"),
            first_diagnostics=1.0,
        )


def received(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_baseline_timeout_still_sends_the_new_text(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.late").write_text("bad already\nfine\n")
    async with lsp_run(root, plugins=[("late", LateServer(log))]) as run:
        r = await run.call("edit", {"path": "a.late", "old": "fine\n", "new": "fine\nbad new\n"})
        assert not r.is_error, r.text
        assert r.text.splitlines()[1] == (
            "diagnostics baseline unknown for a.late (late sent none for the old text in 1.0s), "
            "so which are new is unknown: it has 2 errors, 0 warnings now; "
            'see lsp diagnostics file="a.late"'
        ), r.text
        # The server got the old text (the baseline) and then the new one.
        events = received(log)
        assert [(e["event"], e["version"]) for e in events] == [("open", 1), ("change", 2)]
        assert events[1]["text"] == "bad already\nfine\nbad new\n"

        # The state after that write is known now: the next write reports only its own error.
        r = await run.call("edit", {"path": "a.late", "old": "fine\n", "new": "bad third\n"})
        lines = r.text.splitlines()
        assert lines[1] == "new diagnostics after this write (1, late):", r.text
        assert lines[2:] == ["a.late:2: error [bad]: bad thing: bad third"], r.text
        assert received(log)[-1]["text"] == "bad already\nbad third\nbad new\n"
