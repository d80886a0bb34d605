"""What the approval card says for the real write/exec tools, against real components: resolve
accept (files and replacement counts of the staged edit), lsp_rename through basedpyright
(old → new name and the file count, known only once the rename is staged), debug launch with
debugpy (program and args) — and that a denied call changes nothing and starts nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import livetools_astgrep.plugin
from livetools import Host, Ports
from livetools.faces import harness
from livetools.questions import Answer, Approval, Decision, Question
from tests.support import require_binary

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "projects"


class Operator:
    def __init__(self, *decisions: Decision) -> None:
        self.decisions = list(decisions)
        self.cards: list[Approval] = []

    async def __call__(self, question: Question) -> Answer:
        raise AssertionError("approvals come as approvals")

    async def approve(self, approval: Approval) -> Decision:
        self.cards.append(approval)
        return self.decisions.pop(0)


def ports(operator: Operator) -> Ports:
    return Ports(question=operator, target_space="test")


def children() -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            continue
    return out


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


async def test_resolve_accept_card_names_files_and_counts(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\nprint(2)\n")
    (tmp_path / "b.py").write_text("print(3)\n")
    operator = Operator(Decision.DENY, Decision.ALLOW)
    host = Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)
    options = {"approve": "ask"}
    async with host.open_run(tmp_path, ports=ports(operator), options=options) as run:
        staged = await run.call("ast_edit", {"pattern": "print($A)", "rewrite": "log($A)"})
        assert not staged.is_error, staged.text
        assert operator.cards == []  # staging writes nothing: not asked
        before = snapshot(tmp_path)
        args = {"edit_id": staged.data["edit_id"], "action": "accept"}
        denied = await run.call("resolve", args)
        assert denied.is_error and denied.data["reason"] == "declined"
        assert snapshot(tmp_path) == before  # nothing written
        accepted = await run.call("resolve", args)  # the staged edit survived the refusal
        assert not accepted.is_error, accepted.text
    card = operator.cards[0]
    assert card.tool == "resolve" and card.tier == "write"
    lines = card.summary.splitlines()
    assert lines[0] == "accept edit_1: write 3 replacements in 2 files: a.py, b.py"
    assert "-print(1)" in card.summary and "+log(1)" in card.summary
    assert len(lines) <= 13  # capped: 12 lines and the truncation note
    assert "the operator declined resolve (approval #1): accept edit_1" in denied.text
    assert (tmp_path / "b.py").read_text() == "log(3)\n"


async def test_lsp_rename_card_counts_files_once_staged(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    root = tmp_path / "py"
    shutil.copytree(FIXTURES / "lsp" / "py", root)
    before = snapshot(root)
    operator = Operator(Decision.DENY, Decision.ALLOW)
    host = Host(plugins=[("harness", harness)])
    options = {"approve": "ask", "lsp": {"prefer": ["basedpyright"]}}
    args = {"file": "app.py", "line": 3, "symbol": "Square", "new_name": "Box"}
    async with host.open_run(root, ports=ports(operator), options=options) as run:
        denied = await run.call("lsp_rename", args)
        assert denied.is_error and denied.data["reason"] == "declined", denied.text
        assert snapshot(root) == before
        renamed = await run.call("lsp_rename", args)
        assert not renamed.is_error, renamed.text
    card = operator.cards[0].summary
    assert card.startswith('rename "Square" → "Box": '), card
    assert " edits in 2 files: app.py (" in card and "shapes.py (" in card
    assert 'the operator declined lsp_rename (approval #1): rename "Square" → "Box"' in denied.text
    assert "class Box(Shape):" in (root / "shapes.py").read_text()


async def test_debug_launch_card_and_a_deny_starts_nothing(tmp_path: Path) -> None:
    pytest.importorskip("debugpy", reason="install the debug extra (debugpy)")
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "debug" / "py", root)
    operator = Operator(Decision.DENY)
    host = Host()
    before = children()
    async with host.open_run(root, ports=ports(operator), options={"approve": "ask"}) as run:
        if "debug" not in {t.name for t in run.tools()}:
            pytest.skip("the debug plugin is not installed (uv sync --all-extras)")
        for op in ("adapters", "status", "stack"):  # reads and session ops: never asked
            looked = await run.call("debug", {"op": op})
            assert not (isinstance(looked.data, dict) and looked.data.get("refused")), looked.text
        assert operator.cards == []
        out = await run.call("debug", {"op": "launch", "program": "app.py", "args": ["--n", "3"]})
        assert out.is_error and out.data["reason"] == "declined", out.text
        assert children() == before  # no adapter, no debuggee
    assert operator.cards[0].summary.splitlines() == [
        "debug launch",
        "program: app.py",
        "args: --n 3",
    ]
    assert "nothing was run" in out.text
