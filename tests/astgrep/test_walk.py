"""The walk stays inside the root (issue 13 §4): links leaving the root are never followed, on
the readonly surface too; each real file is searched once even under a link loop; FIFOs,
sockets and devices are skipped without being opened; every skip is reported; ast_edit over
such a tree edits the in-root files and lists what it skipped."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

import livetools_astgrep.plugin
from livetools import Host
from livetools_astgrep.reading import read_regular

BOUND = 60.0  # generous: the machine is loaded; a blocked open would never return at all
SECRET = "outside_secret"


def host() -> Host:
    return Host(plugins=[("astgrep", livetools_astgrep.plugin)], entry_points=False)


def hostile_tree(tmp_path: Path) -> Path:
    """A root with links out of it, a loop, an in-root file link and a FIFO named like code."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.py").write_text(f"{SECRET} = compute(1)\n")
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "real.py").write_text("value = compute(2)\n")
    (root / "link.py").symlink_to("../outside/s.py")
    (root / "abs_link.py").symlink_to(outside / "s.py")
    (root / "dirlink").symlink_to("../outside")
    (root / "src" / "loop").symlink_to(".")
    (root / "inlink.py").symlink_to("src/real.py")
    (root / "gone.py").symlink_to("src/missing.py")
    os.mkfifo(root / "src" / "pipe.py")
    return root


async def call(run, tool: str, args: dict, surface: str = "agent"):
    return await asyncio.wait_for(run.call(tool, args, surface=surface), BOUND)


@pytest.mark.parametrize("surface", ["agent", "readonly"])
async def test_search_never_returns_content_outside_the_root(tmp_path, surface):
    root = hostile_tree(tmp_path)
    async with host().open_run(root) as run:
        result = await call(run, "ast_grep", {"pattern": "compute($A)", "max_results": 0}, surface)
    assert not result.is_error, result.text
    assert SECRET not in result.text
    assert SECRET not in repr(result.data)
    assert [(m["file"], m["line"]) for m in result.data["matches"]] == [("src/real.py", 1)]
    skipped = result.data["skipped"]
    assert skipped["links_outside_root"] == ["abs_link.py", "link.py"]
    assert skipped["directory_links"] == ["dirlink", "src/loop"]
    assert skipped["broken_links"] == ["gone.py"]
    assert skipped["special_files"] == ["src/pipe.py"]
    assert "2 links leaving the root (abs_link.py, link.py)" in result.text
    assert "directory links, not followed (dirlink, src/loop)" in result.text
    assert "FIFOs/sockets/devices (src/pipe.py)" in result.text


async def test_a_link_loop_searches_each_file_once(tmp_path):
    root = tmp_path / "proj"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = compute(1)\n")
    (root / "src" / "deep" / "b.py").write_text("y = compute(2)\n")
    (root / "src" / "loop").symlink_to(".")
    (root / "src" / "deep" / "up").symlink_to("../..")
    async with host().open_run(root) as run:
        found = await call(run, "ast_grep", {"pattern": "compute($A)", "max_results": 0})
        edit = await call(run, "ast_edit", {"pattern": "compute($A)", "rewrite": "calc($A)"})
        assert edit.data["replacements"] == 2, edit.text
        accepted = await call(run, "resolve", {"edit_id": edit.data["edit_id"], "action": "accept"})
    files = [m["file"] for m in found.data["matches"]]
    assert files == ["src/a.py", "src/deep/b.py"]
    assert found.data["files_searched"] == 2
    assert not accepted.is_error, accepted.text
    assert (root / "src" / "a.py").read_text() == "x = calc(1)\n"
    assert (root / "src" / "deep" / "b.py").read_text() == "y = calc(2)\n"


