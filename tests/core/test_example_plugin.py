"""The third-party plugin of docs/writing-a-plugin.md, installed the way pip would make it visible
(a dist-info with its entry points on the path) and driven through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support import REPO

EXAMPLE = REPO / "docs" / "example-plugin"


def install(site: Path, source: Path) -> dict[str, str]:
    """Make `source` importable and its entry points discoverable from `site`."""
    project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
    dist = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    groups = project["entry-points"]
    (dist / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
            for group, eps in groups.items()
        )
    )
    return {"PYTHONPATH": f"{site}:{source}"}


def livetools(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1  # TODO: name this\n# FIXME broken\n")
    return root


def test_discovered_through_its_entry_point_and_called(tmp_path, checkout):
    env = install(tmp_path / "site", EXAMPLE)
    listed = json.loads(livetools(env, "tools", "--format", "json", "--root", str(checkout)).stdout)
    todos = next(t for t in listed if t["name"] == "todos")
    assert todos["tier"] == "read"
    out = livetools(env, "call", "todos", '{"path": "src"}', "--root", str(checkout), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    payload = json.loads(out.stdout)
    assert payload["text"].splitlines() == [
        "src/app.py:1: TODO name this",
        "src/app.py:2: FIXME broken",
    ]
    outside = livetools(env, "call", "todos", '{"path": "../.."}', "--root", str(checkout))
    assert outside.returncode == 1 and "outside the project root" in outside.stdout


def test_no_resource_no_tool(tmp_path):
    env = install(tmp_path / "site", EXAMPLE)
    plain = tmp_path / "not-a-checkout"
    plain.mkdir()
    listed = json.loads(livetools(env, "tools", "--format", "json", "--root", str(plain)).stdout)
    assert "todos" not in {t["name"] for t in listed}
    out = livetools(env, "call", "todos", "--root", str(plain))
    assert out.returncode == 2 and 'unknown tool "todos"' in out.stdout


def test_write_observer_adds_a_note(tmp_path, checkout):
    env = install(tmp_path / "site", EXAMPLE)
    line = json.dumps({"tool": "write", "args": {"path": "b.py", "content": "# TODO one\n"}})
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "session", "--root", str(checkout)],
        input=line + "\n",
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "todos: this write added 1 TODO(s) to b.py" in json.loads(out.stdout)["text"]


def test_misspelled_hook_is_reported(tmp_path, checkout):
    source = tmp_path / "typo-src"
    shutil.copytree(EXAMPLE, source)
    module = source / "livetools_todos" / "__init__.py"
    module.write_text(
        module.read_text().replace("def livetools_resources", "def livetools_resource")
    )
    env = install(tmp_path / "site", source)
    report = json.loads(livetools(env, "status", "--json", "--root", str(checkout)).stdout)
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert "unknown hook 'livetools_resource'" in failed["todos"]
    assert "todos" not in {p["name"] for p in report["plugins"]}
