"""Staged multi-file edits: refused whole on a stale file, rolled back whole on a failed write."""

from __future__ import annotations

import os

import pytest

import livetools_testkit
from livetools import EditConflict, Host, StagedEdit
from livetools.files import swap


def snapshot(root):
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def three_files(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(f"{name} = 'old'\n")
    return StagedEdit.stage(
        tmp_path, {name: f"{name} = 'new'\n" for name in ("a.py", "b.py", "c.py")}
    )


def test_diff_is_relative_and_capped(tmp_path):
    edit = three_files(tmp_path)
    diff = edit.diff()
    assert "--- a/a.py" in diff and "+++ b/c.py" in diff and "+a.py = 'new'" in diff
    capped = edit.diff(max_lines=4)
    assert capped.splitlines()[-1].startswith("… truncated: ")


def test_stale_file_refuses_the_whole_change(tmp_path):
    edit = three_files(tmp_path)
    (tmp_path / "b.py").write_text("b.py = 'changed by someone else'\n")
    before = snapshot(tmp_path)
    with pytest.raises(EditConflict, match=r"b\.py changed since the edit was staged"):
        edit.write()
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["a.py", "b.py", "c.py"]


def test_failure_on_second_file_rolls_everything_back(tmp_path, monkeypatch):
    edit = three_files(tmp_path)
    before = snapshot(tmp_path)
    calls = []

    real = swap._renameat2

    def failing_replace(src, dst, flags):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst, flags)

    monkeypatch.setattr(swap, "_renameat2", failing_replace)
    with pytest.raises(EditConflict, match="every file was put back"):
        edit.write()
    assert [os.path.basename(c) for c in calls] == ["a.py", "b.py", "a.py"]  # a.py put back
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["a.py", "b.py", "c.py"]  # no temp files left


def test_create_and_delete_roll_back_too(tmp_path, monkeypatch):
    (tmp_path / "gone.py").write_text("x = 1\n")
    (tmp_path / "kept.py").write_text("y = 1\n")
    edit = StagedEdit.stage(tmp_path, {"new.py": "z = 1\n", "gone.py": None, "kept.py": "y = 2\n"})
    before = snapshot(tmp_path)
    real = swap._renameat2

    def fail_on_kept(src, dst, flags):
        if str(dst).endswith("kept.py"):
            raise PermissionError(13, "Permission denied")
        return real(src, dst, flags)

    monkeypatch.setattr(swap, "_renameat2", fail_on_kept)
    with pytest.raises(EditConflict):
        edit.write()
    assert snapshot(tmp_path) == before


def test_applied_edit_keeps_mode_and_goes_through_write_wrapping(tmp_path):
    import asyncio

    script = tmp_path / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    edit = StagedEdit.stage(tmp_path, {"run.sh": "echo new\n"})

    async def apply():
        host = Host(plugins=[("testkit", livetools_testkit)], entry_points=False)
        async with host.open_run(tmp_path, options={"testkit_observe": True}) as run:
            return await edit.apply(run)

    notes = asyncio.run(apply())
    assert notes == ["testkit saw run.sh changed"]
    assert script.read_text() == "echo new\n" and script.stat().st_mode & 0o777 == 0o755
