"""A debug adapter livetools does not ship, defined only by a `[debug.adapters.NAME]` entry in the
project's `.livetools.toml` (issue 33 §3): Eclipse CDT's gdb adapter (npm cdt-gdb-adapter,
`cdtDebugAdapter`, DAP on stdio over gdb/MI) on zlib's enough.c (Mark Adler's prefix-code counter,
shipped by Debian's zlib1g-dev). The oracle is the same binary run without a debugger: the local
the breakpoint shows is the number the program prints, and the exit codes are the program's.

Two things of the adapter the entry works around, said in the entry's comments: it sends no
`exited` event (only `terminated`), so a gdb Python hook writes the exit code to gdb's log stream,
which `exit_pattern` reads; and its `arguments` is one string, while `"${args}"` is a list (a
one-element list reaches it intact, as JavaScript joins arrays with commas).

Ruby's debug gem (rdbg 1.4.0, bundled with Debian's ruby) speaks DAP too, but it is the debuggee:
it starts with the program on its command line, which an entry's `command` cannot name (only
`{host}` and `{port}`). So it is proven by `attach`: `attach_direct` to a Ruby program started
listening, diff-lcs's ldiff (Debian's ruby-diff-lcs)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from livetools import Host
from livetools.options import OptionError
from livetools.procs import ChildProcess
from livetools.wire import free_port
from tests.corpus import corpus_copy, corpus_project
from tests.support import require_binary

from .conftest import line_of, wait_listening

ENTRY = """\
[debug.adapters.cdt-gdb]
command = ["cdtDebugAdapter"]
probe = ["--version"]
requires = ["gdb"]
description = "gdb through Eclipse CDT's cdt-gdb-adapter"
# cdt-gdb-adapter sends `terminated` without `exited`: gdb says the code on its log stream
exit_pattern = '^exit code (-?\\d+)$'
# gdb's own lines among the program's output (the debuggee shares gdb's stdout)
stdout_ignore = '^(The host character set is|\\[Thread debugging using|Using host libthread_db|\\[Inferior \\d+ \\(process \\d+\\) exited|Breakpoint \\d+, |\\d+\\t)'

[debug.adapters.cdt-gdb.launch]
type = "gdb"
request = "launch"
program = "${program}"
cwd = "${cwd}"
arguments = "${args}"
gdbArguments = ["-q"]
initCommands = [
    "python gdb.events.exited.connect(lambda e: gdb.write('exit code %d' % getattr(e, 'exit_code', -1) + chr(10), gdb.STDLOG))",
]
"""  # noqa: E501 (the entry as a user writes it: TOML has no line continuation in a string)


@pytest.fixture
def enough(tmp_path: Path) -> Path:
    """A project with enough.c built for debugging and the adapter's entry."""
    require_binary("cdtDebugAdapter", "bash plugins/debug/deps/cdt-gdb-adapter.sh")
    require_binary("gdb", "apt-get install gdb")
    require_binary("cc", "apt-get install gcc")
    root = tmp_path / "enough"
    root.mkdir()
    (root / "enough.c").write_bytes((corpus_project("zlib-examples") / "enough.c").read_bytes())
    build = ["cc", "-g", "-O0", "-o", "enough", "enough.c"]
    subprocess.run(build, cwd=root, check=True, timeout=120)
    (root / ".livetools.toml").write_text(ENTRY)
    return root


