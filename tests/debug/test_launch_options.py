"""Issue 31 §1, the rest: function breakpoints by name, set a variable, run to a line (a
temporary breakpoint), restart, launch options (a module, env, cwd, stop on entry) and a console
script taken for Python without adapter=debugpy; on real debugpy (sqlparse's own CLI, a PyPI
sdist from the corpus), real lldb (C) and real dlv (Go). Bad input is refused naming the argument.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.corpus import corpus_copy

from .conftest import build_c, copy_project, line_of, require_delve, require_lldb
from .test_breakpoint_kinds import venv_of_this_python

# What pip and uv write for the entry point `sqlformat = sqlparse.__main__:main`.
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import sys
from sqlparse.__main__ import main
if __name__ == "__main__":
    if sys.argv[0].endswith("-script.pyw"):
        sys.argv[0] = sys.argv[0][:-11]
    elif sys.argv[0].endswith(".exe"):
        sys.argv[0] = sys.argv[0][:-4]
    sys.exit(main())
"""


def sqlparse_project(tmp_path: Path) -> Path:
    root = corpus_copy("sqlparse", tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'sq'\nversion = '0'\n")
    venv_of_this_python(root)
    script = root / ".venv" / "bin" / "sqlformat"
    script.write_text(CONSOLE_SCRIPT.format(python=root / ".venv" / "bin" / "python"))
    script.chmod(0o755)
    (root / "q.sql").write_text("Select A from B\n")
    return root


async def test_console_script_function_breakpoint_run_to_set_restart(
    tmp_path: Path, open_debugger
) -> None:
    """sqlformat (no .py, a python shebang) goes to debugpy by itself; a function breakpoint on
    `main` stops in sqlparse's cli; run_to the format call; setting the keyword case there
    changes what the real CLI prints; restart runs it again with the breakpoints as they are."""
    root = sqlparse_project(tmp_path)
    cli = root / "sqlparse" / "cli.py"
    call = line_of(cli, "s = sqlparse.format(data, **formatter_opts)")
    dbg = await open_debugger(root)
    r = await dbg.ok("breakpoints", lines=["main"])
    assert "function main pending" in r.text
    launch = {
        "program": ".venv/bin/sqlformat",
        "args": ["-k", "upper", "q.sql"],
        "options": {"env": {"PYTHONPATH": str(root)}},
    }
    r = await dbg.ok("launch", **launch)
    assert "with debugpy" in r.text and "function main verified" in r.text, r.text
    assert r.data["stop"]["reason"] == "function breakpoint", r.text
    assert r.data["stop"]["frame"]["path"] == "sqlparse/cli.py"

    r = await dbg.ok("run_to", file="sqlparse/cli.py", lines=[call])
    assert f"ran to sqlparse/cli.py:{call}" in r.text, r.text
    assert (await dbg.ok("evaluate", expression="formatter_opts['keyword_case']")).text.startswith(
        "'upper'"
    )
    r = await dbg.ok("set", expression="formatter_opts['keyword_case'] = 'lower'")
    assert "'lower'" in r.text, r.text
    status = await dbg.ok("status")
    assert f"cli.py:{call}" not in status.text.split("breakpoints:")[1]  # the temporary one went
    r = await dbg.ok("continue")
    assert r.data["outcome"] == "exited" and "select A from B" in r.text, r.text

    r = await dbg.ok("restart")
    assert r.text.startswith("restarted: launched .venv/bin/sqlformat with debugpy"), r.text
    assert r.data["stop"]["reason"] == "function breakpoint"
    await dbg.ok("breakpoints", lines=[])  # clears the function breakpoints
    r = await dbg.ok("continue")
    assert r.data["outcome"] == "exited" and "SELECT A FROM B" in r.text, r.text


async def test_module_cwd_env_and_stop_on_entry(tmp_path: Path, open_debugger) -> None:
    """`python -m sqlparse` from the project's folder, stopped on entry, with a variable of ours
    in its environment, run from a sub folder as cwd (the file name is relative to it)."""
    root = sqlparse_project(tmp_path)
    (root / "work").mkdir()
    (root / "work" / "in.sql").write_text("select x from y\n")
    dbg = await open_debugger(root)
    options = {
        "module": "sqlparse",
        "cwd": "work",
        "env": {"PYTHONPATH": str(root), "LIVETOOLS_PROBE": "probe 1"},
        "stop_on_entry": True,
    }
    r = await dbg.ok("launch", options=options, args=["-k", "upper", "in.sql"])
    assert r.text.startswith("launched -m sqlparse with debugpy"), r.text
    assert r.data["stop"]["reason"] == "entry", r.text
    env = await dbg.ok("evaluate", expression="__import__('os').environ['LIVETOOLS_PROBE']")
    assert env.text.startswith("'probe 1'"), env.text
    cwd = await dbg.ok("evaluate", expression="__import__('os').getcwd()")
    assert cwd.text.startswith(repr(str(root / "work"))), cwd.text
    r = await dbg.ok("continue")
    assert r.data["outcome"] == "exited" and "SELECT x FROM y" in r.text, r.text


async def test_lldb_function_breakpoint_run_to_set_env_restart(
    tmp_path: Path, open_debugger
) -> None:
    require_lldb()
    root = copy_project("c", tmp_path)
    build_c(root, "-g", "-O0")
    ret = line_of(root / "main.c", "return acc;")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", lines=["total"])
    r = await dbg.ok("launch", program="app", options={"env": {"LIVETOOLS_PROBE": "c"}})
    assert "function total verified at main.c:" in r.text, r.text
    assert r.data["stop"]["frame"]["name"].startswith("total"), r.text  # reason: "breakpoint"
    env = await dbg.ok("evaluate", expression='(char *)getenv("LIVETOOLS_PROBE")')
    assert '"c"' in env.text, env.text
    r = await dbg.ok("run_to", file="main.c", lines=[ret])
    assert f"ran to main.c:{ret}" in r.text, r.text
    r = await dbg.ok("set", expression="acc = 99")
    assert r.data["value"] == "99", r.text
    r = await dbg.ok("continue")
    assert "result 99" in r.text and "exited with code 3" in r.text, r.text
    r = await dbg.ok("restart")
    assert r.data["stop"]["frame"]["name"].startswith("total"), r.text
    await dbg.ok("terminate")
    await dbg.ok("breakpoints", lines=[])
    r = await dbg.ok("launch", program="app", options={"stop_on_entry": True})
    assert r.data["outcome"] == "stopped", r.text  # before main: nothing printed yet
    assert "hello from app" not in r.text


async def test_delve_function_breakpoint_run_to_set(tmp_path: Path, open_debugger) -> None:
    require_delve()
    root = copy_project("go", tmp_path)
    ret = line_of(root / "main.go", "return acc")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", lines=["main.total"])
    r = await dbg.ok("launch", program=".", options={"env": {"LIVETOOLS_PROBE": "go"}})
    assert r.data["stop"]["reason"] == "function breakpoint", r.text
    assert r.data["stop"]["frame"]["name"] == "main.total", r.text
    r = await dbg.ok("run_to", file="main.go", lines=[ret])
    assert f"ran to main.go:{ret}" in r.text, r.text
    r = await dbg.ok("set", expression="acc = 99")
    assert r.data["value"] == "99", r.text
    r = await dbg.ok("continue")
    assert "result 99" in r.text and "exited with code 3" in r.text, r.text


async def test_bad_input_is_refused_naming_the_argument(tmp_path: Path, open_debugger) -> None:
    root = copy_project("py", tmp_path)
    (root / "note.txt").write_text("")
    dbg = await open_debugger(root)
    cases = [
        ({"op": "launch", "program": "app.py", "options": {"module": "x"}}, "not both"),
        ({"op": "launch", "options": {"module": " "}}, "options.module is empty"),
        ({"op": "launch", "program": "app.py", "options": {"cwd": "note.txt"}}, "options.cwd"),
        ({"op": "launch", "program": "app.py", "options": {"env": {"A=B": "1"}}}, "options.env"),
        ({"op": "launch", "program": "app.py", "options": {"nope": 1}}, "nope"),
        ({"op": "launch", "options": {"module": "x"}, "adapter": "lldb"}, "options.module"),
        ({"op": "breakpoints", "lines": ["  "]}, "lines[0] is an empty function name"),
        ({"op": "breakpoints", "lines": [3, "f"]}, "needs file together with line numbers"),
        ({"op": "attach", "port": 1, "pid": 2}, "port or pid, not both"),
        ({"op": "attach", "pid": 0}, "pid must be"),
        ({"op": "attach", "pid": 2**22 + 12345}, "no process"),
        ({"op": "restart"}, "nothing to restart"),
    ]
    for args, expected in cases:
        r = await dbg.run.call("debug", args)
        assert r.is_error and expected in r.text, (args, r.text)
    await dbg.ok("breakpoints", file="app.py", lines=[line_of(root / "app.py", "# call total")])
    await dbg.ok("launch", program="app.py")
    for args, expected in [
        ({"op": "run_to", "file": "app.py", "lines": [1, 2]}, "lines: run_to takes one"),
        ({"op": "run_to", "lines": [3]}, "run_to needs file"),
        ({"op": "set", "expression": "x == 1"}, "expression: set takes 'target = value'"),
        ({"op": "set", "expression": "y = 1", "reference": 999999}, "unknown reference"),
    ]:
        r = await dbg.run.call("debug", args)
        assert r.is_error and expected in r.text, (args, r.text)
    r = await dbg.ok("run_to", file="app.py", lines=[2])  # a blank line: debugpy moves it
    assert "app.py" in r.text
    await dbg.ok("terminate")


async def test_function_breakpoints_refused_where_the_adapter_has_none(
    tmp_path: Path, open_debugger
) -> None:
    from .test_faults_and_hooks import ThirdParty, _project

    dbg = await open_debugger(_project(tmp_path), plugins=(("tp", ThirdParty("one-thread")),))
    await dbg.ok("breakpoints", lines=["main"])
    r = await dbg.ok("launch", program="prog.fake")
    assert "function main unverified: not set: fake has no function breakpoints" in r.text, r.text
    r = await dbg.err("breakpoints", lines=["other"])
    assert "fake has no function breakpoints" in r.text and "nothing was set" in r.text
    assert sys.executable  # the fake runs on this interpreter


async def _attach_by_pid(root: Path, argv: list[str], open_debugger, frame: str) -> None:
    """Attach to a running program by its pid (the adapter guessed from the process), pause it
    where it loops, and detach: the process runs on (it is not ours to end)."""
    import asyncio

    from livetools.procs import ChildProcess, process_state

    child = await ChildProcess.start(argv, cwd=root, stdin=False)
    try:
        await asyncio.sleep(0.3)
        dbg = await open_debugger(root)
        r = await dbg.ok("attach", pid=child.pid)
        assert f"attached to pid {child.pid}" in r.text, r.text
        r = await dbg.ok("pause")
        assert r.data["outcome"] == "stopped", r.text
        names = []  # the paused thread may be a runtime one (dlv: a signal handler)
        for thread in (await dbg.ok("threads")).data:
            stack = await dbg.ok("stack", thread_id=thread["id"])
            names += [f["name"] for f in stack.data["frames"]]
        assert any(frame in n for n in names), names
        r = await dbg.ok("terminate")
        assert "the process runs on" in r.text, r.text
        await asyncio.sleep(0.2)
        assert process_state(child.pid) not in (None, "Z"), "the attached process was ended"
    finally:
        await child.aclose(grace=0.5)


async def test_attach_by_pid_lldb(tmp_path: Path, open_debugger) -> None:
    require_lldb()
    root = copy_project("c", tmp_path)
    app = build_c(root, "-g", "-O0")
    await _attach_by_pid(root, [str(app), "busy"], open_debugger, "busy")


async def test_attach_by_pid_delve(tmp_path: Path, open_debugger) -> None:
    import subprocess

    require_delve()
    root = copy_project("go", tmp_path)
    build = ["go", "build", "-gcflags=all=-N -l", "-o", "app", "."]
    subprocess.run(build, cwd=root, check=True, timeout=300)  # noqa: ASYNC221 (setup)
    await _attach_by_pid(root, [str(root / "app"), "busy"], open_debugger, "main.busy")


async def test_attach_by_pid_debugpy(tmp_path: Path, open_debugger) -> None:
    """debugpy injects itself with gdb (Debian's gdb)."""
    from tests.support import require_binary

    require_binary("gdb", "apt-get install gdb")
    root = copy_project("py", tmp_path)
    await _attach_by_pid(
        root, [sys.executable, str(root / "app.py"), "busy"], open_debugger, "busy"
    )


async def test_set_under_a_reference_and_restart_while_stopped(
    tmp_path: Path, open_debugger
) -> None:
    """`set` with `reference` sets a child by name (setVariable) even where setExpression exists;
    `restart` from a stop ends that session and stops at the breakpoint again."""
    root = copy_project("py", tmp_path)
    line = line_of(root / "app.py", "# call total")
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="app.py", lines=[line])
    await dbg.ok("launch", program="app.py")
    frame = (await dbg.ok("stack")).data["frames"][0]["id"]
    scopes = await dbg.ok("scopes", frame_id=frame)
    local = next(s["reference"] for s in scopes.data if s["name"].startswith("Locals"))
    data = next(
        v
        for v in (await dbg.ok("variables", reference=local)).data["variables"]
        if v["name"] == "data"
    )
    r = await dbg.ok("set", expression="'k' = 'short'", reference=data["reference"])
    assert r.data["value"] == "'short'", r.text
    assert (await dbg.ok("evaluate", expression="data['k']")).text.startswith("'short'")
    r = await dbg.ok("set", expression="mode = 'changed'", reference=local)
    assert (await dbg.ok("evaluate", expression="mode")).text.startswith("'changed'")
    r = await dbg.ok("restart")
    assert r.data["stop"]["frame"]["line"] == line, r.text
    assert (await dbg.ok("evaluate", expression="mode")).text.startswith("''")
    await dbg.ok("terminate")