async def test_an_in_root_file_link_is_searched_once_under_its_real_path(tmp_path):
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "real.py").write_text("z = compute(3)\n")
    (root / "app").mkdir()
    (root / "app" / "alias.py").symlink_to("../lib/real.py")
    async with host().open_run(root) as run:
        whole = await call(run, "ast_grep", {"pattern": "compute($A)"})
        via_link = await call(run, "ast_grep", {"pattern": "compute($A)", "path": "app"})
        edit = await call(
            run, "ast_edit", {"pattern": "compute($A)", "rewrite": "calc($A)", "path": "app"}
        )
        await call(run, "resolve", {"edit_id": edit.data["edit_id"], "action": "accept"})
    assert [m["file"] for m in whole.data["matches"]] == ["lib/real.py"]
    assert [m["file"] for m in via_link.data["matches"]] == ["lib/real.py"]
    assert edit.data["files"] == ["lib/real.py"]
    # The real file was written; the link is still a link to it.
    assert (root / "app" / "alias.py").is_symlink()
    assert (root / "lib" / "real.py").read_text() == "z = calc(3)\n"


async def test_ast_edit_edits_in_root_files_and_lists_the_skipped_links(tmp_path):
    root = hostile_tree(tmp_path)
    async with host().open_run(root) as run:
        edit = await call(run, "ast_edit", {"pattern": "compute($A)", "rewrite": "calc($A)"})
        assert not edit.is_error, edit.text
        assert edit.data["files"] == ["src/real.py"]
        assert "links leaving the root (abs_link.py, link.py)" in edit.text
        assert "FIFOs/sockets/devices (src/pipe.py)" in edit.text
        accepted = await call(run, "resolve", {"edit_id": edit.data["edit_id"], "action": "accept"})
    assert not accepted.is_error, accepted.text
    assert (root / "src" / "real.py").read_text() == "value = calc(2)\n"
    assert (tmp_path / "outside" / "s.py").read_text() == f"{SECRET} = compute(1)\n"
    assert (root / "link.py").is_symlink()


async def test_a_fifo_and_a_socket_do_not_stall_a_whole_tree_search(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("print(1)\n")
    os.mkfifo(root / "b.py")
    os.mkfifo(root / ".gitignore")  # an ignore file that blocks on open would stall the walk
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "c.py"))
        async with host().open_run(root) as run:
            # Pattern with and without a literal: with one, the prefilter reads each file.
            for pattern in ("print($A)", "$F($A)"):
                result = await call(run, "ast_grep", {"pattern": pattern})
                assert not result.is_error, result.text
                assert result.data["matches"][0]["file"] == "a.py"
                assert result.data["skipped"]["special_files"] == ["b.py", "c.py"]
            edit = await call(run, "ast_edit", {"pattern": "print($A)", "rewrite": "log($A)"})
            assert edit.data["files"] == ["a.py"], edit.text
    finally:
        sock.close()


async def test_an_explicit_fifo_is_refused_by_name(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    os.mkfifo(root / "pipe.py")
    async with host().open_run(root) as run:
        for tool, args in (
            ("ast_grep", {"pattern": "f($A)", "path": "pipe.py"}),
            ("ast_edit", {"pattern": "f($A)", "rewrite": "g($A)", "path": "pipe.py"}),
        ):
            result = await call(run, tool, args)
            assert result.is_error
            assert "pipe.py is a FIFO" in result.text, result.text
            assert str(tmp_path) not in result.text


async def test_an_explicit_link_out_of_the_root_is_refused(tmp_path):
    root = hostile_tree(tmp_path)
    async with host().open_run(root) as run:
        for path in ("link.py", "dirlink"):
            result = await call(run, "ast_grep", {"pattern": "compute($A)", "path": path})
            assert result.is_error
            assert "outside the project root" in result.text
            assert SECRET not in result.text


def test_reading_a_fifo_fails_at_once_instead_of_blocking(tmp_path):
    """A file swapped for a FIFO between the walk and the read (the worker's read path)."""
    fifo = tmp_path / "swapped.py"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(str(fifo), 10)
    (tmp_path / "grown.py").write_bytes(b"x" * 5000)
    assert len(read_regular(str(tmp_path / "grown.py"), 10)) == 5000  # grew since the walk
