"""The CLI faces as a harness or a script sees them: schemas per surface, exit codes, JSON lines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import plugin_env

READ_TOOLS = {"echo", "picture", "unlock"}


def livetools(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """The CLI with only the testkit plugin (and the faces' own write/edit) loaded."""
    env.setdefault("LIVETOOLS_PLUGINS", "testkit")
    return subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", *args],
        input=stdin,
        env=plugin_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def tools(*args: str, **env: str) -> list[dict]:
    out = livetools("tools", "--format", "json", *args, **env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_plan_lists_only_read_tools_and_agent_lists_all(tmp_path):
    plan = tools("--surface", "plan", "--root", str(tmp_path))
    assert {t["name"] for t in plan} == READ_TOOLS
    assert {t["tier"] for t in plan} == {"read"}
    agent = tools("--surface", "agent", "--root", str(tmp_path))
    assert {t["tier"] for t in agent} == {"read", "write", "exec"}
    assert set(agent[0]) == {"name", "tier", "description", "parameters"}


def test_inherited_ceiling_cannot_be_lifted(tmp_path):
    capped = tools("--surface", "agent", "--root", str(tmp_path), LIVETOOLS_SURFACE="plan")
    assert {t["name"] for t in capped} == READ_TOOLS
    custom = tools("--surface", "read,exec", "--root", str(tmp_path))
    assert "nap" in {t["name"] for t in custom} and "touch" not in {t["name"] for t in custom}


@pytest.mark.parametrize("fmt", ["mcp", "openai", "anthropic"])
def test_export_formats(tmp_path, fmt):
    out = livetools("tools", "--format", fmt, "--root", str(tmp_path))
    schemas = {(s.get("name") or s["function"]["name"]): s for s in json.loads(out.stdout)}
    echo = schemas["echo"]
    if fmt == "mcp":
        assert echo["annotations"] == {
            "readOnlyHint": True,
            "destructiveHint": False,
            "openWorldHint": False,
        }
        assert echo["_meta"] == {"livetools/tier": "read"}
        assert schemas["touch"]["annotations"]["readOnlyHint"] is False
        assert echo["inputSchema"]["required"] == ["text"]
    elif fmt == "openai":
        assert echo["type"] == "function" and "parameters" in echo["function"]
    else:
        assert "input_schema" in echo


def test_write_tool_on_plan_exits_2_and_writes_nothing(tmp_path):
    out = livetools(
        "call",
        "touch",
        '{"path": "x.txt", "content": "hi"}',
        "--surface",
        "plan",
        "--root",
        str(tmp_path),
    )
    assert out.returncode == 2
    assert 'unknown tool "touch" on surface "plan"' in out.stdout
    assert list(tmp_path.iterdir()) == []


def test_call_exit_codes_and_json(tmp_path):
    ok = livetools("call", "picture", "--json", "--root", str(tmp_path))
    assert ok.returncode == 0
    payload = json.loads(ok.stdout)
    assert payload["ok"] and payload["data"] == {"width": 2, "height": 2}
    assert payload["images"][0]["mime"] == "image/png"
    failed = livetools("call", "touch", '{"path": "../escape.txt"}', "--root", str(tmp_path))
    assert failed.returncode == 1 and "outside the project root" in failed.stdout
    assert livetools("call", "nope", "--root", str(tmp_path)).returncode == 2
    assert livetools("call", "echo", '{"text": 1}', "--root", str(tmp_path)).returncode == 2
    bad_json = livetools("call", "echo", "{text", "--root", str(tmp_path))
    assert bad_json.returncode == 2 and "not valid JSON" in bad_json.stderr
    assert livetools("call", "echo", "{}", "--surface", "god").returncode == 2


def test_session_json_lines_with_write_and_edit(tmp_path):
    lines = [
        {"tool": "write", "args": {"path": "pkg/a.py", "content": "x = 1\ny = 2\n"}, "id": 1},
        {"tool": "edit", "args": {"path": "pkg/a.py", "old": "y = 2", "new": "y = 3"}},
        {"tool": "edit", "args": {"path": "pkg/a.py", "old": "nothing", "new": "z"}},
        "not json at all",
        {"tool": "echo", "args": {"text": "still alive"}},
    ]
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    out = livetools("session", "--root", str(tmp_path), stdin=text)
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(replies) == 5
    assert replies[0]["ok"] and replies[0]["id"] == 1 and "created pkg/a.py" in replies[0]["text"]
    assert replies[1]["ok"] and "edited pkg/a.py" in replies[1]["text"]
    assert not replies[2]["ok"] and "not found" in replies[2]["text"]
    assert not replies[3]["ok"] and "bad input line" in replies[3]["text"]
    assert replies[4] == {
        "ok": True,
        "text": "still alive",
        "data": {"echo": "still alive"},
        "images": [],
    }
    assert (tmp_path / "pkg" / "a.py").read_text() == "x = 1\ny = 3\n"


def test_session_on_plan_has_no_write(tmp_path):
    line = json.dumps({"tool": "write", "args": {"path": "a.py", "content": "x"}}) + "\n"
    out = livetools("session", "--surface", "plan", "--root", str(tmp_path), stdin=line)
    reply = json.loads(out.stdout)
    assert not reply["ok"] and 'unknown tool "write"' in reply["text"]
    assert not (tmp_path / "a.py").exists()


def test_status_text(tmp_path):
    out = livetools("status", "--root", str(tmp_path))
    assert out.returncode == 0
    assert "testkit" in out.stdout and "kit: " in out.stdout


def test_surface_specs_with_exclusions_round_trip(tmp_path):
    from livetools import AGENT, PLAN, Surface
    from livetools.tiers import parse_surface

    custom = Surface("x", AGENT.tiers, frozenset({"nap", "ask_user"}))
    assert custom.spec() == "read,write,exec,-ask_user,-nap"
    again = parse_surface(custom.spec())
    assert (again.tiers, again.exclude) == (custom.tiers, custom.exclude)
    assert parse_surface("plan") is PLAN
    with pytest.raises(ValueError, match="unknown surface or tier 'god'"):
        parse_surface("read,god")
    hidden = tools("--surface", "agent,-touch", "--root", str(tmp_path))
    assert "touch" not in {t["name"] for t in hidden} and "nap" in {t["name"] for t in hidden}
    capped = tools(
        "--surface", "agent", "--root", str(tmp_path), LIVETOOLS_SURFACE="read,exec,-nap"
    )
    assert {t["name"] for t in capped} == READ_TOOLS | {"stubborn"}
