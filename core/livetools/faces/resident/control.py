"""`livetools resident start | stop | list`: start a detached resident process and wait until its
socket answers, stop residents (waiting until each has closed its run), list them."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..surface import UsageError
from . import client, keys
from .server import STOP_BOUND

START_TIMEOUT = 60.0  # importing the host and opening a run, on a loaded machine
POLL = 0.02


def main(
    args: argparse.Namespace,
    options: Callable[[argparse.Namespace], dict[str, Any]],
    root: Callable[[argparse.Namespace], Path],
) -> int:
    if args.action == "start":
        return start(str(root(args)), args.surface, options(args), args.idle_ttl)
    if args.action == "stop":
        return stop(None if args.all else os.path.realpath(args.root))
    return list_residents(args.json)


def _state_dir() -> str:
    try:
        return keys.state_dir(create=True)
    except OSError as exc:
        raise UsageError(f"resident state directory: {exc}") from None


def lock_free(lock: str) -> bool:
    """Nobody holds the lock: no resident process lives for it."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def ping(files: dict[str, str]) -> dict[str, Any] | None:
    answer = client.ask(files["sock"], files["lock"], {"op": "info"}, timeout=5.0)
    return answer if isinstance(answer, dict) and answer.get("ok") else None


def tail(path: str, lines: int = 20) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL)
    return True


PRUNE_AGE = 24 * 3600.0  # a stopped resident's lock and log are kept this long (for its log)


def prune(directory: str) -> None:
    """Remove the lock and log of residents long gone (every key, e.g. each temporary root,
    leaves its pair behind)."""
    now = time.time()
    for lock in glob.glob(os.path.join(directory, "*.lock")):
        files = keys.paths(directory, os.path.basename(lock)[: -len(".lock")])
        try:
            old = now - os.stat(files["log"]).st_mtime > PRUNE_AGE
        except OSError:
            old = now - os.stat(lock).st_mtime > PRUNE_AGE
        if old and not os.path.exists(files["sock"]) and lock_free(lock):
            for path in (files["log"], lock):
                with contextlib.suppress(OSError):
                    os.unlink(path)


def start(root: str, surface: str | None, options: dict[str, Any], ttl: float) -> int:
    if options.get("approve") == "ask":
        raise UsageError("a resident cannot ask a human: --approve allow or deny")
    if ttl <= 0:
        raise UsageError("--idle-ttl must be positive")
    key = keys.run_key(root, surface, options)
    directory = _state_dir()
    with contextlib.suppress(OSError):
        prune(directory)
    files = keys.paths(directory, key)
    if len(files["sock"].encode()) > 107:
        raise UsageError(f"socket path too long for a Unix socket: {files['sock']}")
    shown = f"{os.path.realpath(root)} (surface {keys.effective_surface(surface) or 'default'})"
    info = ping(files)
    if info is not None:
        print(f"a resident already serves {shown}: pid {info['pid']}")
        return 0
    if not lock_free(files["lock"]):  # one is starting or stopping: let it finish
        if not wait_until(lambda: ping(files) is not None or lock_free(files["lock"]), 15.0):
            raise UsageError(
                f"a resident for {shown} neither answers nor exits; see {files['log']}"
            )
        if (info := ping(files)) is not None:
            print(f"a resident already serves {shown}: pid {info['pid']}")
            return 0
    spec = {
        "key": key,
        "root": os.path.realpath(root),
        "surface": surface,
        "options": options,
        "ttl": ttl,
    }
    with open(files["log"], "wb") as log:
        os.chmod(files["log"], 0o600)
        proc = subprocess.Popen(
            [sys.executable, "-m", "livetools.faces.resident.server", json.dumps(spec)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=spec["root"],
            start_new_session=True,  # no controlling terminal: it outlives this shell
        )
    ok = wait_until(lambda: ping(files) is not None or proc.poll() is not None, START_TIMEOUT)
    info = ping(files)
    if info is None and proc.poll() == 0:  # another start won the lock: wait for that one
        wait_until(lambda: ping(files) is not None, START_TIMEOUT)
        info = ping(files)
    if info is None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(5)
        why = "did not answer in time" if not ok else f"exited with code {proc.returncode}"
        print(f"livetools: the resident for {shown} {why}; its log:", file=sys.stderr)
        print(tail(files["log"]), file=sys.stderr)
        return 1
    print(f"resident serves {shown}: pid {info['pid']}, idle ttl {ttl:g} s")
    return 0


def residents(directory: str) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(files, info) of every answering resident; stale sockets are removed on the way."""
    found = []
    for sock in sorted(glob.glob(os.path.join(directory, "*.sock"))):
        files = keys.paths(directory, os.path.basename(sock)[: -len(".sock")])
        info = ping(files)
        if info is not None:
            found.append((files, info))
    return found


def stop(root: str | None) -> int:
    """Stop every resident of `root` (any options), or all of them, and wait until each has
    closed its run and exited."""
    targets = [
        (files, info)
        for files, info in residents(_state_dir())
        if root is None or info["root"] == root
    ]
    if not targets:
        print("no resident runs" + (f" for {root}" if root else ""))
        return 0
    for files, _info in targets:
        client.ask(files["sock"], files["lock"], {"op": "stop"})
    code = 0
    for files, info in targets:
        if wait_until(lambda files=files: lock_free(files["lock"]), STOP_BOUND + 5):
            print(f"stopped the resident of {info['root']} (pid {info['pid']})")
        else:
            print(f"livetools: resident pid {info['pid']} did not exit", file=sys.stderr)
            code = 1
    return code


def list_residents(as_json: bool) -> int:
    found = residents(_state_dir())
    for _files, info in found:
        if as_json:
            print(json.dumps(info))
        else:
            print(
                f"{info['root']}  surface {info['surface'] or 'default'}  pid {info['pid']}  "
                f"idle {info['idle']:g}/{info['ttl']:g} s  calls {info['calls']}"
            )
    if not found and not as_json:
        print("no resident runs")
    return 0
