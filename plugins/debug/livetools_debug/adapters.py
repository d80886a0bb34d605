"""What a debug adapter is to the `debug` tool: how to start it, when it applies, how to launch.

An `Adapter` is plain data plus two config builders, so a third-party plugin can describe a new
adapter without touching the session machinery (see docs/debug.md).
"""

from __future__ import annotations

import mmap
import os
import re
import shutil
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from livetools.detection import Detection, detect
from livetools.sandbox import Sandbox, SandboxBroken, lookup

from . import rust

Transport = Literal["stdio", "tcp"]


@dataclass(frozen=True)
class LaunchInfo:
    """What a launch-config builder gets: absolute paths, all inside the run root."""

    program: Path
    args: list[str]
    cwd: Path  # the project directory (where the root marker was found)
    root: Path
    # The run's sandbox, where the adapter runs and starts the debuggee. Paths stay host paths
    # here: the DAP wire maps them to the inside (see Session).
    sandbox: Sandbox | None = None
    just_my_code: bool = True  # False: breakpoints and stops in installed packages too
    module: str | None = None  # run this module (`python -m`) instead of `program`
    env: dict[str, str] = field(default_factory=dict)  # added to the debuggee's environment
    stop_on_entry: bool = False


@dataclass(frozen=True)
class AttachInfo:
    host: str
    port: int  # 0 with a pid
    cwd: Path
    root: Path
    sandbox: Sandbox | None = None
    pid: int | None = None  # attach to this local process instead of a port


@dataclass(frozen=True)
class Adapter:
    """One debug adapter.

    `command` is the argv; its first element is replaced by the first of `binaries` that resolves
    (default: itself). For `transport="tcp"` the argv may hold `{host}` and `{port}`: with
    `dial_in` we listen and the adapter connects to us (dlv `--client-addr`), otherwise the
    adapter listens on that port and we connect. `attach_direct` means `attach(port)` talks DAP
    straight to that port (a `debugpy --listen` or headless dlv endpoint is itself an adapter)."""

    id: str
    command: tuple[str, ...]
    launch_config: Callable[[LaunchInfo], dict[str, Any]]
    transport: Transport = "stdio"
    markers: tuple[str, ...] = ()
    binaries: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    # Also looked up inside a sandbox, after `binaries`: the plugin's own interpreter (debugpy's
    # default) exists in a bubblewrap jail that shows the host's folders, not in a container.
    sandbox_binaries: tuple[str, ...] = ()
    probe_args: tuple[str, ...] | None = ("--version",)
    requires: tuple[str, ...] = ()  # other binaries the launch needs on PATH (go for delve)
    extensions: tuple[str, ...] = ()  # program suffixes this adapter is chosen for
    claims: Callable[[Path], bool] | None = None  # overrides `extensions`
    attach_config: Callable[[AttachInfo], dict[str, Any]] | None = None
    attach_direct: bool = False
    dial_in: bool = False
    exception_filters: tuple[str, ...] = ()  # enabled when the adapter declares them
    stdout_is_output: bool = False  # the adapter's own stdout carries the debuggee's output
    stdout_ignore: str | None = None  # regex of adapter chatter lines in the program's output
    exit_pattern: str | None = None  # regex with one group: exit code in console output
    # An expression that writes `{marker}` + newline to the debuggee's stdout and stderr pipes
    # (after flushing): evaluated at a stop, its arrival proves the output before it arrived.
    # It evaluates to the fds it wrote ("12", "1", ...); streams it left alone are not awaited.
    output_sync: str | None = None
    internal_frames: str | None = None  # regex of traceback paths that are the adapter's own
    # Evaluated once per session at its first stop, with no frame (before anything else is
    # asked there): a setting inside the debuggee that the adapter offers no request for.
    first_stop: str | None = None
    modules: bool = False  # launches a module by name (`options.module`)
    # stop_on_entry as a function breakpoint on this function, for the first stop only: dlv's
    # own entry stop comes before the Go runtime has a goroutine ("unknown goroutine 1": no stack)
    entry_function: str | None = None
    # A console line of the adapter saying a step was cut short by a breakpoint elsewhere, after
    # which it steps again only once `continue` has finished that step (dlv).
    step_interrupted: str | None = None
    evaluate_context: str = "repl"
    unverified_hint: str | None = None  # shown when a breakpoint is unverified without a message
    init_timeout: float = 30.0  # launch -> `initialized` (delve compiles first)
    description: str = ""

    def binary_names(self, sandboxed: bool = False) -> tuple[str, ...]:
        names = self.binaries() if callable(self.binaries) else self.binaries
        names = tuple(names) or (self.command[0],)
        return tuple(dict.fromkeys([*names, *self.sandbox_binaries])) if sandboxed else names

    def handles(self, program: Path) -> bool:
        if self.claims is not None:
            return self.claims(program)
        return program.suffix in self.extensions

    def argv(self, binary: str, host: str = "", port: int = 0) -> list[str]:
        rest = [part.format(host=host, port=port) for part in self.command[1:]]
        return [binary, *rest]