def run_native(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The oracle: the program run without a debugger."""
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def native(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_native([str(root / "enough"), *args], root)


async def test_breakpoint_local_step_and_exit_codes(enough: Path, open_debugger) -> None:
    root = enough
    oracle = native(root, "20")
    assert oracle.returncode == 0, oracle.stderr
    total = re.match(r"(\d+) total codes for 2 to 20 symbols", oracle.stdout)
    assert total is not None, oracle.stdout
    printed = line_of(root / "enough.c", "total codes for 2 to %d symbols")

    dbg = await open_debugger(root)
    adapters = (await dbg.ok("adapters")).text
    assert "cdt-gdb: usable (gdb through Eclipse CDT's cdt-gdb-adapter" in adapters, adapters
    await dbg.ok("breakpoints", file="enough.c", lines=[printed])
    result = await dbg.ok("launch", program="enough", args=["20"], adapter="cdt-gdb")
    assert "with cdt-gdb" in result.text
    stop = result.data["stop"]
    assert stop["reason"] == "breakpoint", result.text
    assert (stop["frame"]["path"], stop["frame"]["line"]) == ("enough.c", printed)

    stack = await dbg.ok("stack")
    frame = stack.data["frames"][0]
    assert frame["name"] == "main"
    scopes = await dbg.ok("scopes", frame_id=frame["id"])
    local = next(s for s in scopes.data if s["name"] == "Local")
    variables = await dbg.ok("variables", reference=local["reference"])
    values = {v["name"]: v["value"] for v in variables.data["variables"]}
    assert values["sum"] == total.group(1)  # what the program prints, counted under gdb
    assert values["syms"] == "20"
    assert (await dbg.ok("evaluate", expression="sum + 1")).text.startswith(
        str(int(total.group(1)) + 1)
    )

    step = await dbg.ok("step_over")
    assert step.data["stop"]["reason"] == "step"
    assert step.data["stop"]["frame"]["line"] == printed + 1

    done = await dbg.ok("continue")
    assert done.data["outcome"] == "exited", done.text
    assert done.data["exit_code"] == 0
    output = (await dbg.ok("output")).text
    # The program's lines, but for a line's leading digits: the debuggee writes into gdb's MI
    # stdout, where cdt-gdb-adapter's parser takes digits at a line's start for an MI token.
    for line in oracle.stdout.splitlines():
        assert line.lstrip("0123456789") in output, output
    assert "Using host libthread_db" not in output and "exited normally" not in output

    bad = native(root, "1")
    assert bad.returncode == 1
    refused = await dbg.ok("launch", program="enough", args=["1"], adapter="cdt-gdb")
    assert refused.data["outcome"] == "exited", refused.text
    assert refused.data["exit_code"] == bad.returncode
    assert bad.stderr.strip() in (await dbg.ok("output")).text


async def test_bad_input_gets_clear_errors(enough: Path, open_debugger) -> None:
    root = enough
    dbg = await open_debugger(root)
    missing = await dbg.err("launch", program="nothing-here", adapter="cdt-gdb")
    assert "nothing-here" in missing.text, missing.text
    unknown = await dbg.err("launch", program="enough", adapter="cdt-gbd")
    assert "cdt-gbd" in unknown.text and "cdt-gdb" in unknown.text, unknown.text
    source = await dbg.err("launch", program="enough.c", adapter="cdt-gdb")
    assert "cdt-gdb launch failed" in source.text, source.text
    assert "not in executable format" in source.text, source.text

    (root / ".livetools.toml").write_text(ENTRY.replace('["cdtDebugAdapter"]', '"cdtDebugAdapter"'))
    with pytest.raises(OptionError) as caught:
        Host().open_run(root, options={})
    said = str(caught.value)
    assert ".livetools.toml: option debug.adapters.cdt-gdb: expected command" in said, said

    gone = ENTRY.replace('["cdtDebugAdapter"]', '["cdtDebugAdapter-not-installed"]')
    (root / ".livetools.toml").write_text(gone)
    dbg = await open_debugger(root)
    adapters = (await dbg.ok("adapters")).text
    assert "cdt-gdb: not usable: binary not on PATH: cdtDebugAdapter-not-installed" in adapters
    absent = await dbg.err("launch", program="enough", adapter="cdt-gdb")
    assert "cdtDebugAdapter-not-installed" in absent.text, absent.text


RDBG = """\
[debug.adapters.rdbg]
# rdbg needs the program in its argv: `launch` cannot start it (see the module docstring)
command = ["ruby", "-r", "debug/open"]
probe = ["-e", "require 'debug/version'"]
extensions = [".rb"]
attach_direct = true
attach = { type = "rdbg", request = "attach" }
launch = { type = "rdbg", request = "launch" }
"""


async def test_rdbg_attach_breakpoint_locals_step(tmp_path: Path, open_debugger) -> None:
    require_binary("ruby", "apt-get install ruby (its debug gem is rdbg)")
    root = corpus_copy("ruby-diff-lcs", tmp_path)
    (root / ".livetools.toml").write_text(RDBG)
    (root / "old.txt").write_text("a\nb\nc\nd\n")
    (root / "new.txt").write_text("a\nc\nd\ne\n")
    argv = ["ruby", "-I", "lib", "bin/ldiff", "old.txt", "new.txt"]
    oracle = run_native(argv, root)
    assert oracle.returncode == 1, oracle.stderr  # the files differ
    hunks = re.findall(r"^\d+(?:,\d+)?[acd]\d+", oracle.stdout, re.MULTILINE)
    assert len(hunks) == 2, oracle.stdout
    ldiff = root / "lib" / "diff" / "lcs" / "ldiff.rb"
    decided = line_of(ldiff, "return 0 unless diffs")

    port = free_port()
    env = {**os.environ, "RUBY_DEBUG_PORT": str(port), "RUBY_DEBUG_HOST": "127.0.0.1"}
    debuggee = await ChildProcess.start(
        ["ruby", "-r", "debug/open", *argv[1:]], cwd=root, env=env, stdin=False, merge_stderr=True
    )
    try:
        await wait_listening(port)
        dbg = await open_debugger(root)
        assert "rdbg: usable" in (await dbg.ok("adapters")).text
        await dbg.ok("breakpoints", file="lib/diff/lcs/ldiff.rb", lines=[decided])
        attached = await dbg.ok("attach", port=port, adapter="rdbg")
        assert attached.data["stop"]["frame"]["path"] == "bin/ldiff", attached.text  # at load
        hit = await dbg.ok("continue")
        assert hit.data["stop"]["reason"] == "breakpoint", hit.text
        frame = hit.data["stop"]["frame"]
        assert (frame["path"], frame["line"]) == ("lib/diff/lcs/ldiff.rb", decided)
        stack = await dbg.ok("stack")
        top = stack.data["frames"][0]
        assert "run" in top["name"], stack.text
        scopes = await dbg.ok("scopes", frame_id=top["id"])
        variables = await dbg.ok("variables", reference=scopes.data[0]["reference"])
        names = {v["name"] for v in variables.data["variables"]}
        assert {"diffs", "data_old", "data_new"} <= names, variables.text
        assert (await dbg.ok("evaluate", expression="diffs.size")).text.startswith("2")
        assert (await dbg.ok("evaluate", expression="data_new.last")).text.startswith('"e\\n"')
        step = await dbg.ok("step_over")
        assert step.data["stop"]["reason"] == "step", step.text
        assert step.data["stop"]["frame"]["line"] > decided
        ended = await dbg("continue")  # rdbg 1.4.0 closes the connection at exit, saying no code
        assert "rdbg closed the connection" in ended.text, ended.text
        assert await debuggee.wait(60) == oracle.returncode
        assert debuggee.stdout is not None
        printed = (await debuggee.stdout.read()).decode()
        assert oracle.stdout in printed, printed
    finally:
        await debuggee.aclose(grace=0)
