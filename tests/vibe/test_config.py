"""Where the worker command comes from, vibe mode gating in the API and the CLI, and the schema
budget of the five tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from livetools import Host
from livetools.schemas import export
from livetools_vibe.config import load
from livetools_vibe.tools import make_tools
from tests.vibe.conftest import WORKER_ARGV, host, ok

VIBE_TOOLS = ["vibe_spawn", "vibe_send", "vibe_wait", "vibe_kill", "vibe_list"]
SCHEMA_BUDGET = 1536  # bytes of compact MCP JSON for the five tools


def write_pyproject(root, body: str) -> None:
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[tool.livetools.vibe]\n{body}')


def test_sources_merge_key_by_key_later_ones_winning(tmp_path):
    write_pyproject(
        tmp_path,
        'command = ["agent", "-p"]\nmax_workers = 3\ntimeout = 60\n'
        '[tool.livetools.vibe.readonly]\nfast = "agent -p --read-only"\n',
    )
    (tmp_path / ".livetools.toml").write_text('[vibe]\ngood = ["agent", "--deep"]\n')
    env = {"LIVETOOLS_VIBE_FAST": "agent --model 'small one'", "LIVETOOLS_VIBE_TIMEOUT": "90"}
    config = load(tmp_path, {"vibe_config": {"max_workers": 5}}, env)
    assert config.templates == {
        "fast": ["agent", "--model", "small one"],
        "good": ["agent", "--deep"],
    }
    assert config.readonly == {"fast": ["agent", "-p", "--read-only"]}
    assert (config.max_workers, config.timeout) == (5, 90.0)
    assert config.sources == [
        "pyproject.toml [tool.livetools.vibe]",
        ".livetools.toml [vibe]",
        "environment",
        "run option vibe_config",
    ]
    assert config.problems == []
    json_env = load(tmp_path, {}, {"LIVETOOLS_VIBE_COMMAND": '["a b", "c"]'})
    assert json_env.templates["good"] == ["a b", "c"]


def test_bad_values_are_reported_and_ignored(tmp_path):
    write_pyproject(tmp_path, 'fast = []\nmax_workers = 0\ntimeout = "soon"\nmodel = "x"\n')
    config = load(tmp_path, {}, {"LIVETOOLS_VIBE_GOOD": "agent 'unclosed"})
    assert config.templates == {} and config.max_workers == 2 and config.timeout == 1800
    problems = "\n".join(config.problems)
    assert "fast: expected a non-empty list of strings" in problems
    assert "max_workers: expected a whole number 1..64, got 0" in problems
    assert "timeout: expected seconds > 0, got 'soon'" in problems
    assert "unknown key(s) model" in problems
    assert "LIVETOOLS_VIBE_GOOD: not a JSON array nor shell words" in problems
    (tmp_path / ".livetools.toml").write_text("[vibe\n")
    assert "cannot read" in load(tmp_path, {}, {}).problems[-1]


async def test_the_project_file_configures_the_command(tmp_path):
    args = ", ".join(json.dumps(a) for a in WORKER_ARGV)
    write_pyproject(tmp_path, f"command = [{args}]\nmax_workers = 1\n")
    async with host().open_run(tmp_path, options={"vibe": True}) as run:
        await ok(run, "vibe_spawn", {"brief": "say from the file", "label": "f"})
        done = await ok(run, "vibe_wait", {"worker_id": "w1", "timeout_seconds": 30})
        assert done.data["result"] == "from the file"
        status = await run.resource("vibe").status()
        assert status["usable"] and status["max_workers"] == 1
        assert status["config"] == ["pyproject.toml [tool.livetools.vibe]"]


async def test_nothing_configured_is_a_clear_error_and_a_status_reason(tmp_path):
    async with host().open_run(tmp_path, options={"vibe": True}) as run:
        refused = await run.call("vibe_spawn", {"brief": "b", "label": "l", "tier": "fast"})
        assert refused.is_error
        assert "no command for tier 'fast'" in refused.text
        assert "[tool.livetools.vibe]" in refused.text and "LIVETOOLS_VIBE_FAST" in refused.text
        status = await run.resource("vibe").status()
        assert status["usable"] is False and "no worker backend" in status["reason"]


async def test_no_vibe_tools_without_vibe_mode(tmp_path):
    # Any spelling of false is off (the options are checked and coerced when the run opens).
    for options in ({}, {"vibe": False}, {"vibe": "no"}, {"vibe": "False"}, {"vibe": 0}):
        async with Host().open_run(tmp_path, options=options) as run:
            assert not [t for t in run.tools() if t.name.startswith("vibe_")]
            assert run.resource("vibe") is None
            refused = await run.call("vibe_spawn", {"brief": "b", "label": "l"})
            assert refused.is_error and 'unknown tool "vibe_spawn"' in refused.text
    async with Host().open_run(tmp_path, options={"vibe": True}) as run:
        assert [t.name for t in run.tools("plan") if t.name.startswith("vibe_")] == VIBE_TOOLS
        assert {t.tier.value for t in run.tools() if t.name.startswith("vibe_")} == {"read"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", *args],
        env={**os.environ, "LIVETOOLS_PLUGINS": "vibe"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_lists_vibe_tools_only_with_vibe_and_within_the_schema_budget(tmp_path):
    plain = cli("tools", "--format", "json", "--root", str(tmp_path))
    assert plain.returncode == 0 and json.loads(plain.stdout) == []
    vibe = cli("tools", "--vibe", "--format", "mcp", "--surface", "plan", "--root", str(tmp_path))
    assert [t["name"] for t in json.loads(vibe.stdout)] == VIBE_TOOLS
    assert len(vibe.stdout.strip()) <= SCHEMA_BUDGET
    status = cli("status", "--vibe", "--json", "--root", str(tmp_path))
    report = json.loads(status.stdout)
    assert report["resources"]["vibe"]["usable"] is False
    assert [p["tools"] for p in report["plugins"] if p["name"] == "vibe"] == [VIBE_TOOLS]


def test_schema_budget():
    schema = json.dumps(export(make_tools(), "mcp"), separators=(",", ":"))
    assert len(schema) <= SCHEMA_BUDGET, len(schema)


def test_a_fifo_config_file_never_blocks_loading(tmp_path):
    """A FIFO named .livetools.toml is skipped (is_file is false) or refused, never opened."""
    os.mkfifo(tmp_path / ".livetools.toml")
    (tmp_path / "pyproject.toml").write_text("[tool.livetools.vibe]\nmax_workers = 2\n")
    config = load(tmp_path, {}, {})
    assert config.max_workers == 2
