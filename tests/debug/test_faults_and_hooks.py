"""Adapters from a third-party plugin (the family hook), detection reasons, and adapters that
hang, crash or write garbage: every case is a clear error within bounded time, never a hang."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from livetools import hookimpl
from livetools.procs import session_members
from livetools_debug.adapters import DEBUGPY, DELVE, Adapter, LaunchInfo

from .conftest import assert_gone, copy_project, line_of, require_delve

FAKE = Path(__file__).with_name("fake_adapter.py")


def _launch(info: LaunchInfo) -> dict[str, Any]:
    return {"request": "launch", "program": str(info.program)}


class ThirdParty:
    """What a third-party distribution ships: one hook implementation."""

    def __init__(self, mode: str = "hang", **changes: Any) -> None:
        adapter = Adapter(
            id="fake",
            command=(sys.executable, str(FAKE), mode),
            markers=("fake.toml",),
            extensions=(".fake",),
            probe_args=None,
            launch_config=_launch,
            init_timeout=2.0,
            description="a test adapter",
        )
        self.adapter = replace(adapter, **changes)

    @hookimpl
    def livetools_debug_adapters(self, run: Any) -> list[Adapter]:
        return [self.adapter]


def _project(tmp_path: Path) -> Path:
    (tmp_path / "fake.toml").write_text("")
    (tmp_path / "prog.fake").write_text("")
    return tmp_path


async def test_third_party_adapter_and_detection_reasons(tmp_path: Path, open_debugger) -> None:
    root = _project(tmp_path)
    missing = ThirdParty(command=("no-such-dap-binary",))
    dbg = await open_debugger(root, plugins=(("thirdparty", missing),))
    listing = await dbg.ok("adapters")
    assert "fake: not usable: binary not on PATH: no-such-dap-binary" in listing.text
    assert "debugpy: not usable: marker missing: pyproject.toml/setup.py/requirements.txt" in (
        listing.text
    )
    refused = await dbg.err("launch", program="prog.fake")
    assert "adapter fake is not usable here: binary not on PATH" in refused.text

    probe = ("-c", "import sys; print('broken'); sys.exit(1)")
    failing = ThirdParty(command=(sys.executable,), probe_args=probe)
    dbg = await open_debugger(root, plugins=(("thirdparty", failing),))
    assert "fake: not usable: binary exits 1: broken" in (await dbg.ok("adapters")).text
    status = await dbg.supervisor.status()
    assert status["adapters"]["fake"] == {"usable": False, "reason": "binary exits 1: broken"}


async def test_hanging_adapter_is_a_bounded_error(tmp_path: Path, open_debugger) -> None:
    dbg = await open_debugger(_project(tmp_path), plugins=(("tp", ThirdParty("hang")),))
    started = time.monotonic()
    result = await dbg.err("launch", program="prog.fake")
    # Bounded by init_timeout (2 s, named in the message), not a hang; the margin is for the
    # fake adapter's start on a loaded machine.
    assert time.monotonic() - started < 30
    assert "fake launch failed" in result.text and "no answer to initialize" in result.text
    session = dbg.supervisor.session
    assert_gone(session.pids)
    assert (await dbg.ok("status")).data["state"] == "ended"


async def test_garbage_and_crash_are_reported(tmp_path: Path, open_debugger) -> None:
    root = _project(tmp_path)
    dbg = await open_debugger(root, plugins=(("tp", ThirdParty("garbage")),))
    result = await dbg.err("launch", program="prog.fake")
    assert "invalid message" in result.text or "not JSON" in result.text or "header" in result.text
    assert_gone(dbg.supervisor.session.pids)

    dbg = await open_debugger(root, plugins=(("tp", ThirdParty("crash")),))
    result = await dbg.err("launch", program="prog.fake")
    assert "fake adapter: boom while launching" in result.text  # the adapter's stderr tail
    assert_gone(dbg.supervisor.session.pids)


async def test_stalled_request_and_adapter_death_mid_session(tmp_path: Path, open_debugger) -> None:
    root = _project(tmp_path)
    dbg = await open_debugger(
        root, plugins=(("tp", ThirdParty("stall-stack")),), debug_request_timeout=1.0
    )
    result = await dbg.ok("launch", program="prog.fake")  # launched; the stop is still known
    assert "stopped: entry" in result.text
    assert "no answer to stackTrace within 1s" in result.text and "terminate" in result.text
    sids, _ = dbg.processes()
    assert all(session_members(s) for s in sids)  # wedged but alive: terminate ends it
    status = await dbg.ok("status")
    assert "stopped: entry" in status.text and "could not read where it stopped" in status.text
    await dbg.ok("terminate")
    assert_gone(sids)

    dbg = await open_debugger(root, plugins=(("tp", ThirdParty("die-stopped")),))
    launched = await dbg.ok("launch", program="prog.fake")
    assert launched.data["stop"]["reason"] == "entry"
    gone = await dbg.err("threads")
    assert "fake closed the connection" in gone.text
    status = await dbg.ok("status")
    assert status.data["state"] == "ended"
    assert_gone(dbg.processes()[0])
    again = await dbg.ok("launch", program="prog.fake")  # a dead session does not block a new one
    assert again.data["outcome"] == "stopped"


class Offers:
    def __init__(self, *adapters: Adapter) -> None:
        self.adapters = list(adapters)

    @hookimpl
    def livetools_debug_adapters(self, run: Any) -> list[Adapter]:
        return self.adapters


async def test_tcp_adapter_we_connect_to_and_builtin_override(
    tmp_path: Path, open_debugger
) -> None:
    """The listen flavour of TCP (the adapter listens, we connect), through a plugin that also
    replaces a built-in by id."""
    require_delve()
    root = copy_project("go", tmp_path)
    listening = replace(
        DELVE, id="delve-listen", command=("dlv", "dap", "--listen={host}:{port}"), dial_in=False
    )
    python = replace(DEBUGPY, description="python, replaced by a plugin")
    dbg = await open_debugger(root, plugins=(("tp", Offers(listening, python)),))
    listing = await dbg.ok("adapters")
    assert "delve-listen: usable" in listing.text
    assert "debugpy: not usable" in listing.text
    assert [a.id for a in dbg.supervisor.adapters()].count("debugpy") == 1
    assert dbg.supervisor.adapter("debugpy").description == "python, replaced by a plugin"

    call_line = line_of(root / "main.go", "// call total")
    await dbg.ok("breakpoints", file="main.go", lines=[call_line])
    result = await dbg.ok("launch", program=".", adapter="delve-listen")
    assert result.data["stop"]["frame"]["line"] == call_line
    sids, _ = dbg.processes()
    await dbg.ok("terminate")
    assert_gone(sids)


def test_adapter_noise_stays_out_of_the_program_output(tmp_path: Path) -> None:
    """debugpy's "thread._ident is None" complaint arrives as the debuggee's stderr on demand
    only by chance, so its output event is fed to a real session object directly."""
    from livetools_debug.session import Session

    session = Session(DEBUGPY, tmp_path, request="launch", target="x.py")
    noise = "pydevd: thread._ident is None in _get_related_thread!\n"
    session._on_event("output", {"category": "stderr", "output": f"before\n{noise}after\n"})
    assert session.output.text() == "before\nafter\n"
