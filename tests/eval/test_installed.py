"""Installed Jupyter kernels nobody here wrote: IRkernel (Debian r-cran-irkernel) and bash_kernel
(PyPI), found through their kernelspecs; plugins/eval/test-deps.sh installs both."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from livetools_eval.installed import kernel_dirs
from tests.eval.support import cell, kernel_pids, open_run
from tests.eval.test_python import gone
from tests.support import REQUIRE_ENV, require_binary

HOW = "run plugins/eval/test-deps.sh"


def need_kernelspec(name: str) -> None:
    if not any((d / name / "kernel.json").is_file() for d in kernel_dirs(Path.cwd())):
        message = f"kernelspec {name!r} not installed: {HOW}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)


async def test_r_kernel_state_rich_errors_bridge_interrupt_restart(tmp_path: Path) -> None:
    require_binary("R", HOW)
    need_kernelspec("ir")
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    async with open_run(tmp_path, eval_idle_timeout=60) as run:
        status = await run.resource("eval").status()
        assert status["kernels"]["r"]["kernel"] == "ir" and status["kernels"]["r"]["usable"]
        assert (await cell(run, "x <- 41\nx + 1", language="r")).text == "42"
        assert (await cell(run, "x * 2", language="r")).text == "82"
        frame = await cell(run, "data.frame(name = c('ada', 'bob'), n = 3:4)", language="r")
        assert "ada" in frame.text and any(
            "<table" in r.get("text/html", "") for r in frame.data["rich"]
        )
        assert "<chr>" in frame.text and "&lt;" not in frame.text, frame.text  # column types
        plot = await cell(run, "plot(1:3)", language="r")
        assert len(plot.images) == 1 and plot.images[0][:4] == b"\x89PNG"
        failed = await cell(run, "stop('boom')", language="r")
        assert failed.is_error and "boom" in failed.text
        read = await cell(run, "tool('read', list(path = 'notes.txt'))", language="r")
        assert read.text == "alpha\nbeta", read.text
        missing = await cell(run, "tool('read', list(path = 'nope'))", language="r")
        assert missing.is_error and "no file nope" in missing.text
        magic = await cell(run, "%pip install x", language="r")  # no IPython idioms here
        assert magic.is_error and "unexpected" in magic.text, magic.text
        reset = await cell(run, "exists('x')", language="r", reset=True)
        assert reset.text.endswith("FALSE") and "reset" in reset.text
        pids = kernel_pids(run)
        assert len(pids) == 2 and gone(pids[0])
    assert all(gone(pid) for pid in pids)


async def test_r_kernel_interrupt_keeps_state(tmp_path: Path) -> None:
    require_binary("R", HOW)
    need_kernelspec("ir")
    async with open_run(tmp_path, eval_idle_timeout=2, eval_interrupt_grace=10) as run:
        await cell(run, "kept <- 7", language="r")
        t0 = time.monotonic()
        busy = await cell(run, "Sys.sleep(120)", language="r")
        assert time.monotonic() - t0 < 60
        assert busy.data["status"] == "interrupted", busy.text
        assert (await cell(run, "kept", language="r")).text == "7"


async def test_bash_kernel_state_errors_no_bridge_interrupt_restart(tmp_path: Path) -> None:
    need_kernelspec("bash")
    async with open_run(tmp_path, eval_idle_timeout=2, eval_interrupt_grace=10) as run:
        assert (await cell(run, "X=41; echo $((X + 1))", language="bash")).text == "42"
        assert (await cell(run, "echo $X", language="bash")).text == "41"
        failed = await cell(run, "ls /nonexistent-dir-lt", language="bash")
        assert "No such file or directory" in failed.text
        bridge = await cell(run, "tool read notes.txt", language="bash")
        assert "this kernel has no stdin channel" in bridge.text
        assert bridge.text.endswith("(exit status 2)"), bridge.text  # not a bare ": 2"
        t0 = time.monotonic()
        busy = await cell(run, "sleep 120", language="bash")
        assert time.monotonic() - t0 < 60
        assert busy.data["status"] in ("interrupted", "error"), busy.text
        assert (await cell(run, "echo $X", language="bash")).text == "41"
        reset = await cell(run, 'echo "[$X]"', language="bash", reset=True)
        assert reset.text.endswith("[]") and "reset" in reset.text
        pids = kernel_pids(run)
    assert all(gone(pid) for pid in pids)


async def test_kernelspecs_of_the_project_venv_are_found_and_explained(tmp_path: Path) -> None:
    import json
    import sys

    kernels = tmp_path / ".venv" / "share" / "jupyter" / "kernels"
    specs = {
        "ghost": {"argv": ["lt-no-such-binary", "{connection_file}"], "language": "Ghost"},
        "pyother": {"argv": [sys.executable, "-c", "0", "{connection_file}"], "language": "python"},
        "broken": "{not json",
        "ipy": {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]},
    }
    for name, spec in specs.items():
        (kernels / name).mkdir(parents=True)
        text = spec if isinstance(spec, str) else json.dumps({"display_name": name, **spec})
        (kernels / name / "kernel.json").write_text(text)
    async with open_run(tmp_path) as run:
        status = await run.resource("eval").status()
        ghost = status["kernels"]["ghost"]
        assert not ghost["usable"] and "lt-no-such-binary not found" in ghost["reason"]
        assert status["kernels"]["pyother"]["kernel"] == "pyother"  # python is taken: by name
        left_out = status["kernelspecs_left_out"]
        assert "unreadable kernel.json" in left_out["broken"]
        assert "built-in python kernel" in left_out["ipy"]
        missing = await cell(run, "1", language="ghost")
        assert missing.is_error and "lt-no-such-binary not found" in missing.text
    async with open_run(tmp_path, eval_kernelspecs=False) as run:
        assert "ghost" not in run.resource("eval").specs
