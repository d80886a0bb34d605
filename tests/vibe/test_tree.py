"""Process-tree sampling, on the real /proc and on a fabricated one (so the children-file walk is
checked even on kernels without CONFIG_PROC_CHILDREN, and agrees with the full scan)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from livetools_vibe import tree

# pid: (ppid, session, state, start)
FAKE = {
    10: (1, 10, "S", 100),  # the worker
    11: (10, 10, "S", 101),
    12: (10, 12, "S", 102),  # left the session (setsid)
    13: (11, 10, "Z", 103),  # a zombie: already dead
    14: (12, 12, "R", 104),
    20: (1, 20, "S", 200),  # unrelated
}


def fake_proc(root, children_files: bool):
    for pid, (ppid, sid, state, start) in FAKE.items():
        task = root / str(pid) / "task" / str(pid)
        task.mkdir(parents=True)
        fillers = " ".join(["0"] * 15)
        (root / str(pid) / "stat").write_text(
            f"{pid} (a (tricky) name) {state} {ppid} {pid} {sid} {fillers} {start} 0 0\n"
        )
        if children_files:
            kids = [str(c) for c, (p, *_rest) in FAKE.items() if p == pid]
            (task / "children").write_text(" ".join(kids) + (" " if kids else ""))


@pytest.mark.parametrize("children_files", [True, False])
def test_sample_finds_descendants_with_their_sessions(tmp_path, monkeypatch, children_files):
    fake_proc(tmp_path, children_files)
    monkeypatch.setattr(tree, "_PROC", str(tmp_path))
    monkeypatch.setattr(tree, "_children_files", lambda: children_files)
    assert tree.sample(10) == {11: (10, 101), 12: (12, 102), 14: (12, 104)}
    assert tree.descendants({12}) == {(14, 104)}


def test_sample_and_kill_tree_on_real_processes():
    code = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        for _ in range(500):
            found = tree.sample(parent.pid)
            if found:
                break
            time.sleep(0.01)
        [(grandchild, (sid, start))] = found.items()
        assert sid == os.getsid(0)  # it stayed in the session it was born in: ours
        known = {(parent.pid, tree.snapshot()[parent.pid][2]), (grandchild, start)}
        assert tree.kill_tree(known) >= 2
        parent.wait(5)
        assert tree.sample(parent.pid) == {}
        assert grandchild not in tree.snapshot()
    finally:
        parent.kill()
        parent.wait(5)
