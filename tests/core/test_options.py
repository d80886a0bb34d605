"""Run options are checked before anything starts, on every face alike (issue 29 §4).

The table runs over every option the installed families declare (so a new option is covered
without editing this file): a good value in its string spelling is accepted and coerced, a value
of the wrong type and a misspelled name are refused with one sentence. It runs in-process
through the entry points the faces call (`Host.check_options`, which `open_run` calls for
call/session/serve/the resident, and `Runs.options_for` for POST /runs); then each face is
driven for real with one good, one wrong-type and one unknown option: `call`, `session`,
`serve` over stdio, POST /runs on a `serve --http --runs-under` server, and a resident."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from livetools import Host
from livetools.faces.mcp.http.metrics import Metrics
from livetools.faces.mcp.http.runs import RunRefused, Runs
from livetools.options import (
    Check,
    Choice,
    Flag,
    Integer,
    Kind,
    Names,
    Number,
    OffOr,
    Option,
    OptionError,
    Settings,
    Table,
    Text,
)
from tests.core.http_serving import WAIT, Served, connect, serve_http, text_of
from tests.core.mcp_conn import INITIALIZE
from tests.support import plugin_env

ADMIN = "admin-token-for-the-options-test"
HOST = Host()  # every installed family plus the testkit (on the test path)
DECLARED = sorted(HOST.declared_options.options.values(), key=lambda o: o.name)

# Per option a good value as a face gives it (a string, as --option and the environment do)
# and what the run keeps, and a value of the wrong type. Keyed by name where a kind's generic
# sample does not fit the option.
SPECIAL: dict[str, tuple[Any, Any, Any]] = {
    "sandbox": ("none", "none", True),
    "eval_gateway_kernels": ({"python": "python3"}, {"python": "python3"}, 5),
    "debug.adapters": (
        {"x": {"command": ["x-dap"], "launch": {"program": "${program}"}}},
        {"x": {"command": ["x-dap"], "launch": {"program": "${program}"}}},
        {"x": {"command": "x-dap"}},
    ),
    "lsp.servers": (
        {"x": {"command": ["x-ls"], "extensions": [".x"]}},
        {"x": {"command": ["x-ls"], "extensions": [".x"]}},
        {"x": {"command": "x-ls"}},
    ),
}


def samples(kind: Kind) -> tuple[Any, Any, Any]:
    """(good as given, good as kept, wrong type) for a kind."""
    if isinstance(kind, Flag):
        return "No", False, "maybe"
    if isinstance(kind, Number):
        return "60", 60.0, "abc"
    if isinstance(kind, Integer):
        return "7", 7, "1.5"
    if isinstance(kind, Choice):
        return kind.choices[0].upper(), kind.choices[0], "sometimes"
    if isinstance(kind, Text):
        return "text", "text", 5
    if isinstance(kind, Names):
        return "a, b", ["a", "b"], 3
    if isinstance(kind, Table):
        good, kept, bad = samples(kind.of)
        return {"x": good}, {"x": kept}, {"x": bad}
    if isinstance(kind, Settings):
        return {"k": 1}, {"k": 1}, "x"
    if isinstance(kind, OffOr):
        return "False", False, 5
    raise AssertionError(f"no sample for {kind!r}: add one here (or to SPECIAL)")


def sample(option: Option) -> tuple[Any, Any, Any]:
    if option.name in SPECIAL:
        return SPECIAL[option.name]
    assert not isinstance(option.kind, Check), f"{option.name}: a Check needs a SPECIAL sample"
    return samples(option.kind)


def nested(name: str, value: Any) -> dict[str, Any]:
    """`lsp.request_timeout` = v as the run options hold it: {"lsp": {"request_timeout": v}}."""
    *parents, leaf = name.split(".")
    out: dict[str, Any] = {leaf: value}
    for parent in reversed(parents):
        out = {parent: out}
    return out


def typo(name: str) -> str:
    *parents, leaf = name.split(".")
    return ".".join([*parents, leaf[:-1] + ("x" if len(leaf) < 4 else "")])


def test_every_family_declares_options() -> None:
    families = {o.family for o in DECLARED}
    for family in ("core", "lsp", "astgrep", "debug", "eval", "ask", "vibe", "testkit"):
        assert family in families, f"{family} declares no run options"
    assert not HOST.declared_options.problems
    for option in DECLARED:
        assert option.doc, f"{option.name}: give it a one-line doc"


# -- the table, in-process -------------------------------------------------------------------


def via_open_run(options: dict[str, Any]) -> dict[str, Any]:
    """What call, session, serve (stdio) and the resident run: Host.open_run's check."""
    return HOST.check_options(options)


