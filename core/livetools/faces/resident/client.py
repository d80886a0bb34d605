"""The fast path of `livetools call`: read the command line cheaply, find the resident whose key
matches, send it one line and write back what it answers. Only C modules beyond what the
interpreter loads at start-up (_socket, _json, _blake2, fcntl): `socket`, `json` and `hashlib`
would add ~20 ms (enum, re, OpenSSL), and the host, pluggy and pydantic ~200 ms.

Anything the resident cannot answer exactly as an in-process call would returns None, and the
caller runs the call in-process as before: an option this parser does not know (argparse then
says what is wrong), `--help`, `--approve ask` or ask_user with a terminal (both need this
process's terminal), no resident for the key, a stale socket (its file is removed), a state
directory that is not safely ours."""

from __future__ import annotations

import fcntl
import os
import sys
from _json import encode_basestring_ascii as quoted
from _socket import AF_UNIX, SOCK_STREAM, socket

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


def connect(path: str, lock: str) -> socket | None:
    """A connected socket, or None; a socket file nobody listens on, whose lock is free (its
    resident is dead), is removed."""
    sock = socket(AF_UNIX, SOCK_STREAM)
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
        try:  # noqa: SIM105 - contextlib is not loaded on the fast path
            os.unlink(path)
        except FileNotFoundError:
            pass
        return True
    except OSError:
        return False  # held: the resident lives
    finally:
        if fd is not None:
            os.close(fd)


def _read_line(sock: socket) -> tuple[bytes, bytes] | None:
    """(the first line, what came after it), or None if the resident closed first."""
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return None
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line, rest


def _read_exactly(sock: socket, rest: bytes, size: int) -> bytes | None:
    chunks, got = [rest], len(rest)
    while got < size:
        chunk = sock.recv(min(1 << 20, size - got))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def request(sock: socket, message: dict[str, Any], timeout: float | None) -> Any:
    """Send one JSON line, read one back (None when the resident closed without a line); for
    `resident list/stop` and tests, where json may be imported."""
    import json

    sock.sendall(json.dumps(message).encode() + b"\n")
    sock.settimeout(timeout)
    got = _read_line(sock)
    return None if got is None else json.loads(got[0])


def ask(path: str, lock: str, message: dict[str, Any], timeout: float | None = 10.0) -> Any:
    """One request to the resident at `path`: its answer, or None (none there, or it closed)."""
    sock = connect(path, lock)
    if sock is None:
        return None
    try:
        return request(sock, message, timeout)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def call_line(key: str, call: dict[str, Any]) -> bytes:
    """The request line of a call, spelled without importing json."""
    raw = "null" if call["args"] is None else quoted(call["args"])
    as_json = "true" if call["json"] else "false"
    tool = quoted(call["tool"])
    line = f'{{"op":"call","key":{quoted(key)},"tool":{tool},"args":{raw},"json":{as_json}}}\n'
    return line.encode()


def exchange(sock: socket, line: bytes) -> tuple[int, str, str] | str | None:
    """Send a call; (code, stdout, stderr) from the answer `CODE OUT_BYTES ERR_BYTES\\n` and the
    bytes; "fallback" when the resident refused before running anything, else its error's
    text; None if it closed without an answer."""
    sock.sendall(line)
    sock.settimeout(None)  # the resident bounds the call itself (its tools' timeouts)
    got = _read_line(sock)
    if got is None:
        return None
    head, rest = got
    if head.startswith(b"{"):  # a JSON line: refused (wrong key, stopping) or an error
        import json  # the rare path

        answer = json.loads(head)
        return "fallback" if answer.get("fallback") is True else str(answer.get("error"))
    code, out_size, err_size = (int(n) for n in head.split())
    body = _read_exactly(sock, rest, out_size + err_size)
    if body is None:
        return None
    text = body.decode("utf-8", "surrogatepass")
    out, err = body[:out_size], body[out_size:]
    if len(text) != len(body):  # not ASCII: split the bytes, then decode each part
        return code, out.decode("utf-8", "surrogatepass"), err.decode("utf-8", "surrogatepass")
    return code, text[:out_size], text[out_size:]


def serve_call(argv: list[str]) -> int | None:
    """Run `livetools call ...` through a matching resident: the exit code, or None when the
    caller must run it in-process."""
    call = parse_call(argv)
    if call is None or os.environ.get(keys.DISABLE_ENV) == "0":
        return None
    if call["tool"] == "ask_user" and not os.environ.get("LIVETOOLS_WORKER"):
        try:
            if sys.stdin.isatty():
                return None  # in-process, it asks on this terminal
        except (ValueError, OSError):
            pass
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
    try:
        answer = exchange(sock, call_line(key, call))
    except (OSError, ValueError):
        answer = None
    finally:
        sock.close()
    if answer == "fallback":
        return None  # nothing ran: run it here
    if isinstance(answer, str):
        sys.stderr.write(f"livetools: resident run: {answer}\n")
        return 1
    if answer is None:
        sys.stderr.write("livetools: the resident run ended before answering this call\n")
        return 1
    code, out, err = answer
    harden_stdio()
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        return quiet_broken_pipe()
    sys.stderr.write(err)
    return code


def harden_stdio() -> None:
    """As the in-process command does: output never fails to encode."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        try:  # noqa: SIM105
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass


def quiet_broken_pipe() -> int:
    """The reader went away: point stdout at /dev/null so the final flush cannot complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141
