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


# -- hostile input: every line gets one answer, nothing kills a face ---------------------------


def test_session_survives_hostile_lines(tmp_path):
    """A lone surrogate echoed back, a 100k-deep array, garbage bytes, non-objects: each line
    gets exactly one reply, the output is valid UTF-8, and the session goes on."""
    lines = [
        '{"tool": "echo", "args": {"text": "\\ud800 lone"}, "id": 1}',
        "[" * 100_000,
        "\udcff\udcfe not utf-8",  # written as raw bytes below
        "42",
        '{"tool": "echo", "args": [1], "id": 2}',
        '{"tool": 7}',
        '{"tool": "echo", "args": {"text": "' + "[" * 500 + '"}, "id": "\\udfff"}',
        '{"tool": "echo", "args": {"text": "nul\\u0000"}, "id": 3}',
        '{"tool": "echo", "args": {"text": "end"}, "id": 4}',
    ]
    data = b"".join(line.encode("utf-8", "surrogateescape") + b"\n" for line in lines)
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "session", "--root", str(tmp_path)],
        input=data,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit"),
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.decode("utf-8").splitlines()]
    assert len(replies) == len(lines), replies
    assert replies[0] == {
        "ok": True,
        "text": "\ufffd lone",
        "data": {"echo": "\ufffd lone"},
        "images": [],
        "id": 1,
    }
    assert "nested too deeply" in replies[1]["text"]
    assert all(not r["ok"] for r in replies[1:6])
    assert replies[4]["id"] == 2 and '"args" must be an object' in replies[4]["text"]
    assert replies[6]["ok"] and replies[6]["id"] == "\ufffd"
    assert replies[7]["text"] == "nul\u0000" and replies[8]["text"] == "end"


def test_call_json_with_lone_surrogate_and_deep_args(tmp_path):
    out = livetools("call", "echo", '{"text": "\\ud800"}', "--json", "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["text"] == "\ufffd"
    plain = livetools("call", "echo", '{"text": "\\ud800"}', "--root", str(tmp_path))
    assert plain.returncode == 0 and plain.stdout == "\ufffd\n"
    deep = livetools("call", "echo", "[" * 100_000, "--root", str(tmp_path))
    assert deep.returncode == 2 and "nested too deeply" in deep.stderr
    assert "Traceback" not in deep.stderr


def test_closed_pipe_exits_quietly(tmp_path):
    """`livetools tools | head -c 1`: no traceback, no 'Exception ignored' on stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "livetools.faces.cli", "tools", "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit"),
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read()
    rc = proc.wait(timeout=60)
    assert rc == 141 and err == b"", err


# -- worker ceiling ------------------------------------------------------------------------------


@pytest.mark.parametrize("surface", [None, "", "  "])
def test_worker_without_a_ceiling_is_readonly(tmp_path, surface):
    env = {"LIVETOOLS_WORKER": "1"}
    if surface is not None:
        env["LIVETOOLS_SURFACE"] = surface
    names = {t["name"] for t in tools("--surface", "agent", "--root", str(tmp_path), **env)}
    assert names == READ_TOOLS


def test_bogus_ceiling_warns_and_is_readonly(tmp_path):
    out = livetools("tools", "--root", str(tmp_path), LIVETOOLS_SURFACE="agnet")
    assert out.returncode == 0
    assert "LIVETOOLS_SURFACE" in out.stderr and "'agnet'" in out.stderr
    assert "using readonly" in out.stderr
    assert {line.split()[0] for line in out.stdout.splitlines()} == READ_TOOLS


# -- the CLI explains itself --------------------------------------------------------------------


def test_status_is_one_line_per_family_with_reasons(tmp_path):
    out = livetools("status", "--root", str(tmp_path), LIVETOOLS_PLUGINS="testkit,ask,vibe")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert all(len(line) < 200 for line in lines), lines
    assert any(line.startswith("ask: no tools: no human attached") for line in lines)
    assert "vibe: no tools: vibe mode is off (run with --vibe)" in lines
    report = json.loads(
        livetools("status", "--json", "--root", str(tmp_path), LIVETOOLS_PLUGINS="ask").stdout
    )
    (ask,) = report["plugins"]
    assert ask["tools"] == [] and "no human attached" in ask["reason"]


def test_tools_serve_lists_what_serve_offers(tmp_path):
    offered = livetools(
        "tools", "--serve", "--format", "json", "--root", str(tmp_path), LIVETOOLS_PLUGINS="ask"
    )
    assert {t["name"] for t in json.loads(offered.stdout)} == {"write", "edit", "ask_user"}
    plain = livetools("tools", "--format", "json", "--root", str(tmp_path), LIVETOOLS_PLUGINS="ask")
    assert json.loads(plain.stdout) == []


def test_run_options_on_the_command_line(tmp_path):
    from livetools.faces.cli import UsageError, parse_options

    assert parse_options(["debug_ttl=60", "lsp.request_timeout=5", 'lsp.prefer=["pylsp"]']) == {
        "debug_ttl": 60,
        "lsp": {"request_timeout": 5, "prefer": ["pylsp"]},
    }
    assert parse_options(["name=plain text", "eval=false"]) == {"name": "plain text", "eval": False}
    with pytest.raises(UsageError, match="expected key=value"):
        parse_options(["debug_ttl"])
    # The option reaches the run: a call timeout of 0.2 s stops the testkit's nap.
    out = livetools(
        "call",
        "nap",
        '{"seconds": 5}',
        "--option",
        "call_timeouts.nap=0.2",
        "--root",
        str(tmp_path),
    )
    assert out.returncode == 1 and "timed out after 0.2s" in out.stdout
    bad = livetools("call", "echo", "--option", "oops", "--root", str(tmp_path))
    assert bad.returncode == 2 and "--option 'oops'" in bad.stderr


@pytest.mark.parametrize("command", ["status", "tools", "call", "session", "serve"])
def test_help_is_complete(command):
    out = livetools(command, "--help")
    assert out.returncode == 0
    text = out.stdout
    assert "exit codes:" in text and "2  usage error" in text and "--option" in text
    if command == "call":
        assert "ARGS_JSON is one JSON object" in text and '"ok": bool' in text
    if command == "session":
        assert '{"tool": NAME, "args": {...}, "id": ANY}' in text
        assert "question_error" in text and "refused, not queued" in text
    if command == "serve":
        assert "-32700" in text and "livetools/data" in text


async def test_tools_serve_reproduces_the_budget_figure(tmp_path, monkeypatch):
    """`livetools tools --serve --vibe --format mcp` prints exactly the tool set whose size the
    README quotes and test_schema_budget bounds: every family, vibe on, a human, write/edit."""
    from livetools import Host, Ports
    from livetools.faces import harness
    from tests.core.test_schema_budget import FAMILIES, no_answer

    env = {"LIVETOOLS_PLUGINS": FAMILIES}
    out = livetools("tools", "--serve", "--vibe", "--format", "mcp", "--root", str(tmp_path), **env)
    assert out.returncode == 0, out.stderr
    monkeypatch.setenv("LIVETOOLS_PLUGINS", FAMILIES)
    host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    ports = Ports(question=no_answer, target_space="test")
    async with host.open_run(tmp_path, ports=ports, options={"vibe": True}) as run:
        expected = run.schemas("agent", format="mcp")
    assert json.loads(out.stdout) == expected
    assert len(out.stdout.strip()) == len(json.dumps(expected, separators=(",", ":")))
