"""The reaper: a tiny process that kills our children's sessions when the host dies.

PR_SET_PDEATHSIG only covers direct children; a grandchild (a debuggee, a server's worker)
survives a SIGKILLed host. The host starts this script once, in its own session and without
PDEATHSIG, and writes `+<sid>` / `-<sid>` lines to its stdin. When stdin reaches EOF, the host is
gone (exited or killed): every tracked session is SIGKILLed, then the reaper exits.

It is run by path (`python -E -s -S .../reaper.py`), so it loads only the stdlib and its sibling
sessions.py: never the livetools package, pydantic or plugins.
"""

from __future__ import annotations

import sys

if __package__:
    from .sessions import kill_session
else:  # run by path: this folder is sys.path[0]
    from sessions import kill_session  # pyright: ignore[reportMissingImports]


def main() -> None:
    sids: set[int] = set()
    for raw in sys.stdin.buffer:
        line = raw.strip()
        try:
            sid = int(line[1:])
        except ValueError:
            continue
        if line.startswith(b"+"):
            sids.add(sid)
        elif line.startswith(b"-"):
            sids.discard(sid)
    for sid in sids:
        kill_session(sid)


if __name__ == "__main__":
    main()