@dataclass(frozen=True)
class Usable:
    """Detection of one adapter for one start path: usable, or the reason it is not."""

    adapter: Adapter
    detection: Detection
    missing: tuple[str, ...] = field(default=())
    sandbox: Sandbox | None = None  # where it was looked up (None: the host)

    @property
    def usable(self) -> bool:
        return self.detection.usable and not self.missing

    @property
    def reason(self) -> str | None:
        if not self.detection.usable:
            return self.detection.reason
        if self.missing:
            where = "PATH" if self.sandbox is None else f"PATH inside sandbox {self.sandbox.name}"
            return f"binary not on {where}: {', '.join(self.missing)} (needed to launch)"
        return None


async def check(
    adapter: Adapter, start: Path, root: Path, sandbox: Sandbox | None = None
) -> Usable:
    """Root marker ∧ binary resolves ∧ health probe, then the extra binaries it needs. With a
    sandbox all of it is looked up and probed inside: the adapter runs there, not here."""
    found = await detect(
        start,
        root,
        markers=adapter.markers,
        binaries=adapter.binary_names(sandbox is not None),
        probe_args=adapter.probe_args,
        sandbox=sandbox,
    )
    missing: tuple[str, ...] = ()
    if found.usable and sandbox is None:
        missing = tuple(b for b in adapter.requires if shutil.which(b) is None)
    elif found.usable and sandbox is not None:
        try:
            inside = await lookup(sandbox, adapter.requires)
        except SandboxBroken as exc:
            found = replace(found, usable=False, reason=str(exc))
        else:
            missing = tuple(b for b in adapter.requires if inside.get(b) is None)
    return Usable(adapter, found, missing, sandbox)


# -- built-in adapters ---------------------------------------------------------------------------


def project_python(cwd: Path, root: Path, sandbox: Sandbox | None = None) -> str:
    """The debuggee interpreter: the project's own venv before PATH. A python from PATH is another
    environment, and debugging the wrong one fails in a way that reads like broken code.
    In a sandbox the venv is the root's (the wire maps its path inside); without one, a bare
    `python3` that the launcher resolves on the sandbox's own PATH, not a host path."""
    for base in dict.fromkeys([cwd, root]):
        for venv in (".venv", "venv"):
            candidate = base / venv / "bin" / "python"
            if os.access(candidate, os.X_OK):
                return str(candidate)
    if sandbox is not None:
        return "python3"
    return shutil.which("python3") or shutil.which("python") or "python3"