def via_post_runs(options: dict[str, Any]) -> dict[str, Any]:
    """What POST /runs runs: Runs.options_for, OptionError as a 400."""
    runs = Runs(HOST, Metrics(), runs_under=Path.cwd())
    try:
        return runs.options_for(options)
    except RunRefused as exc:
        assert exc.status == 400
        raise OptionError(str(exc)) from None


FACES = {"open_run": via_open_run, "post_runs": via_post_runs}


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("option", DECLARED, ids=lambda o: o.name)
def test_good_value_is_kept_coerced(option: Option, face: str) -> None:
    good, kept, _bad = sample(option)
    out = FACES[face](nested(option.name, good))
    value: Any = out
    for part in option.name.split("."):
        value = value[part]
    assert value == kept


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("option", DECLARED, ids=lambda o: o.name)
def test_wrong_type_is_refused_naming_the_option_and_the_expected_type(
    option: Option, face: str
) -> None:
    _good, _kept, bad = sample(option)
    with pytest.raises(OptionError) as refused:
        FACES[face](nested(option.name, bad))
    text = str(refused.value)
    assert text.startswith(f"option {option.name}"), text
    assert "expected" in text and "got" in text and "\n" not in text


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("option", DECLARED, ids=lambda o: o.name)
def test_unknown_name_is_refused_with_the_nearest_known_one(option: Option, face: str) -> None:
    wrong = typo(option.name)
    with pytest.raises(OptionError) as refused:
        FACES[face](nested(wrong, "1"))
    text = str(refused.value)
    assert text.startswith(f"unknown option {wrong}"), text
    assert f"did you mean {option.name}?" in text


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        ({"eval": "False"}, {"eval": False}),
        ({"eval": "0"}, {"eval": False}),
        ({"eval": 0}, {"eval": False}),
        ({"eval": "YES"}, {"eval": True}),
        ({"lsp": "false"}, {"lsp": False}),
        ({"lsp": {"diagnostics_on_write": "no"}}, {"lsp": {"diagnostics_on_write": False}}),
        ({"call_timeouts": {"ast_grep": "2.5"}}, {"call_timeouts": {"ast_grep": 2.5}}),
        ({"approve": " Deny "}, {"approve": "deny"}),
    ],
)
def test_spellings_every_face_accepts(options: dict[str, Any], kept: dict[str, Any]) -> None:
    assert via_open_run(options) == kept


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"eval": 2}, "option eval: expected true or false, got 2"),
        ({"call_timeouts": {"ast_grep": -1}}, "option call_timeouts.ast_grep: expected a number"),
        ({"call_timeouts": {"ast_grep": "nan"}}, "option call_timeouts.ast_grep: expected"),
        ({"lsp": {"request_timeout": "abc"}}, "option lsp.request_timeout: expected a number"),
        ({"lsp": 5}, "option lsp: expected true or false, got 5"),
        ({"astgrep": 5}, "option astgrep: expected a table of cache_bytes, inline_bytes"),
        ({"zzz_unheard_of": 1}, "unknown option zzz_unheard_of; known: approve"),
    ],
)
def test_refusals_say_what_was_expected(options: dict[str, Any], words: str) -> None:
    with pytest.raises(OptionError, match="^" + words.replace("(", r"\(")):
        via_open_run(options)


def test_every_bad_option_is_named_in_one_sentence() -> None:
    with pytest.raises(OptionError) as refused:
        via_open_run({"eval": "maybe", "debug_ttl": "abc", "debug_tll": 1})
    text = str(refused.value)
    assert "option eval:" in text and "option debug_ttl:" in text and "debug_tll" in text


def test_a_missing_family_is_named_and_a_blocked_one_passes_unchecked(monkeypatch) -> None:
    monkeypatch.setenv("LIVETOOLS_PLUGINS", "testkit")  # every built-in family blocked
    blocked = Host()
    assert blocked.check_options({"debug_ttl": "abc", "lsp": {"x": 1}}) == {
        "debug_ttl": "abc",
        "lsp": {"x": 1},
    }
    monkeypatch.delenv("LIVETOOLS_PLUGINS")
    bare = Host(entry_points=False)  # nothing installed
    with pytest.raises(OptionError, match=r"the debug family is not installed .*livetools-debug"):
        bare.check_options({"debug_ttl": 5})


