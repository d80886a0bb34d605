"""A write that fails on a full disk leaves the tree exactly as it was: originals intact and no
`.NAME.XXXX.livetools` temp file behind, for `write`, `edit` and `resolve accept`. Once with an
injected ENOSPC (always runs), once on a real 64 KB tmpfs (needs mount rights; skips otherwise)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from livetools import Host
from livetools.faces import harness
from livetools.files import edits

PY = "def greet(name):\n    return name\n\n\nprint(greet('x'))\n"
BIG = "y" * 200_000  # far more than the tmpfs holds


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def seed(root: Path) -> None:
    (root / "a.py").write_text(PY)
    (root / "pyproject.toml").write_text('[project]\nname = "t"\nversion = "0"\n')


async def calls(root: Path) -> list[tuple[str, Any]]:
    """Drive the three writes at `root`; the results, each expected to fail whole."""
    host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    out = []
    async with host.open_run(root) as run:
        out.append(("write", await run.call("write", {"path": "a.py", "content": BIG})))
        out.append(("write new", await run.call("write", {"path": "b.py", "content": BIG})))
        edit = {"path": "a.py", "old": "return name", "new": f"return {BIG!r}"}
        out.append(("edit", await run.call("edit", edit)))
        if "ast_edit" in {t.name for t in run.tools()}:
            staged = await run.call(
                "ast_edit", {"pattern": "greet($A)", "rewrite": f"greet($A, {BIG!r})"}
            )
            assert not staged.is_error, staged.text
            edit_id = staged.data["edit_id"]
            accept = {"edit_id": edit_id, "action": "accept"}
            out.append(("resolve accept", await run.call("resolve", accept)))
    return out


def check(root: Path, before: dict[str, bytes], results: list[tuple[str, Any]]) -> None:
    assert len(results) == 4, "ast_edit is not offered: install livetools-astgrep"
    for what, result in results:
        assert result.is_error, f"{what}: {result.text}"
        assert "No space left on device" in result.text, f"{what}: {result.text}"
        assert "nothing changed" in result.text or "nothing was" in result.text, result.text
        assert str(root) not in result.text
    assert snapshot(root) == before
    assert not [p for p in os.listdir(root) if p.endswith(".livetools")]


async def test_injected_enospc_leaves_nothing_behind(tmp_path, monkeypatch):
    seed(tmp_path)
    before = snapshot(tmp_path)
    real = edits._write_fd

    def full(fd: int, data: Any) -> int:
        if len(data) > 4096:  # write a little, then the disk is full
            real(fd, bytes(data[:4096]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(edits, "_write_fd", full)
    check(tmp_path, before, await calls(tmp_path))


@contextlib.contextmanager
def small_tmpfs(base: Path) -> Iterator[Path]:
    mount = shutil.which("mount")
    where = base / f"tmpfs-{uuid.uuid4().hex[:8]}"
    where.mkdir()
    if mount is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')[:200]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


async def test_real_full_tmpfs_leaves_nothing_behind(tmp_path):
    with small_tmpfs(tmp_path) as root:
        seed(root)
        before = snapshot(root)
        check(root, before, await calls(root))
