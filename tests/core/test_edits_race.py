"""A write never overwrites a save another process made while it ran, and a killed writer's temp
files are gone once a later run opens on the root. Real processes: a writer saving in a loop
beside hundreds of accepts, and a writer killed with SIGKILL in the middle of a 300-file write.

The oracle for "a save was lost": the writer saves `save J`, then (after a pause in which an
accept may land) reads the file back. An accept writes its snapshot plus `+`, so the only
contents that do not lose save J are `save J`, `save J+`, `save J++`, ... Anything else there
means an accept based on an older snapshot replaced save J after it landed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from livetools import EditConflict, Host, StagedEdit
from livetools.files.edits import FileChange

ACCEPTS = int(os.environ.get("LIVETOOLS_RACE_ACCEPTS", "400"))
BOUND = 90.0  # seconds for the whole loop, on a loaded machine

WRITER = textwrap.dedent(
    """
    import json, os, random, sys, time
    path, mode, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    lost, j = [], 0
    while not os.path.exists(stop) and j < 200000:
        j += 1
        text = f"save {j}"
        if mode == "rename":
            tmp = f"{path}.w{j}"
            with open(tmp, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)
        else:
            with open(path, "w") as fh:
                fh.write(text)
        time.sleep(random.uniform(0, 0.003))
        with open(path) as fh:
            seen = fh.read()
        if seen.rstrip("+") != text:
            lost.append([j, seen])
    print(json.dumps({"saves": j, "lost": lost}))
    """
)


@pytest.mark.parametrize("mode", ["in_place", "rename"])
def test_no_save_is_lost_beside_hundreds_of_accepts(tmp_path: Path, mode: str) -> None:
    import json

    target = tmp_path / "f.txt"
    target.write_text("save 0")
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), mode, str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    wrote = refused = 0
    refusals: list[str] = []
    deadline = time.monotonic() + BOUND
    try:
        while wrote + refused < ACCEPTS and time.monotonic() < deadline:
            try:
                staged = StagedEdit.stage(tmp_path, {"f.txt": b""})
            except Exception:  # the writer's file vanished mid-read (rename mode): stage again
                continue
            change = staged.changes[0]
            if change.original is None:
                continue  # between the writer's unlink and rename on some systems
            edit = StagedEdit(
                tmp_path,
                [FileChange(change.path, change.original, change.original + b"+", change.seen)],
            )
            try:
                edit.write()
                wrote += 1
            except EditConflict as exc:
                refused += 1
                refusals.append(str(exc))
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=30)
    report = json.loads(out)
    lost = len(report["lost"])
    print(f"\n{mode}: {wrote} written, {refused} refused, {report['saves']} saves, {lost} lost")
    assert report["lost"] == [], f"saves lost: {report['lost'][:5]} ({wrote} written)"
    assert wrote + refused >= min(ACCEPTS, 50), (wrote, refused)
    assert wrote > 0, "no accept ever got between two saves: the test proved nothing"
    assert all("f.txt" in r for r in refusals)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".livetools")]
    assert leftovers == []


def test_a_killed_writers_temp_files_are_removed_by_the_next_run(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    count = 300
    old = {f"m{i:03}.py": f"x = {i}\n" * 20_000 for i in range(count)}
    for name, text in old.items():
        (root / name).write_text(text)
    git = shutil.which("git")
    if git:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        }
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "old"]):
            subprocess.run([git, *args], cwd=root, check=True, env=env)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys
                from pathlib import Path
                from livetools import StagedEdit
                root = Path(sys.argv[1])
                new = {p.name: p.read_text().replace("x", "y") for p in root.glob("m*.py")}
                StagedEdit.stage(root, new).write()
                """
            ),
            str(root),
        ]
    )

    def temps() -> list[Path]:
        return [p for p in root.iterdir() if p.name.endswith(".livetools")]

    deadline = time.monotonic() + 60
    while len(temps()) < 20 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    left = temps()
    assert left, "the writer finished before it could be killed mid-write: make the files larger"
    assert all(f".{child.pid}-" in p.name for p in left), left[:3]

    import asyncio

    async def open_and_close() -> None:
        async with Host().open_run(root):
            pass

    asyncio.run(open_and_close())
    assert temps() == []
    for name, text in old.items():  # each file all old or all new, never torn
        assert (root / name).read_text() in (text, text.replace("x", "y"))
    if git:
        status = subprocess.run(
            [git, "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        assert ".livetools" not in status


def test_a_live_writers_temp_file_is_left_alone(tmp_path: Path) -> None:
    from livetools.files.owner import sweep, temp_name

    mine = tmp_path / temp_name("a.py", "abcd1234")
    mine.write_text("in flight")
    dead = tmp_path / ".a.py.999999999-1.abcd1234.livetools"  # no such pid
    dead.write_text("left")
    reused = tmp_path / f".a.py.{os.getpid()}-1.abcd1234.livetools"  # our pid, another start
    reused.write_text("left")
    foreign = tmp_path / ".a.py.notours.livetools"  # not our naming: never touched
    foreign.write_text("x")
    removed = sweep(tmp_path)
    assert sorted(p.name for p in removed) == sorted([dead.name, reused.name])
    assert mine.exists() and foreign.exists()


def test_a_dead_hosts_scratch_folders_are_removed(tmp_path):
    """A host killed with runs open leaves its sandbox socket folder and kernel connection files
    in the temp folder: the next one made removes a dead owner's, never a live one's, another
    name's or one without the owner in its name."""
    import subprocess
    import sys

    from livetools.files.owner import owned_tempdir

    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from livetools.files.owner import owned_tempdir;"
            f"print(owned_tempdir('livetools-sbx', {str(tmp_path)!r}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    unrelated = tmp_path / "livetools-sbx-abc"
    unrelated.mkdir()
    live = owned_tempdir("livetools-sbx", str(tmp_path))
    assert Path(made).name.startswith("livetools-sbx-") and not Path(made).exists()
    assert Path(live).is_dir() and unrelated.is_dir()
    again = owned_tempdir("livetools-sbx", str(tmp_path))
    assert Path(live).is_dir() and Path(again).is_dir()