async def test_call_timeouts_name_a_tool_of_the_run(tmp_path: Path) -> None:
    with pytest.raises(
        OptionError, match=r"^option call_timeouts.ecko: no such tool; did you mean echo\?"
    ):
        await Host().open_run(tmp_path, options={"call_timeouts": {"ecko": 5}})
    async with Host().open_run(tmp_path, options={"call_timeouts": {"echo": "5"}}) as run:
        assert run.options["call_timeouts"] == {"echo": 5.0}


# -- a family that fails to connect stays visible -------------------------------------------


async def test_a_family_that_fails_to_connect_says_why(tmp_path: Path) -> None:
    from livetools.faces.status import render_status, status_report

    async with Host().open_run(tmp_path, options={"testkit_fail": True}) as run:
        assert "echo" in [t.name for t in run.tools()]
        out = await run.call("echo", {"text": "hi"})
        assert out.is_error and not out.text.startswith("unknown tool")
        assert out.text.startswith("testkit is not available in this run: "), out.text
        assert "broken on purpose" in out.text
        report = await status_report(run.host, run)
        entry = next(p for p in report["plugins"] if p["name"] == "testkit")
        assert "broken on purpose" in entry["unavailable"]
        assert "broken on purpose" in report["unavailable"]["testkit"]
        assert "not available in this run: the kit is broken" in render_status(report)


# -- every face, for real --------------------------------------------------------------------


