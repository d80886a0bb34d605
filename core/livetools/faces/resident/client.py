"""The fast path of `livetools call`: read the command line cheaply, find the resident whose key
matches, send it one JSON line and write back what it answers. Stdlib only (os, sys, json,
socket, hashlib): the point is not to import the host, pluggy and pydantic.

Anything the resident cannot answer exactly as an in-process call would returns None, and the
caller runs the call in-process as before: an option this parser does not know (argparse then
says what is wrong), `--help`, `--approve ask` or ask_user with a terminal (both need this
process's terminal), no resident for the key, a stale socket (its file is removed), a state
directory that is not safely ours."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys

from . import keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONNECT_TIMEOUT = 2.0
VALUED = {"--root", "--surface", "--option", "--sandbox", "--sandbox-wrap", "--sandbox-root"}
VALUED |= {"--approve"}
FLAGS = {"--json", "--vibe"}
CHOICES = {"--sandbox": ("bwrap", "none"), "--approve": ("allow", "deny")}  # not ask: a human


def parse_call(argv: list[str]) -> dict[str, Any] | None:
    """`call TOOL [ARGS_JSON] [options]` as a dict, or None for anything unusual."""
    if not argv or argv[0] != "call":
        return None
    seen: dict[str, Any] = {"--option": []}
    positional: list[str] = []
    items = iter(argv[1:])
    for item in items:
        if item.startswith("-"):
            name, eq, value = item.partition("=")
            if name in FLAGS and not eq:
                seen[name] = True
            elif name in VALUED:
                if not eq:
                    value = next(items, None)
                    if value is None or value.startswith("-"):
                        return None
                if name not in CHOICES or value in CHOICES[name]:
                    if name == "--option":
                        seen[name].append(value)
                    else:
                        seen[name] = value
                else:
                    return None
            else:
                return None  # --help, --, abbreviations, unknown flags: argparse's business
        else:
            positional.append(item)
    if not 1 <= len(positional) <= 2 or ("--sandbox" in seen and "--sandbox-wrap" in seen):
        return None
    return {
        "tool": positional[0],
        "args": positional[1] if len(positional) > 1 else None,
        "json": bool(seen.get("--json")),
        "root": seen.get("--root", "."),
        "surface": seen.get("--surface"),
        "pairs": seen["--option"],
        "vibe": bool(seen.get("--vibe")),
        "approve": seen.get("--approve"),
        "sandbox": seen.get("--sandbox"),
        "sandbox_wrap": seen.get("--sandbox-wrap"),
        "sandbox_root": seen.get("--sandbox-root"),
    }


def call_key(call: dict[str, Any]) -> str | None:
    """The key of the run this call would open, or None when its options are bad (the
    in-process path reports that) or its root is not a directory."""
    if not os.path.isdir(call["root"]):
        return None
    try:
        options = keys.run_options(
            call["pairs"],
            vibe=call["vibe"],
            approve=call["approve"],
            sandbox=call["sandbox"],
            sandbox_wrap=call["sandbox_wrap"],
            sandbox_root=call["sandbox_root"],
        )
    except keys.OptionError:
        return None
    return keys.run_key(call["root"], call["surface"], options)


def connect(path: str, lock: str) -> socket.socket | None:
    """A connected socket, or None; a socket file nobody listens on, whose lock is free (its
    resident is dead), is removed."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(path)
    except FileNotFoundError:
        sock.close()
        return None
    except OSError:
        sock.close()
        remove_if_stale(path, lock)
        return None
    return sock


def remove_if_stale(path: str, lock: str) -> bool:
    """Remove the socket when no resident holds its lock (checked, not guessed from a refusal:
    a resident may be between creating and listening)."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        fd = None
    except OSError:
        return False
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return True
    except OSError:
        return False  # held: the resident lives
    finally:
        if fd is not None:
            os.close(fd)


def request(sock: socket.socket, message: dict[str, Any], timeout: float | None) -> Any:
    """Send one JSON line, read one back (None when the resident closed without a line)."""
    sock.sendall(json.dumps(message).encode() + b"\n")
    sock.settimeout(timeout)
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        if chunk.endswith(b"\n"):
            chunks.append(chunk)
            break
        chunks.append(chunk)
    return json.loads(b"".join(chunks))


def ask(path: str, lock: str, message: dict[str, Any], timeout: float | None = 10.0) -> Any:
    """One request to the resident at `path`: its answer, or None (none there, or it closed)."""
    sock = connect(path, lock)
    if sock is None:
        return None
    with sock:
        try:
            return request(sock, message, timeout)
        except (OSError, ValueError):
            return None


def serve_call(argv: list[str]) -> int | None:
    """Run `livetools call ...` through a matching resident: the exit code, or None when the
    caller must run it in-process."""
    call = parse_call(argv)
    if call is None or os.environ.get(keys.DISABLE_ENV) == "0":
        return None
    if call["tool"] == "ask_user" and not os.environ.get("LIVETOOLS_WORKER"):
        with contextlib.suppress(ValueError, OSError):
            if sys.stdin.isatty():
                return None  # in-process, it asks on this terminal
    key = call_key(call)
    if key is None:
        return None
    try:
        files = keys.paths(keys.state_dir(), key)
    except OSError:
        return None
    sock = connect(files["sock"], files["lock"])
    if sock is None:
        return None
    message = {"op": "call", "key": key, "tool": call["tool"], "args": call["args"]}
    message["json"] = call["json"]
    with sock:
        try:
            answer = request(sock, message, None)  # the resident bounds the call itself
        except (OSError, ValueError):
            answer = None
    if not isinstance(answer, dict) or "code" not in answer:
        if isinstance(answer, dict) and answer.get("fallback"):
            return None  # it refused before running anything (e.g. stopping): run it here
        sys.stderr.write("livetools: the resident run ended before answering this call\n")
        return 1
    harden_stdio()
    try:
        sys.stdout.write(answer["stdout"])
        sys.stdout.flush()
    except BrokenPipeError:
        return quiet_broken_pipe()
    sys.stderr.write(answer["stderr"])
    return int(answer["code"])


def harden_stdio() -> None:
    """As the in-process command does: output never fails to encode."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")


def quiet_broken_pipe() -> int:
    """The reader went away: point stdout at /dev/null so the final flush cannot complain."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 141