def _debugpy_launch(info: LaunchInfo) -> dict[str, Any]:
    python = None if info.module else script_python(info.program, info.root, info.sandbox)
    config: dict[str, Any] = {
        "type": "debugpy",
        "request": "launch",
        "args": info.args,
        "cwd": str(info.cwd),
        "console": "internalConsole",  # integratedTerminal needs runInTerminal: it hangs
        "redirectOutput": True,
        "justMyCode": info.just_my_code,
        "stopOnEntry": info.stop_on_entry,
        "python": [python or project_python(info.cwd, info.root, info.sandbox)],
        "subProcess": False,  # else a child waits for a debugger and the parent never ends
    }
    if info.module:
        config["module"] = info.module
    else:
        config["program"] = str(info.program)
    if info.env:
        config["env"] = dict(info.env)
    return config


def python_shebang(program: Path) -> str | None:
    """The interpreter a script's `#!` line names when it is a Python one (`#!/x/.venv/bin/python`,
    `#!/usr/bin/env python3`): a console script such as `.venv/bin/sqlformat` has no .py suffix."""
    try:
        if not stat.S_ISREG(program.stat().st_mode):
            return None  # opening a FIFO blocks
        with program.open("rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = words[1:]
    if words and re.fullmatch(r"python(\d+(\.\d+)?)?", os.path.basename(words[0])):
        return words[0]
    return None


def _is_python(program: Path) -> bool:
    return program.suffix == ".py" or (program.suffix == "" and python_shebang(program) is not None)


def script_python(program: Path, root: Path, sandbox: Sandbox | None) -> str | None:
    """A console script's own interpreter (its venv's, which has its packages), when the
    shebang names one that exists: inside the root only, in a sandbox (the wire maps those)."""
    named = python_shebang(program) if program.suffix != ".py" else None
    if named is None or not os.path.isabs(named) or not os.access(named, os.X_OK):
        return None
    if sandbox is not None and not Path(named).is_relative_to(root):
        return None
    return named


# Runs in the stopped frame. It writes the marker only down fds 1 and 2 that are still pipes (the
# launcher's): a program that pointed one at a file of its own must not find our marker in it.
# It answers which fds it wrote, so the sync waits for those streams only.
_DEBUGPY_SYNC_SOURCE = """
import os, stat, sys
def livetools_sync():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    written = ''
    for fd in (1, 2):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, MARKER)
                written += str(fd)
        except OSError:
            pass
    return written
"""
_DEBUGPY_OUTPUT_SYNC = (
    "(lambda ns: (exec(" + repr(_DEBUGPY_SYNC_SOURCE) + ", ns), ns['livetools_sync']())[1])"
    "({{'MARKER': b'{marker}\\n'}})"
)


# pydevd writes each message's header and body in two send() calls on a socket without
# TCP_NODELAY: Nagle holds the body until the header's ACK, which the adapter's end delays ~40 ms.
# Every request to debugpy cost 44 ms of that (a step: `next` + `stackTrace` + the output sync =
# 132 ms; 3.6 ms with it set). pydevd sets the same option itself before a process exec.
_DEBUGPY_NODELAY = (
    "(lambda socket, db: db.writer.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1))"
    "(__import__('socket'), __import__('pydevd').get_global_debugger())"
)


def _debugpy_attach(info: AttachInfo) -> dict[str, Any]:
    config = {"type": "debugpy", "request": "attach", "justMyCode": True, "subProcess": False}
    if info.pid is not None:
        config["processId"] = info.pid  # the adapter injects debugpy (with gdb) and connects
    return config


def _python_binary() -> tuple[str, ...]:
    import sys

    return (sys.executable,)


DEBUGPY = Adapter(
    id="debugpy",
    command=("python", "-m", "debugpy.adapter"),
    binaries=_python_binary,  # the plugin's own interpreter, which has debugpy
    sandbox_binaries=("python3", "python"),  # a sandbox without it: its python, if it has debugpy
    probe_args=("-c", "import debugpy"),
    markers=("pyproject.toml", "setup.py", "requirements.txt"),
    claims=_is_python,  # a .py file or a script with a python shebang (a console script)
    launch_config=_debugpy_launch,
    attach_config=_debugpy_attach,
    attach_direct=True,
    exception_filters=("uncaught",),
    # pydevd's own complaints, written to the debuggee's stderr
    stdout_ignore=r"thread\._ident is None in _get_related_thread!",
    # The launcher relays the program's pipes on a path of its own, behind the `stopped` event
    # (about 100,000 short lines behind, measured): a marker down the same pipes syncs them.
    output_sync=_DEBUGPY_OUTPUT_SYNC,
    internal_frames=r"[/\\](runpy\.py|debugpy[/\\])",
    first_stop=_DEBUGPY_NODELAY,
    modules=True,
    description="Python (debugpy, shipped with the plugin)",
)

_VERSIONED = re.compile(r"^(lldb-dap|lldb-vscode)-(\d+)$")


def lldb_names() -> tuple[str, ...]:
    """lldb-dap, lldb-vscode, then the versioned names found on PATH, highest version first
    (Debian ships only `lldb-vscode-NN`; LLVM 18 renamed it lldb-dap)."""
    versioned: list[tuple[int, str]] = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        try:
            entries = os.listdir(directory or ".")
        except OSError:
            continue
        for entry in entries:
            match = _VERSIONED.match(entry)
            if match:
                versioned.append((int(match.group(2)), entry))
    ordered = [name for _, name in sorted(versioned, key=lambda v: (-v[0], v[1]))]
    return tuple(dict.fromkeys(["lldb-dap", "lldb-vscode", *ordered]))


def _is_native_executable(program: Path) -> bool:
    try:
        if not stat.S_ISREG(program.stat().st_mode):
            return False  # opening a FIFO blocks
        with program.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def built_on_host(program: Path, sandbox: Sandbox | None) -> tuple[str, str] | None:
    """(host root, inside root) when `program`, to be debugged in the sandbox, names the host's
    root in its bytes: it was built on the host, so its debug info has host paths while the wire
    speaks the inside's. A binary built inside has the inside's paths and needs no mapping (and
    a mapping would break it). One pass over the file, mapped, at C speed."""
    if sandbox is None or sandbox.paths.identity:
        return None
    host = str(sandbox.paths.host)
    try:
        with program.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = data.find(host.encode()) >= 0
    except (OSError, ValueError):  # unreadable, empty, not a regular file
        return None
    return (host, str(sandbox.paths.inside)) if found else None


def _lldb_init(roots: tuple[str, str] | None = None) -> list[str]:
    """The debuggee's stdin is a pty that never ends: a read would block forever. `roots`: a
    binary built on the host, debugged in a sandbox: `target.source-map` turns its debug info's
    host paths into the inside's, which the wire speaks (inside a command string, the path map
    leaves the host path alone)."""
    commands = ["settings set target.input-path /dev/null"]
    if roots is not None:
        commands.append(f'settings set target.source-map "{roots[0]}" "{roots[1]}"')
    return commands


def _lldb_launch(info: LaunchInfo) -> dict[str, Any]:
    return {
        "request": "launch",
        "program": str(info.program),
        "args": info.args,
        "cwd": str(info.cwd),
        "stopOnEntry": info.stop_on_entry,
        "env": [f"{k}={v}" for k, v in info.env.items()],
        "initCommands": [
            *_lldb_init(built_on_host(info.program, info.sandbox)),
            # rustc's formatters: Strings, Vecs and HashMaps read like Rust
            *rust.init_commands(info.program, info.sandbox is None or info.sandbox.paths.identity),
        ],
    }


def _lldb_attach(info: AttachInfo) -> dict[str, Any]:
    """`gdb-remote` runs synchronously: in lldb's default async mode it returns before the
    process's public state leaves "unloaded" (that happens when lldb-dap's event thread takes
    the stop event), and lldb-dap's wait after attachCommands fails at once on "unloaded"
    ("process unloaded during launch or attach": 11 of 15 attaches with lldb-vscode-16 sharing
    one busy core, 0 of 15 synchronous). Without Python in lldb the `script` lines only fail."""
    if info.pid is not None:
        return {"request": "attach", "pid": info.pid, "initCommands": _lldb_init()}
    return {
        "request": "attach",
        "attachCommands": [
            "script lldb.debugger.SetAsync(False)",
            f"gdb-remote {info.host}:{info.port}",
            "script lldb.debugger.SetAsync(True)",
        ],
        "initCommands": _lldb_init(),  # a server in a sandbox runs a binary built there
    }


LLDB = Adapter(
    id="lldb",
    command=("lldb-dap",),
    binaries=lldb_names,
    probe_args=("--help",),  # lldb-vscode-16 has no --version
    markers=("Cargo.toml", "CMakeLists.txt", "Makefile", "meson.build"),
    claims=_is_native_executable,
    launch_config=_lldb_launch,
    attach_config=_lldb_attach,
    unverified_hint="no code at this line in the binary: build with -g -O0 (or a debug build)",
    description="C, C++, Rust executables built with -g (lldb-dap / lldb-vscode)",
)


def _is_go(program: Path) -> bool:
    if program.is_dir():
        return (program / "go.mod").exists() or any(program.glob("*.go"))
    return program.suffix == ".go"


def _delve_launch(info: LaunchInfo) -> dict[str, Any]:
    program = info.program
    if program.is_file() and program.suffix != ".go":
        mode, target = "exec", program  # a prebuilt binary (needs -gcflags='all=-N -l')
    else:
        mode, target = "debug", program if program.is_dir() else program.parent
    config: dict[str, Any] = {
        "request": "launch",
        "mode": mode,
        "program": str(target),
        "args": info.args,
        "cwd": str(info.cwd),
        "stopOnEntry": info.stop_on_entry,
    }
    if info.env:
        config["env"] = dict(info.env)
    # mode debug builds inside (the inside's paths); a binary built on the host names host paths:
    # `to` is the binary's side, which the wire leaves alone (see session.dap_maps).
    roots = built_on_host(program, info.sandbox) if mode == "exec" else None
    if roots is not None:
        config["substitutePath"] = [{"from": roots[1], "to": roots[0]}]
    return config


def _delve_attach(info: AttachInfo) -> dict[str, Any]:
    if info.pid is not None:
        return {"request": "attach", "mode": "local", "processId": info.pid}
    return {"request": "attach", "mode": "remote"}


DELVE = Adapter(
    id="delve",
    command=("dlv", "dap", "--client-addr={host}:{port}"),
    transport="tcp",
    dial_in=True,
    probe_args=("version",),
    requires=("go",),
    markers=("go.mod",),
    claims=_is_go,
    launch_config=_delve_launch,
    attach_config=_delve_attach,
    unverified_hint="no statement here: launch the package, or build with -gcflags='all=-N -l'",
    attach_direct=True,
    stdout_is_output=True,  # delve 1.20 sends no output events for the debuggee
    # dlv's own chatter on that stdout: its banner and its log lines ("... error layer=dap ...")
    stdout_ignore=r"^(DAP server listening at|Type 'dlv help')|^\S+ \w+ layer=\w+ ",
    exit_pattern=r"Process \d+ has exited with status (-?\d+)",
    step_interrupted=r"^Step interrupted by a breakpoint",
    entry_function="main.main",
    init_timeout=120.0,  # mode debug compiles first: 12 s with a cold build cache
    description="Go (dlv dap)",
)


def _dart_launch(info: LaunchInfo) -> dict[str, Any]:
    return {
        "type": "dart",
        "request": "launch",
        "program": str(info.program),
        "args": info.args,
        "cwd": str(info.cwd),
        "env": dict(info.env),
    }


DART = Adapter(
    id="dart",
    command=("dart", "debug_adapter"),
    markers=("pubspec.yaml",),
    extensions=(".dart",),
    launch_config=_dart_launch,
    description="Dart (dart debug_adapter)",
)

BUILTIN: Sequence[Adapter] = (DEBUGPY, LLDB, DELVE, DART)
