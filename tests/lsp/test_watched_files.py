"""Files created, changed or deleted reach the server as workspace/didChangeWatchedFiles, whether
the run wrote them or something behind it did: an importer's "could not be resolved" goes after
its module is written, and comes back when the module is deleted from the shell, without reload.
Real basedpyright and gopls."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from livetools_lsp import inotify
from livetools_lsp.watching import CHANGED, CREATED, DELETED, WatchedFiles, glob_regex
from tests.lsp.conftest import lsp_run
from tests.support import require_binary

UNRESOLVED = 'Import "missing_mod" could not be resolved'
HAS_INOTIFY = sys.platform.startswith("linux")


async def diagnostics_until(run, file: str, want: bool, text: str, bound: float = 20.0) -> str:
    """`lsp diagnostics` of `file` until `text` is (want) or is not in it, within `bound`; the
    last answer."""
    deadline = time.monotonic() + bound
    while True:
        r = await run.call("lsp", {"action": "diagnostics", "file": file})
        assert not r.is_error, r.text
        if (text in r.text) == want or time.monotonic() > deadline:
            return r.text
        await asyncio.sleep(0.5)


async def test_a_created_then_deleted_module_reaches_basedpyright(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\nversion = '0'\n")
    async with lsp_run(tmp_path, ["basedpyright"]) as run:
        r = await run.call(
            "write",
            {"path": "uses_missing.py", "content": "from missing_mod import MissingClass\n"},
        )
        assert UNRESOLVED in r.text, r.text
        r = await run.call(
            "write", {"path": "missing_mod.py", "content": "class MissingClass: ...\n"}
        )
        assert not r.is_error, r.text
        began = time.monotonic()
        text = await diagnostics_until(run, "uses_missing.py", False, UNRESOLVED)
        assert UNRESOLVED not in text, text
        resolved_in = time.monotonic() - began

        (tmp_path / "missing_mod.py").unlink()  # from the shell, behind the run
        text = await diagnostics_until(run, "uses_missing.py", True, UNRESOLVED)
        assert UNRESOLVED in text, f"a false clean after the module was deleted: {text}"
        status = await run.call("lsp", {"action": "status"})
        watch = {row["server"]: row["watch"] for row in status.data["running"]}
        assert watch == {"basedpyright": "inotify" if HAS_INOTIFY else "a walk at each call"}
    assert inotify.watches() == 0 and inotify._hub is None  # closed with its server
    print(f"resolved {resolved_in:.1f}s after the module was written")


CASES = {
    # server: (binary, install, files, importer, module, module text, the unresolved message)
    "typescript-language-server": (
        "typescript-language-server",
        "npm install -g typescript-language-server typescript",
        {"tsconfig.json": '{"compilerOptions": {"strict": true}}\n'},
        ("uses.ts", 'import { Missing } from "./missing";\nexport const m = Missing;\n'),
        ("missing.ts", "export const Missing = 1;\n"),
        "Cannot find module './missing'",
    ),
    "clangd": (
        "clangd",
        "apt-get install clangd",
        {"compile_flags.txt": "-I.\n"},
        ("uses.c", '#include "missing.h"\nint use(void) { return MISSING; }\n'),
        ("missing.h", "#define MISSING 1\n"),
        "'missing.h' file not found",
    ),
}


@pytest.mark.parametrize("server", sorted(CASES))
async def test_a_created_then_deleted_module_reaches_the_server(
    tmp_path: Path, server: str
) -> None:
    """The same on typescript-language-server and clangd (a header added and removed)."""
    binary, install, files, (importer, text), (module, body), message = CASES[server]
    require_binary(binary, install)
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    async with lsp_run(tmp_path, [server]) as run:
        r = await run.call("write", {"path": importer, "content": text})
        assert message in r.text, r.text
        r = await run.call("write", {"path": module, "content": body})
        assert not r.is_error, r.text
        after_create = await diagnostics_until(run, importer, False, message)
        assert message not in after_create, after_create
        (tmp_path / module).unlink()
        after_delete = await diagnostics_until(run, importer, True, message)
        assert message in after_delete, f"a false clean after {module} was deleted"


async def test_gopls_sees_a_use_added_behind_the_run(tmp_path: Path) -> None:
    """gopls never reads a file it has not opened again unless told: a use added from the
    shell is counted by the next references and renamed by the next rename; `go build` clean."""
    require_binary("gopls", "apt-get install gopls")
    go = require_binary("go", "apt-get install golang-go")
    (tmp_path / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    (tmp_path / "lib.go").write_text("package main\n\nfunc Decode() int { return 1 }\n")
    (tmp_path / "main.go").write_text("package main\n\nfunc main() { _ = Decode() }\n")
    async with lsp_run(tmp_path, ["gopls"]) as run:
        asked = {"action": "references", "file": "lib.go", "line": 3, "symbol": "Decode"}
        r = await run.call("lsp", asked)
        assert r.text.startswith("2 references"), r.text
        (tmp_path / "other.go").write_text("package main\n\nfunc other() int { return Decode() }\n")
        r = await run.call("lsp", asked)
        assert r.text.startswith("3 references"), r.text
        r = await run.call(
            "lsp_rename", {"file": "lib.go", "line": 3, "symbol": "Decode", "new_name": "Parse"}
        )
        assert not r.is_error, r.text
    assert "Parse()" in (tmp_path / "other.go").read_text()
    built = await asyncio.create_subprocess_exec(
        go, "build", "./...", cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=-2
    )
    out, _ = await asyncio.wait_for(built.communicate(), 120)
    assert built.returncode == 0, out.decode()


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("**/*.{go,mod}", "a/b/c.go", True),
        ("**/*.{go,mod}", "go.mod", True),
        ("**/*.{go,mod}", "x.sum", False),
        ("**/pyrightconfig.json", "pyrightconfig.json", True),
        ("*.py", "a/b.py", False),
        ("src/[!_]*.py", "src/a.py", True),
        ("src/[!_]*.py", "src/_a.py", False),
    ],
)
def test_globs(glob: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(glob).match(path)) is hit


@pytest.mark.parametrize("use_inotify", [True, False], ids=["inotify", "walk"])
def test_changes_are_found_bounded_and_by_kind(tmp_path: Path, use_inotify: bool) -> None:
    (tmp_path / "a.py").write_text("1")
    (tmp_path / "node_modules").mkdir()
    watched = WatchedFiles(tmp_path, frozenset({".py"}), use_inotify)
    assert watched.changes() == []  # the first look takes the snapshot
    assert watched.inotify is (use_inotify and HAS_INOTIFY)
    (tmp_path / "b.py").write_text("2")
    (tmp_path / "a.py").write_text("11")
    (tmp_path / "node_modules" / "c.py").write_text("3")
    (tmp_path / "notes.txt").write_text("x")
    assert watched.changes() == [(tmp_path / "a.py", CHANGED), (tmp_path / "b.py", CREATED)]
    (tmp_path / "b.py").unlink()
    assert watched.changes() == [(tmp_path / "b.py", DELETED)]
    shutil.rmtree(tmp_path / "node_modules")
    assert watched.changes() == []
    watched.close()


@pytest.fixture
def watched(tmp_path: Path):
    """A WatchedFiles on inotify (Linux); closed after, and the process's instance with it."""
    if not HAS_INOTIFY:
        pytest.skip("inotify is Linux only; elsewhere the walk answers (tested above)")
    w = WatchedFiles(tmp_path, frozenset({".py"}))
    assert w.changes() == [] and w.inotify
    yield w
    w.close()
    assert inotify.watches() == 0


