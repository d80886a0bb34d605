"""A real worker for the command backend: reads its brief on stdin and obeys it line by line.

  say TEXT         print TEXT (stdout is the result)
  err TEXT         print TEXT to stderr
  exit N           exit with status N
  sleep S          sleep S seconds
  hold S           sleep S seconds unless the brief has a follow-up (so a re-run finishes)
  pidfile NAME     write this process's pid to NAME (relative to the working directory)
  tree NAME        start a grandchild in this session and one that leaves it (setsid) with a
                   child of its own; write the three pids to NAME once they all run
  brief            print the whole brief
  env              print LIVETOOLS_SURFACE, LIVETOOLS_WORKER, LIVETOOLS_WORKER_ID, tier
  argv             print this script's extra arguments
  cwd              print the working directory (inside a sandbox: the root as it sees it)
  livetools ARGS   run `livetools ARGS` (the CLI of this interpreter, testkit plugin only) and
                   print its stdout; `session` reads the rest of the line after ' <<< ' as input
Other lines (a follow-up's text) are ignored.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[1] / "fixtures" / "plugins"
SLEEPER = "import time; time.sleep(600)"


def start_tree(name: str) -> None:
    inner = subprocess.Popen([sys.executable, "-c", SLEEPER])
    leaver_code = (
        "import os, subprocess, sys, time\n"
        "os.setsid()\n"
        f"child = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    leaver = subprocess.Popen([sys.executable, "-c", leaver_code], stdout=subprocess.PIPE)
    assert leaver.stdout is not None
    great = int(leaver.stdout.readline())
    while os.getsid(leaver.pid) != leaver.pid:  # setsid has happened
        time.sleep(0.01)
    write_atomically(name, f"{inner.pid}\n{leaver.pid}\n{great}\n")


def write_atomically(name: str, text: str) -> None:
    tmp = Path(name + ".tmp")
    tmp.write_text(text)
    tmp.replace(name)


def run_livetools(args: str) -> None:
    words, stdin = args, None
    if " <<< " in args:
        words, stdin = args.split(" <<< ", 1)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS), env.get("PYTHONPATH")) if p)
    env["LIVETOOLS_PLUGINS"] = "testkit"
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", *shlex.split(words)],
        input=(stdin + "\n") if stdin is not None else None,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)


def main() -> None:
    brief = sys.stdin.read()
    followed_up = "--- follow-up" in brief
    for line in brief.splitlines():
        verb, _, rest = line.strip().partition(" ")
        if verb == "say":
            print(rest, flush=True)
        elif verb == "err":
            print(rest, file=sys.stderr, flush=True)
        elif verb == "exit":
            sys.exit(int(rest))
        elif verb == "sleep" or (verb == "hold" and not followed_up):
            time.sleep(float(rest))
        elif verb == "pidfile":
            write_atomically(rest, f"{os.getpid()}\n")
        elif verb == "tree":
            start_tree(rest)
        elif verb == "brief":
            print(brief, flush=True)
        elif verb == "env":
            keys = ("LIVETOOLS_SURFACE", "LIVETOOLS_WORKER", "LIVETOOLS_WORKER_ID")
            print(" ".join(f"{k}={os.environ.get(k)}" for k in (*keys, "LIVETOOLS_VIBE_TIER")))
        elif verb == "cwd":
            print(os.getcwd(), flush=True)
        elif verb == "argv":
            print("argv:", " ".join(sys.argv[1:]), flush=True)
        elif verb == "livetools":
            run_livetools(rest)


if __name__ == "__main__":
    main()