def livetools(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    env.setdefault("LIVETOOLS_PLUGINS", "testkit,eval")
    env.setdefault("LIVETOOLS_RESIDENT", "0")
    return subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", *args],
        input=stdin,
        env=plugin_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


BAD_TYPE = ("call_timeouts.echo=abc", "option call_timeouts.echo: expected a number of seconds")
UNKNOWN = ("eval_idle_timout=5", "unknown option eval_idle_timout: did you mean eval_idle_timeout?")


def one_sentence_usage_error(out: subprocess.CompletedProcess, words: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert out.stderr.startswith(f"livetools: {words}"), out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_call(tmp_path: Path) -> None:
    good = livetools(
        "call", "echo", '{"text": "hi"}', "--root", str(tmp_path), "--option", "eval=False"
    )
    assert good.returncode == 0 and good.stdout.strip() == "hi", good.stderr
    for pair, words in (BAD_TYPE, UNKNOWN):
        bad = livetools("call", "echo", "{}", "--root", str(tmp_path), "--option", pair)
        one_sentence_usage_error(bad, words)


def test_eval_false_on_the_command_line_turns_eval_off(tmp_path: Path) -> None:
    for spelling in ("False", "0", "no", "false"):
        out = livetools("tools", "--format", "json", "--root", str(tmp_path), "--option",
                        f"eval={spelling}")  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "eval" not in {t["name"] for t in json.loads(out.stdout)}, spelling


def test_session_exits_before_reading_a_line(tmp_path: Path) -> None:
    lines = '{"tool": "echo", "args": {"text": "a"}}\n'
    good = livetools("session", "--root", str(tmp_path), "--option", "eval=0", stdin=lines)
    assert good.returncode == 0 and json.loads(good.stdout)["text"] == "a", good.stderr
    for pair, words in (BAD_TYPE, UNKNOWN):
        bad = livetools("session", "--root", str(tmp_path), "--option", pair, stdin=lines)
        one_sentence_usage_error(bad, words)


SERVE = (sys.executable, "-m", "livetools.faces.cli", "serve")


def test_serve_over_stdio(tmp_path: Path) -> None:
    requests = "\n".join(
        json.dumps(r)
        for r in (
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        )
    )
    proc = subprocess.Popen(
        [*SERVE, "--root", str(tmp_path), "--option", "eval=false"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=plugin_env(LIVETOOLS_PLUGINS="testkit,eval"),
        text=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(requests + "\n")
        proc.stdin.flush()
        listed = None
        for line in proc.stdout:  # bounded: the server answers or the test's timeout ends it
            answer = json.loads(line)
            if answer.get("id") == 2:
                listed = answer["result"]["tools"]
                break
        assert listed is not None
    finally:
        proc.kill()
        proc.wait(WAIT)
    names = {t["name"] for t in listed}
    assert "echo" in names and "eval" not in names
    for pair, words in (BAD_TYPE, UNKNOWN):
        bad = livetools("serve", "--root", str(tmp_path), "--option", pair, stdin=requests)
        assert bad.returncode == 2, bad.stderr
        assert f"livetools: {words}" in bad.stderr and "Traceback" not in bad.stderr
        assert bad.stdout == ""  # not one protocol line: nothing started


def test_resident_start_refuses_and_its_calls_match(tmp_path: Path) -> None:
    for pair, words in (BAD_TYPE, UNKNOWN):
        bad = livetools("resident", "start", "--root", str(tmp_path), "--option", pair)
        one_sentence_usage_error(bad, words)
    env = {"LIVETOOLS_RESIDENT": "1", "XDG_RUNTIME_DIR": str(tmp_path / "xdg")}
    (tmp_path / "xdg").mkdir(mode=0o700)
    root = str(tmp_path / "r")
    Path(root).mkdir()
    started = livetools("resident", "start", "--root", root, "--option", "eval=0", **env)
    assert started.returncode == 0, started.stderr
    try:
        served = livetools(
            "call", "echo", '{"text": "r"}', "--root", root, "--option", "eval=0", **env
        )
        assert served.returncode == 0 and served.stdout.strip() == "r", served.stderr
        for pair, words in (BAD_TYPE, UNKNOWN):
            bad = livetools("call", "echo", "{}", "--root", root, "--option", pair, **env)
            one_sentence_usage_error(bad, words)
    finally:
        livetools("resident", "stop", "--all", **env)


@pytest.fixture
def run_server(tmp_path: Path) -> Iterator[Served]:
    (tmp_path / "runs" / "a").mkdir(parents=True)
    env = {"LIVETOOLS_HTTP_TOKEN": ADMIN, "LIVETOOLS_PLUGINS": "testkit,eval"}
    with serve_http("--runs-under", str(tmp_path / "runs"), env=env) as served:
        yield served


@pytest.mark.anyio
async def test_post_runs(run_server: Served) -> None:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    with httpx2.Client(base_url=run_server.url, timeout=WAIT, headers=headers) as http:
        made = http.post("/runs", json={"root": "a", "options": {"eval": "false"}})
        assert made.status_code == 201, made.text
        for options, words in (
            ({"call_timeouts": {"echo": "abc"}}, BAD_TYPE[1]),
            ({"eval_idle_timout": 5}, UNKNOWN[1]),
            ({"eval": "maybe"}, "option eval: expected true or false, got 'maybe'"),
        ):
            bad = http.post("/runs", json={"root": "a", "options": options})
            assert bad.status_code == 400, bad.text
            assert words in bad.text
        typo = http.post("/runs", json={"root": "a", "options": {"call_timeouts": {"ecko": 1}}})
        assert typo.status_code == 400 and "did you mean echo?" in typo.text, typo.text
        # A family that fails to connect: the run opens, and GET /runs/<id> says why.
        broken = http.post("/runs", json={"root": "a", "options": {"testkit_fail": True}})
        assert broken.status_code == 201, broken.text
        described = http.get(f"/runs/{broken.json()['run_id']}").json()
        assert "broken on purpose" in described["unavailable"]["testkit"]
        assert any("broken on purpose" in p for p in described["problems"])
    # The run made with {"eval": "false"} has no eval; the broken family's tools say why.
    async with connect("handshake", run_server.url + made.json()["url"], made.json()["token"]) as c:
        names = await c.list_tools()
        assert "echo" in names and "eval" not in names
    async with connect(
        "modern", run_server.url + broken.json()["url"], broken.json()["token"]
    ) as c:
        out = await c.call("echo", {"text": "hi"})
        assert out.is_error and "testkit is not available in this run" in text_of(out)


def test_serve_http_checks_its_options_before_it_serves(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    out = livetools(
        "serve", "--http", "127.0.0.1:0", "--runs-under", str(tmp_path / "runs"),
        "--option", BAD_TYPE[0], LIVETOOLS_HTTP_TOKEN=ADMIN,
    )  # fmt: skip
    one_sentence_usage_error(out, BAD_TYPE[1])


def test_flags_that_need_another_are_refused(tmp_path: Path) -> None:
    for command in ("call", "session", "tools", "status"):
        extra = ("echo",) if command == "call" else ()
        for flags in (("--sandbox-root", "/x"), ("--sandbox", "none", "--sandbox-root", "/x")):
            out = livetools(command, *extra, "--root", str(tmp_path), *flags)
            one_sentence_usage_error(out, "--sandbox-root goes with --sandbox bwrap")


def test_version() -> None:
    from importlib.metadata import version

    out = livetools("--version")
    assert out.returncode == 0, out.stderr
    first, *plugins = out.stdout.splitlines()
    assert first == f"livetools {version('livetools')}"
    assert any(line.startswith("livetools-lsp ") for line in plugins)