def test_inotify_names_what_moved_without_a_walk(tmp_path: Path, watched, monkeypatch) -> None:
    """Folders created with files in them, moved, deleted; a rewrite inside one mtime tick at
    the same size; all found with no walk of the root."""
    (tmp_path / "a.py").write_text("1")
    assert watched.changes() == [(tmp_path / "a.py", CREATED)]
    roots: list[Path] = []
    real_walk = watched.walk
    monkeypatch.setattr(watched, "walk", lambda top=None: roots.append(top) or real_walk(top))

    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text("x")
    (tmp_path / "pkg" / "n.py").write_text("y")
    assert watched.changes() == [(tmp_path / "pkg/n.py", CREATED), (pkg / "m.py", CREATED)]
    assert None not in roots  # only the new folder was read

    stamp = (tmp_path / "a.py").stat()
    (tmp_path / "a.py").write_text("2")  # same size
    os.utime(tmp_path / "a.py", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # same mtime
    assert watched.changes() == [(tmp_path / "a.py", CHANGED)]

    (tmp_path / "pkg").rename(tmp_path / "moved")
    assert watched.changes() == [
        (tmp_path / "moved/n.py", CREATED),
        (tmp_path / "moved/sub/m.py", CREATED),
        (tmp_path / "pkg/n.py", DELETED),
        (tmp_path / "pkg/sub/m.py", DELETED),
    ]
    (tmp_path / "moved/sub/m.py").write_text("changed")  # watched under its new name
    assert watched.changes() == [(tmp_path / "moved/sub/m.py", CHANGED)]
    shutil.rmtree(tmp_path / "moved")
    assert watched.changes() == [
        (tmp_path / "moved/n.py", DELETED),
        (tmp_path / "moved/sub/m.py", DELETED),
    ]
    assert None not in roots
    assert inotify.watches() == 1  # the root alone again


def test_inotify_gives_way_to_the_walk(tmp_path: Path, watched, monkeypatch) -> None:
    """Past the watch cap the look walks, and still answers right."""
    assert inotify._hub is not None
    monkeypatch.setattr(inotify._hub, "cap", inotify.watches())
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "x.py").write_text("1")
    assert watched.changes() == [(tmp_path / "deep/x.py", CREATED)]
    assert not watched.inotify  # given up for good: the walk answers from now on
    (tmp_path / "deep" / "x.py").unlink()
    assert watched.changes() == [(tmp_path / "deep/x.py", DELETED)]


