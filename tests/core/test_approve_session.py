"""`--approve` on the CLI faces with real prompts: the terminal card answered on a real
pseudo-terminal (allow, deny, always, a bad reply asked again), and JSON-lines `approval` events
in `session` (only an approval answer decides; expiry and end of input refuse). On deny nothing
runs: no kernel process is started and no file is touched."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.support import plugin_env

WAIT = 60


def children(pid: int) -> list[int]:
    """The live child processes of `pid`, read from /proc."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "livetools.faces.cli", *args]


def session(
    lines: list[object], *args: str, plugins: str = "testkit", **env: str
) -> list[dict[str, Any]]:
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    out = subprocess.run(
        cli("session", *args),
        input=text,
        env=plugin_env(LIVETOOLS_PLUGINS=plugins, **env),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def touch(path: str, rid: object = None) -> dict[str, Any]:
    line: dict[str, Any] = {"tool": "touch", "args": {"path": path, "content": "x"}}
    if rid is not None:
        line["id"] = rid
    return line


# -- JSON lines ---------------------------------------------------------------------------------


def test_session_approval_events_allow_deny_always(tmp_path: Path) -> None:
    replies = session(
        [
            touch("a.txt", "a"),
            {"approve": True},
            touch("b.txt", "b"),
            {"approve": False},
            touch("c.txt", "c"),
            {"always": True},
            touch("d.txt", "d"),
            {"tool": "echo", "args": {"text": "read tools are never gated"}, "id": "e"},
            {"status": True, "id": "s"},
        ],
        "--root",
        str(tmp_path),
        "--approve",
        "ask",
    )
    events = [r for r in replies if "event" in r]
    results = {r["id"]: r for r in replies if "id" in r}
    assert [e["event"] for e in events] == ["approval"] * 3
    first = events[0]
    assert first["number"] == 1 and first["tool"] == "touch" and first["tier"] == "write"
    assert "path: a.txt" in first["summary"]
    assert first["card"].startswith("Approval #1: allow touch (write)?")
    assert first["expires_in"] == 600
    assert results["a"]["ok"] and results["c"]["ok"] and results["d"]["ok"]
    refused = results["b"]
    assert not refused["ok"] and refused["data"]["refused"] and refused["data"]["number"] == 2
    assert "the operator declined touch (approval #2)" in refused["text"]
    assert results["e"]["text"] == "read tools are never gated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "c.txt", "d.txt"]
    # The live run's status shows what "always" remembered (never across runs).
    status = results["s"]
    assert status["ok"] and status["data"]["approval"]["always"] == ["touch"], status
    assert status["data"]["approval"]["refused"] == 1
    assert "allowed for the rest of this run: touch" in status["text"]


def test_session_only_an_approval_answer_decides(tmp_path: Path) -> None:
    replies = session(
        [
            touch("a.txt", "a"),
            {},
            "not json",
            {"choices": ["Allow"]},  # a question's answer, not an approval's
            {"approve": "yes"},
            touch("b.txt", "t"),
            {"always": False},
            {"approve": True},
        ],
        "--root",
        str(tmp_path),
        "--approve",
        "ask",
    )
    event, *errors, result = replies
    assert event["event"] == "approval"
    assert [e["event"] for e in errors] == ["approval_error"] * 6
    assert all(e["number"] == 1 for e in errors)
    assert "expected" in errors[0]["text"] and "id" not in errors[0]
    assert '"approve" must be true or false' in errors[3]["text"]
    assert "tool line was refused (not run)" in errors[4]["text"] and errors[4]["id"] == "t"
    assert result["id"] == "a" and result["ok"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # b.txt never ran


def test_session_end_of_input_mid_approval_refuses(tmp_path: Path) -> None:
    replies = session([touch("a.txt", "a")], "--root", str(tmp_path), "--approve", "ask")
    assert replies[0]["event"] == "approval"
    assert not replies[1]["ok"] and replies[1]["data"]["reason"] == "detached"
    assert "the human detached (input ended)" in replies[1]["text"]
    assert not (tmp_path / "a.txt").exists()


def test_session_approval_expiry_refuses_with_an_event(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        cli("session", "--root", str(tmp_path), "--approve", "ask"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit", LIVETOOLS_ASK_EXPIRY="0.5"),
        text=True,
    )
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(json.dumps(touch("a.txt", "a")) + "\n")
        proc.stdin.flush()
        lines = [json.loads(proc.stdout.readline()) for _ in range(3)]
        # A late answer is no approval: nothing is open any more.
        proc.stdin.write(json.dumps({"approve": True}) + "\n")
        proc.stdin.close()
        late = json.loads(proc.stdout.readline())
        assert proc.wait(WAIT) == 0
    finally:
        proc.kill()
    assert [x.get("event") for x in lines[:2]] == ["approval", "approval_expired"]
    assert lines[2]["data"]["reason"] == "expired" and "expired after 0.5s" in lines[2]["text"]
    assert not late["ok"] and "bad input line" in late["text"]
    assert not (tmp_path / "a.txt").exists()


def test_session_deny_policy_and_ask_without_a_human(tmp_path: Path) -> None:
    denied = session([touch("a.txt")], "--root", str(tmp_path), "--approve", "deny")
    assert denied[0]["data"]["reason"] == "policy" and "approve=deny" in denied[0]["text"]
    # A worker has no human: ask refuses rather than waiting for nobody.
    worker = session(
        [touch("a.txt")],
        "--root",
        str(tmp_path),
        "--approve",
        "ask",
        LIVETOOLS_WORKER="1",
        LIVETOOLS_SURFACE="agent",
    )
    assert worker[0]["data"]["reason"] == "no_human"
    out = subprocess.run(
        cli("call", "touch", json.dumps({"path": "a.txt"}), "--approve", "ask", "--json"),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit"),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert out.returncode == 1 and json.loads(out.stdout)["data"]["reason"] == "no_human"
    assert not (tmp_path / "a.txt").exists()


def test_session_deny_starts_no_kernel(tmp_path: Path) -> None:
    """A declined eval starts no kernel (the session has no child process) and its cell, which
    would write a file, never runs."""
    pytest.importorskip("ipykernel", reason="install the eval extra (ipykernel)")
    proc = subprocess.Popen(
        cli("session", "--root", str(tmp_path), "--approve", "ask"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=plugin_env(LIVETOOLS_PLUGINS="eval"),
        text=True,
    )
    assert proc.stdin and proc.stdout
    cell = {
        "code": "open('ran.txt', 'w').write('x')\n6 * 7",
        "description": "write a marker file to prove it ran",
    }
    try:
        proc.stdin.write(json.dumps({"tool": "eval", "args": cell, "id": 1}) + "\n")
        proc.stdin.flush()
        event = json.loads(proc.stdout.readline())
        assert event["event"] == "approval" and event["tool"] == "eval"
        assert event["summary"].splitlines()[:3] == [
            "eval",
            "write a marker file to prove it ran",
            "code:",
        ]
        assert "  open('ran.txt', 'w').write('x')" in event["summary"]
        proc.stdin.write(json.dumps({"approve": False}) + "\n")
        proc.stdin.flush()
        result = json.loads(proc.stdout.readline())
        assert result["data"]["reason"] == "declined" and "nothing was run" in result["text"]
        assert children(proc.pid) == []  # no kernel, no kernel launcher
        assert not (tmp_path / "ran.txt").exists()
        # The same session allows the next cell: it really runs (so the deny above was real).
        proc.stdin.write(json.dumps({"tool": "eval", "args": cell, "id": 2}) + "\n")
        proc.stdin.write(json.dumps({"approve": True}) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["event"] == "approval"
        ran = json.loads(proc.stdout.readline())
        assert ran["ok"] and "42" in ran["text"], ran
        assert (tmp_path / "ran.txt").exists()
        proc.stdin.close()
        assert proc.wait(WAIT) == 0
    finally:
        proc.kill()


# -- the terminal card on a real pty ------------------------------------------------------------


@contextmanager
def on_a_pty(args: list[str], root: Path) -> Iterator[pexpect.spawn]:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "livetools.faces.cli", *args, "--root", str(root), "--approve", "ask"],
        env=plugin_env(LIVETOOLS_PLUGINS="testkit"),
        encoding="utf-8",
        timeout=WAIT,
    )
    try:
        yield child
        child.expect(pexpect.EOF)
    finally:
        child.close()


def call_touch(path: str) -> list[str]:
    return ["call", "touch", json.dumps({"path": path, "content": "hi"})]


def test_terminal_allow_after_a_bad_reply(tmp_path: Path) -> None:
    with on_a_pty(call_touch("a.txt"), tmp_path) as child:
        child.expect("Approval #1: allow touch \\(write\\)\\?")
        child.expect("path: a.txt")
        child.expect("Reply y to allow, n to deny, or a to allow touch for the rest of this run.")
        child.expect("> ")
        child.sendline("maybe")
        child.expect("'maybe' is not y, n or a")
        child.expect("> ")
        child.sendline("")
        child.expect("an empty reply decides nothing")
        child.expect("> ")
        child.sendline("y")
        child.expect("wrote a.txt")
    assert child.exitstatus == 0
    assert (tmp_path / "a.txt").read_text() == "hi"


def test_terminal_deny(tmp_path: Path) -> None:
    with on_a_pty(call_touch("a.txt"), tmp_path) as child:
        child.expect("> ")
        child.sendline("n")
        child.expect("the operator declined touch \\(approval #1\\)")
    assert child.exitstatus == 1
    assert not (tmp_path / "a.txt").exists()


def test_terminal_always_for_the_rest_of_the_session(tmp_path: Path) -> None:
    """`session` on a terminal: the card goes to the terminal; `a` allows touch for the rest of
    this run, so the second touch is not asked about."""
    seen = io.StringIO()
    with on_a_pty(["session"], tmp_path) as child:
        child.logfile_read = seen
        child.sendline(json.dumps(touch("a.txt", 1)))
        child.expect("Approval #1: allow touch")
        child.expect("> ")
        child.sendline("a")
        child.expect('"id": 1')
        child.sendline(json.dumps(touch("b.txt", 2)))
        child.expect('"id": 2')
        child.sendeof()
    assert child.exitstatus == 0
    assert "Approval #1" in seen.getvalue() and "Approval #2" not in seen.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_terminal_closed_mid_card_refuses(tmp_path: Path) -> None:
    with on_a_pty(call_touch("a.txt"), tmp_path) as child:
        child.expect("> ")
        child.sendeof()
        child.expect("the human detached \\(the terminal closed\\)")
    assert child.exitstatus == 1
    assert not (tmp_path / "a.txt").exists()


def test_terminal_expiry_refuses_and_says_so(tmp_path: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        [*cli(*call_touch("a.txt"))[1:], "--root", str(tmp_path), "--approve", "ask"],
        env=plugin_env(LIVETOOLS_PLUGINS="testkit", LIVETOOLS_ASK_EXPIRY="0.5"),
        encoding="utf-8",
        timeout=WAIT,
    )
    try:
        child.expect("Approval #1")
        child.expect("approval #1 expired: touch was refused")
        child.expect("approval #1 for touch expired after 0.5s")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 1
    assert not (tmp_path / "a.txt").exists()
