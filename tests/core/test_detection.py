"""Root markers, binary resolution and the cached health probe, with real scripts as binaries."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from livetools import detection
from livetools.detection import Detection, detect, find_marker, health_probe, which_any
from tests.support import assert_gone


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets an empty memory cache and its own disk cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(detection, "_probe_memory", {})
    return tmp_path / "cache"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """tmp_path as detection reports it (resolved)."""
    return tmp_path.resolve()


def touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def script(path: Path, body: str) -> Path:
    """An executable shell script standing in for a server binary."""
    touch(path, f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_nearest_marker_wins_in_a_monorepo(tmp_path: Path) -> None:
    touch(tmp_path / "pyproject.toml")
    touch(tmp_path / "packages" / "api" / "setup.py")
    deep = touch(tmp_path / "packages" / "api" / "src" / "api" / "main.py")
    other = touch(tmp_path / "packages" / "web" / "app.py")
    markers = ["pyproject.toml", "setup.py"]
    assert find_marker(deep, tmp_path, markers) == tmp_path / "packages" / "api"
    assert find_marker(deep.parent, tmp_path, markers) == tmp_path / "packages" / "api"
    assert find_marker(other, tmp_path, markers) == tmp_path


def test_never_walks_above_the_root(tmp_path: Path) -> None:
    touch(tmp_path / "pyproject.toml")  # belongs to some other project
    root = tmp_path / "repo"
    source = touch(root / "src" / "x.py")
    assert find_marker(source, root, ["pyproject.toml"]) is None
    assert find_marker(tmp_path / "elsewhere.py", root, ["pyproject.toml"]) is None


def test_glob_markers(tmp_path: Path) -> None:
    touch(tmp_path / "src" / "App" / "App.csproj")
    source = touch(tmp_path / "src" / "App" / "Models" / "User.cs")
    assert find_marker(source, tmp_path, ["*.sln", "*.csproj"]) == tmp_path / "src" / "App"
    assert find_marker(source, tmp_path, ["*.fsproj"]) is None


def test_which_any_takes_names_and_absolute_paths(tmp_path: Path) -> None:
    tool = script(tmp_path / "bin" / "my-server", "exit 0")
    path = str(tmp_path / "bin")
    assert which_any(["no-such-server", "my-server"], path=path) == str(tool)
    assert which_any([str(tool)]) == str(tool)
    assert which_any(["no-such-server"], path=path) is None


async def test_marker_missing_reason(tmp_path: Path) -> None:
    source = touch(tmp_path / "main.py")
    found = await detect(
        source,
        tmp_path,
        markers=["pyproject.toml", "setup.py", "requirements.txt"],
        binaries=["sh"],
    )
    assert found == Detection(
        False, "marker missing: pyproject.toml/setup.py/requirements.txt", None, None, None
    )


async def test_binary_missing_reason(tmp_path: Path, root: Path) -> None:
    source = touch(tmp_path / "main.c")
    found = await detect(source, tmp_path, markers=[], binaries=["no-such-dap", "no-such-dap-16"])
    assert not found.usable
    assert found.reason == "binary not on PATH: no-such-dap, no-such-dap-16"
    assert found.root == root  # no marker needed: the run root


async def test_usable_with_version(tmp_path: Path, root: Path) -> None:
    touch(tmp_path / "go.mod")
    source = touch(tmp_path / "cmd" / "main.go")
    tool = script(tmp_path / "bin" / "gopls", "echo 'golang.org/x/tools/gopls v0.16.2'\necho extra")
    found = await detect(source, tmp_path, markers=["go.mod"], binaries=[str(tool)])
    assert found == Detection(True, None, root, str(tool), "golang.org/x/tools/gopls v0.16.2")
    skipped = await detect(source, tmp_path, markers=["go.mod"], binaries=["sh"], probe_args=None)
    assert skipped.usable and skipped.version is None


async def test_failing_binary_reason(tmp_path: Path) -> None:
    tool = script(
        tmp_path / "rust-analyzer",
        "echo >&2\necho \"Unknown binary 'rust-analyzer' in official toolchain\" >&2\nexit 1",
    )
    found = await detect(tmp_path, tmp_path, markers=[], binaries=[str(tool)])
    assert not found.usable and found.binary == str(tool)
    assert found.reason == "binary exits 1: Unknown binary 'rust-analyzer' in official toolchain"
    silent = script(tmp_path / "silent", "exit 3")
    assert (await health_probe(str(silent))).reason == "binary exits 3: (no output)"
    long = script(tmp_path / "long", f"echo {'x' * 500}\nexit 2")
    assert (await health_probe(str(long))).reason == f"binary exits 2: {'x' * 200}"


async def test_probe_is_cached_in_memory_and_on_disk(tmp_path: Path, isolated_cache: Path) -> None:
    counter = tmp_path / "count"
    tool = script(tmp_path / "server", f"echo run >> {counter}\necho 'server 1.0'")
    first = await health_probe(str(tool))
    assert first.ok and first.version == "server 1.0"
    assert await health_probe(str(tool)) == first
    assert counter.read_text().count("run") == 1
    # A one-shot CLI call starts with an empty memory: the disk cache answers.
    detection._probe_memory.clear()
    assert await health_probe(str(tool)) == first
    assert counter.read_text().count("run") == 1
    assert (isolated_cache / "livetools" / "probes.json").is_file()
    # Other arguments, or a changed binary, are probed again.
    await health_probe(str(tool), ["--help"])
    assert counter.read_text().count("run") == 2
    script(tmp_path / "server", f"echo run >> {counter}\necho 'server 2.0'")
    assert (await health_probe(str(tool))).version == "server 2.0"
    assert counter.read_text().count("run") == 3


async def test_failures_are_not_cached_on_disk(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    tool = script(tmp_path / "server", f"echo run >> {counter}\nexit 1")
    assert not (await health_probe(str(tool))).ok
    await health_probe(str(tool))
    assert counter.read_text().count("run") == 1  # memory still answers in this process
    detection._probe_memory.clear()
    await health_probe(str(tool))
    assert counter.read_text().count("run") == 2


async def test_timeout_reason_and_nothing_left_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    tool = script(tmp_path / "hang", f"echo $$ > {pid_file}\nsleep 30 &\nwait")
    started = time.monotonic()
    result = await health_probe(str(tool), timeout=0.5)
    assert time.monotonic() - started < 3
    assert result.reason == f"binary timed out after 0.5s: {tool}"
    assert_gone([int(pid_file.read_text())], within=1.0)


def test_a_marker_can_require_text_in_its_file(tmp_path: Path) -> None:
    """`NAME:TEXT`: a linter runs where the project configures it, not wherever a
    pyproject.toml exists; a FIFO or a folder under that name is no marker and never blocks."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 90\n")
    (tmp_path / "c").mkdir()
    os.mkfifo(tmp_path / "c" / "pyproject.toml")
    (tmp_path / "d" / "pyproject.toml").mkdir(parents=True)
    marker = ["pyproject.toml:[tool.ruff"]
    assert find_marker(tmp_path / "a", tmp_path, marker) is None
    assert find_marker(tmp_path / "b", tmp_path, marker) == tmp_path / "b"
    assert find_marker(tmp_path / "c", tmp_path, marker) is None
    assert find_marker(tmp_path / "d", tmp_path, marker) is None