def test_inotify_overflow_walks_once(tmp_path: Path, watched) -> None:
    """The kernel dropped events (queue overflow): the next look walks, the watch stays."""
    (tmp_path / "b.py").write_text("1")
    assert watched._tree is not None
    watched._tree.lost = True
    assert watched.changes() == [(tmp_path / "b.py", CREATED)]
    assert watched.inotify
    (tmp_path / "b.py").unlink()
    assert watched.changes() == [(tmp_path / "b.py", DELETED)]


def test_walks_cut_at_different_places_report_nothing_new(tmp_path: Path, monkeypatch) -> None:
    """A walk past its bound stops wherever the clock says: files past the first cut are not
    "created" at the next look unless they were written since."""
    hour_ago = time.time_ns() - 3600 * 10**9
    for i in range(40):
        (tmp_path / f"m{i:02}.py").write_text("x")
        os.utime(tmp_path / f"m{i:02}.py", ns=(hour_ago, hour_ago))
    watched = WatchedFiles(tmp_path, frozenset({".py"}), use_inotify=False)
    monkeypatch.setattr("livetools_lsp.watching.MAX_FILES", 10)
    assert watched.changes() == [] and watched.partial
    monkeypatch.setattr("livetools_lsp.watching.MAX_FILES", 30)
    assert watched.changes() == []
    (tmp_path / "new.py").write_text("y")
    monkeypatch.setattr("livetools_lsp.watching.MAX_FILES", 1000)
    assert watched.changes() == [(tmp_path / "new.py", CREATED)]
