"""Plugin loading: entry points, blocking, allow-lists, failures that leave the host up."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from livetools import Host
from tests.support import TESTS, plugin_env

BAD = TESTS / "fixtures" / "bad_plugins"


@pytest.fixture
def bad_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BAD))


def test_entry_points_load_builtin_families_and_testkit() -> None:
    names = {p.name for p in Host().plugins.loaded}
    assert {"lsp", "astgrep", "debug", "eval", "ask", "vibe", "testkit"} <= names


def test_failed_import_and_misspelled_hook_are_reported(bad_plugins: None) -> None:
    host = Host()
    failures = {f.name: f.error for f in host.plugins.failures}
    assert "ModuleNotFoundError" in failures["broken"]
    assert "a_module_that_does_not_exist" in failures["broken"]
    assert "unknown hook 'livetools_register_tool'" in failures["typo"]
    assert "livetools_register_tools" in failures["typo"]
    loaded = {p.name for p in host.plugins.loaded}
    assert "testkit" in loaded and "broken" not in loaded and "typo" not in loaded


def test_disable_and_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVETOOLS_DISABLE_PLUGINS", "testkit, lsp")
    host = Host()
    names = {p.name for p in host.plugins.loaded}
    assert "testkit" not in names and "lsp" not in names and "debug" in names
    assert {"testkit", "lsp"} <= set(host.plugins.blocked)
    monkeypatch.delenv("LIVETOOLS_DISABLE_PLUGINS")
    monkeypatch.setenv("LIVETOOLS_PLUGINS", "testkit")
    assert [p.name for p in Host().plugins.loaded] == ["testkit"]
    monkeypatch.setenv("LIVETOOLS_PLUGINS", "")
    assert Host().plugins.loaded == []


def test_blocked_plugin_is_not_even_imported(monkeypatch: pytest.MonkeyPatch, bad_plugins: None):
    monkeypatch.setenv("LIVETOOLS_DISABLE_PLUGINS", "broken")
    host = Host()
    assert "broken" not in {f.name for f in host.plugins.failures}


def test_status_shows_failures(tmp_path) -> None:
    env = plugin_env(PYTHONPATH=f"{BAD}:{plugin_env()['PYTHONPATH']}")
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "status", "--json", "--root", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert "broken" in failed and "typo" in failed
    tools = {p["name"]: p["tools"] for p in report["plugins"]}
    assert "echo" in tools["testkit"]


def test_entry_point_scan_agrees_with_importlib_metadata() -> None:
    from importlib import metadata

    from livetools.hooks.entrypoints import entry_points

    ours = {(e.name, e.value) for e in entry_points("livetools")}
    theirs = {(e.name, e.value) for e in metadata.entry_points(group="livetools")}
    assert ours == theirs
    console = {e.name for e in entry_points("console_scripts")}
    assert "livetools" in console


def test_entry_point_scan_first_distribution_wins_and_attrs_load(tmp_path) -> None:
    from livetools.hooks.entrypoints import entry_points

    first, second = tmp_path / "a", tmp_path / "b"
    for base, target in ((first, "json:dumps"), (second, "json:loads")):
        dist = base / "Some.Plugin-1.2.dist-info"
        dist.mkdir(parents=True)
        (dist / "entry_points.txt").write_text(
            f"# comment\n[other]\nx = os\n\n[livetools]\nsome = {target}\n"
        )
    (first / "broken.egg-info").mkdir()  # no entry_points.txt: skipped
    found = entry_points("livetools", [str(tmp_path / "missing"), str(first), str(second)])
    assert [(e.name, e.distribution, e.version) for e in found] == [("some", "some-plugin", "1.2")]
    assert found[0].load() is json.dumps