async def test_function_names_given_with_a_file_leave_its_lines(
    tmp_path: Path, open_debugger
) -> None:
    root = copy_project("py", tmp_path)
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", file="app.py", lines=[6])
    await dbg.ok("breakpoints", file="app.py", lines=["total", "busy"])
    status = await dbg.ok("status")
    assert "app.py:6 pending" in status.text, status.text
    assert "function total pending" in status.text and "function busy pending" in status.text
    await dbg.ok("breakpoints", lines=[])
    status = await dbg.ok("status")
    assert "function" not in status.text and "app.py:6 pending" in status.text, status.text


async def test_delve_stop_on_entry_stops_in_main_main(tmp_path: Path, open_debugger) -> None:
    """dlv's own stopOnEntry stops before the runtime has goroutine 1 (no stack: "unknown
    goroutine 1"); stop_on_entry is a one-off function breakpoint on main.main instead, gone
    after that stop (the conversation's own function breakpoints stay)."""
    require_delve()
    root = copy_project("go", tmp_path)
    dbg = await open_debugger(root)
    await dbg.ok("breakpoints", lines=["main.total"])
    r = await dbg.ok("launch", program=".", options={"stop_on_entry": True})
    assert r.data["stop"]["reason"] == "entry", r.text
    assert r.data["stop"]["frame"]["name"] == "main.main", r.text
    assert "function main.main" not in r.text and "function main.total verified" in r.text
    r = await dbg.ok("continue")
    assert r.data["stop"]["frame"]["name"] == "main.total", r.text
    r = await dbg.ok("continue")
    assert r.data["outcome"] == "exited", r.text
