"""Debug adapters by configuration (issue 33 §3): debugpy and delve defined only as
`[debug.adapters.*]` entries (the built-ins of those ids replaced) run cases of the real debugpy
and delve suites unchanged; bad entries are refused when the run opens, naming key and type."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from livetools import Host
from livetools.options import OptionError
from tests.debug import test_debugpy, test_delve
from tests.debug.test_delve import go_project  # noqa: F401  (the suite's own fixture)

ADAPTERS: dict[str, Any] = {
    "debugpy": {
        "command": [sys.executable, "-m", "debugpy.adapter"],
        "probe": ["-c", "import debugpy"],
        "extensions": [".py"],
        "root_markers": ["pyproject.toml", "setup.py"],
        "exception_filters": ["uncaught"],
        "launch": {
            "type": "debugpy",
            "request": "launch",
            "program": "${program}",
            "args": "${args}",
            "cwd": "${cwd}",
            "console": "internalConsole",
            "redirectOutput": True,
            "justMyCode": True,
            "subProcess": False,
        },
    },
    "delve": {
        "command": ["dlv", "dap", "--client-addr={host}:{port}"],
        "transport": "tcp",
        "dial_in": True,
        "probe": ["version"],
        "requires": ["go"],
        "extensions": [".go"],
        "folders": True,
        "root_markers": ["go.mod"],
        "stdout_is_output": True,
        "stdout_ignore": r"^(DAP server listening at|Type 'dlv help')|^\S+ \w+ layer=\w+ ",
        "exit_pattern": r"Process \d+ has exited with status (-?\d+)",
        "init_timeout": 120,
        "launch": {
            "request": "launch",
            "mode": "debug",
            "program": "${program_dir}",
            "args": "${args}",
            "cwd": "${cwd}",
            "stopOnEntry": False,
        },
    },
}


@pytest.fixture
def configured(open_debugger):
    """The suites' `open_debugger`, with both adapters from configuration only."""

    async def opener(root: Path, **options: Any):
        dbg = await opener.inner(root, debug={"adapters": ADAPTERS}, **options)
        adapters = dbg.supervisor.adapters()
        for name in ("debugpy", "delve"):
            adapter = next(a for a in adapters if a.id == name)
            assert adapter.description == f"{name} (from configuration)"
        return dbg

    opener.inner = open_debugger
    return opener


async def test_debugpy_suite_case_from_configuration(tmp_path: Path, configured) -> None:
    await test_debugpy.test_breakpoint_stack_scopes_variables_evaluate(tmp_path, configured)


async def test_debugpy_steps_from_configuration(tmp_path: Path, configured) -> None:
    await test_debugpy.test_steps(tmp_path, configured)


async def test_delve_suite_case_from_configuration(go_project: Path, configured) -> None:  # noqa: F811
    await test_delve.test_breakpoint_inspect_steps_output_and_exit(go_project, configured)


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ({"command": "dlv"}, "expected command as a list of strings"),
        ({"command": ["x"]}, "expected command and launch (or disabled = true)"),
        ({"command": ["x"], "launch": {}, "transport": "udp"}, 'transport as "stdio" or "tcp"'),
        ({"command": ["x"], "launch": {}, "when": 1}, "only the keys"),
    ],
)
def test_bad_entries_are_refused(tmp_path: Path, entry: dict[str, Any], error: str) -> None:
    with pytest.raises(OptionError) as caught:
        Host().open_run(tmp_path, options={"debug": {"adapters": {"x": entry}}})
    assert "option debug.adapters.x: expected" in str(caught.value)
    assert error in str(caught.value), str(caught.value)
