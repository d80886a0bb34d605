"""The idioms typed by reflex: %pip (with module eviction), %cd, !cmd (stdin closed), %%bash,
%%timeit — natively in ipykernel, and rewritten for a kernel that is not IPython."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from livetools import hookimpl
from livetools_eval import KernelSpec
from livetools_eval.builtin import ipykernel_argv
from tests.eval.support import cell, host, open_run, wheel

PROBE = "ltevalprobe"


def uninstall_probe() -> None:
    if subprocess.run([sys.executable, "-c", f"import {PROBE}"], capture_output=True).returncode:
        return
    if shutil.which("pip") or _has_pip():
        argv = [sys.executable, "-m", "pip", "uninstall", "-y", PROBE]
    else:
        argv = [os.environ.get("UV") or "uv", "pip", "uninstall", "--python", sys.executable, PROBE]
    subprocess.run(argv, capture_output=True, timeout=60)


def _has_pip() -> bool:
    import importlib.util

    return importlib.util.find_spec("pip") is not None


@pytest.fixture
def probe_wheels(tmp_path: Path):  # type: ignore[no-untyped-def]
    if not _has_pip() and not (os.environ.get("UV") or shutil.which("uv")):
        pytest.skip("neither pip nor uv can install into the kernel's interpreter")
    folder = tmp_path / "wheels"
    folder.mkdir()
    one = wheel(folder, PROBE, "1.0", "VERSION = 'one'\n")
    (folder / "v2").mkdir()
    two = wheel(folder / "v2", PROBE, "2.0", "VERSION = 'two'\n")
    uninstall_probe()
    yield one, two
    uninstall_probe()


async def test_pip_installs_into_the_kernel_and_evicts_stale_modules(
    tmp_path: Path, probe_wheels: tuple[Path, Path]
) -> None:
    one, two = probe_wheels
    async with open_run(tmp_path) as run:
        first = await cell(run, f"%pip install --no-index {one}\nimport {PROBE}\n{PROBE}.VERSION")
        assert not first.is_error, first.text
        assert first.text.endswith("'one'")
        keep = await cell(run, f"old = {PROBE}")
        assert not keep.is_error
        second = await cell(run, f"!pip install --no-index {two}")  # !pip is %pip
        assert not second.is_error, second.text
        assert f"evicted from sys.modules: {PROBE}" in second.text
        fresh = await cell(run, f"import {PROBE}\n{PROBE}.VERSION, old.VERSION")
        assert fresh.text == "('two', 'one')"


async def test_failed_pip_is_an_error_result(tmp_path: Path) -> None:
    async with open_run(tmp_path) as run:
        failed = await cell(run, "%pip install --no-index lt-no-such-package-anywhere")
        assert failed.is_error and failed.data["status"] == "error", failed.text
        assert "PipFailed: pip exited with code 1" in failed.text
        assert (await cell(run, "6 * 7")).text == "42"


async def test_shell_commands_do_not_wait_for_stdin(tmp_path: Path) -> None:
    async with open_run(tmp_path, eval_idle_timeout=60) as run:
        await cell(run, "0")  # the kernel's start is not what is timed
        t0 = time.monotonic()
        result = await cell(run, "!cat\n!echo typed | cat\n!head -c 3 /dev/stdin; echo done")
        assert time.monotonic() - t0 < 30  # a reader waiting on stdin would hang for 60 s
        assert not result.is_error, result.text
        assert result.text == "typed\ndone"
        code = await cell(run, "!exit 4\n_exit_code")
        assert code.text == "[exit code 4]\n4"
        captured = await cell(run, "files = !ls -a\n'.' in files")
        assert captured.text == "True"
        read = await cell(run, "%%bash\necho err >&2\nread line && echo got $line || echo eof")
        assert read.text == "err\neof"


async def test_cd_and_timeit(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    async with open_run(tmp_path) as run:
        moved = await cell(run, "%cd sub\nimport os\nos.getcwd()")
        assert moved.text.endswith(f"'{tmp_path / 'sub'}'")
        timed = await cell(run, "%%timeit -n 5 -r 2\nsum(range(100))")
        assert "per loop (mean ± std. dev. of 2 runs, 5 loops each)" in timed.text
        line = await cell(run, "%timeit -n 3 -r 1 sorted([3, 1, 2])")
        assert "1 run, 3 loops each" in line.text


class PlainPython:
    """A third-party kernel hook: the same ipykernel, declared as a plain Python kernel, so
    the idioms reach it rewritten (and the hook override itself is exercised)."""

    @hookimpl
    def livetools_eval_kernels(self, run: object) -> KernelSpec:
        return KernelSpec(language="python", name="plain", argv=ipykernel_argv, dialect="python")


async def test_idioms_rewritten_for_a_kernel_that_is_not_ipython(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "notes.txt").write_text("from a file\n")
    plain = host(("plain", PlainPython()))
    async with open_run(tmp_path, host_=plain) as run:
        result = await cell(run, "!echo hi | cat\n%cd sub\nimport os\nprint(os.getcwd())")
        assert run.resource("eval").live["python"].spec.name == "plain"
        assert not result.is_error, result.text
        assert result.text.splitlines()[0] == "hi"
        assert result.text.splitlines()[-1] == str(tmp_path / "sub")
        shell = await cell(run, "%%bash\ncat || true\necho from bash")
        assert shell.text == "from bash"
        timed = await cell(run, "%%timeit -n 2 -r 2\nx = 1")
        assert "2 loops each" in timed.text
        bridged = await cell(run, "tool('read', {'path': 'notes.txt'}).text")
        assert bridged.text == "'from a file\\n'"
        unknown = await cell(run, "%load_ext autoreload")
        assert unknown.is_error and "%load_ext is not available" in unknown.text
