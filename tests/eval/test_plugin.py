"""The plugin as a whole: cheap import, schema budget, status, sandbox launcher, the hook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from livetools import Host, Ports
from tests.eval.support import cell, host, open_run

HEAVY = ("jupyter_client", "zmq", "ipykernel", "IPython", "deno")


def read_json(path: str) -> dict[str, object]:
    return json.loads(Path(path).read_text())


def test_import_and_tool_listing_load_no_kernel_machinery() -> None:
    probe = (
        "import contextlib, io, sys\n"
        "import livetools_eval\n"
        "from livetools.faces.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['tools', '--format', 'json'])\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_schema_stays_within_its_budget() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "tools", "--format", "mcp"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (tool,) = [t for t in json.loads(out.stdout) if t["name"] == "eval"]
    assert len(json.dumps(tool, separators=(",", ":"))) <= 1220  # 900 + notebook (330)
    assert tool["inputSchema"]["properties"]["language"]["enum"][:2] == ["python", "javascript"]
    assert tool["_meta"]["livetools/tier"] == "exec"


async def test_status_and_option_off(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        status = await run.resource("eval").status()
        assert status["usable"] is True
        assert status["kernels"]["python"] == {
            "kernel": "ipykernel",
            "command": sys.executable,
            "usable": True,
            "running": False,
        }
        await cell(run, "1")
        status = await run.resource("eval").status()
        assert status["kernels"]["python"]["running"] is True
    async with open_run(tmp_path, eval=False) as run:
        assert "eval" not in [t.name for t in run.tools()]
    async with Host(entry_points=False).open_run(tmp_path) as run:
        assert run.tools() == []  # no eval plugin, no kernel factory, no tool


async def test_sandbox_launcher_wraps_the_kernel_command(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    async def wrap(argv: list[str]) -> list[str]:
        seen.append(argv)
        return ["env", "LIVETOOLS_IN_SANDBOX=yes", *argv]

    async with open_run(tmp_path, ports=Ports(sandbox=wrap)) as run:
        result = await cell(run, "import os\nos.environ.get('LIVETOOLS_IN_SANDBOX')")
        assert result.text == "'yes'"
        assert seen and seen[0][0] == sys.executable
        conn = read_json(seen[0][-1])
        assert conn["transport"] == "tcp"  # a sandbox need not share our socket directory


async def test_unstartable_kernel_is_a_clear_error(tmp_path: Path) -> None:
    from livetools import hookimpl
    from livetools_eval import KernelSpec

    class Broken:
        @hookimpl
        def livetools_eval_kernels(self, run: object) -> list[KernelSpec]:
            return [
                KernelSpec("python", "nothing", ["/nonexistent/python", "{connection_file}"]),
                KernelSpec(
                    "javascript",
                    "crashy",
                    [
                        sys.executable,
                        "-c",
                        "import sys; sys.stderr.write('boom: no kernel here'); sys.exit(5)",
                    ],
                ),
            ]

    async with open_run(tmp_path, host_=host(("broken", Broken()))) as run:
        missing = await cell(run, "1")
        assert missing.is_error and "could not start the python kernel" in missing.text
        assert "/nonexistent/python" in missing.text
        crashed = await cell(run, "1", language="javascript")
        assert crashed.is_error and "exited with code 5" in crashed.text
        assert "boom: no kernel here" in crashed.text


async def test_a_kernel_of_dialect_none_gets_no_helpers(tmp_path: Path) -> None:
    from livetools import hookimpl
    from livetools_eval import KernelSpec
    from livetools_eval.builtin import ipykernel_argv

    class Other:
        @hookimpl
        def livetools_eval_kernels(self, run: object) -> KernelSpec:
            return KernelSpec("other", "other", ipykernel_argv, dialect="none")

    async with open_run(tmp_path, host_=host(("other", Other()))) as run:
        result = await cell(run, "'tool' in dir(), 6 * 7", language="other")
        assert result.text == "(False, 42)"
