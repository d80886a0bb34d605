"""A misbehaving DAP adapter for the fault tests (what a real adapter cannot do on demand).

`python fake_adapter.py MODE`:
  hang         never answers anything
  garbage      answers `initialize` with bytes that are not a frame
  crash        answers `initialize`, then dies on `launch` with a message on stderr
  stall-stack  a working session that stops at once and never answers `stackTrace`
  die-stopped  a working session that stops at once, then exits on `threads`
  one-thread   declares singleThread; stops thread 1, and thread 2 while the client reads
               thread 1's stack; `continue` without singleThread is refused at first; with it
               only that thread runs
"""

from __future__ import annotations

import json
import os
import sys
import time


def read() -> dict | None:
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    assert length is not None
    return json.loads(sys.stdin.buffer.read(length))


def send(message: dict) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def reply(request: dict, body: dict | None = None) -> None:
    send(
        {
            "seq": 0,
            "type": "response",
            "request_seq": request["seq"],
            "command": request["command"],
            "success": True,
            "body": body or {},
        }
    )


def refusal(request: dict) -> dict:
    return {
        "seq": 0,
        "type": "response",
        "request_seq": request["seq"],
        "command": request["command"],
        "success": False,
    }


def event(name: str, body: dict | None = None) -> None:
    send({"seq": 0, "type": "event", "event": name, "body": body or {}})


def main(mode: str) -> None:
    resumed: set[int] = set()
    second_stop_sent = False
    while (request := read()) is not None:
        command = request.get("command")
        if mode == "hang":
            continue
        if mode == "garbage":
            sys.stdout.buffer.write(b"this is not DAP\r\n\r\n")
            sys.stdout.buffer.flush()
            continue
        if command == "initialize":
            single = mode == "one-thread"
            reply(
                request,
                {
                    "supportsConfigurationDoneRequest": True,
                    "supportsSingleThreadExecutionRequests": single,
                },
            )
        elif command == "launch":
            if mode == "crash":
                sys.stderr.write("fake adapter: boom while launching\n")
                sys.stderr.flush()
                os._exit(3)
            event("initialized")
            reply(request)
        elif command == "configurationDone":
            reply(request)
            if mode == "one-thread":
                event("stopped", {"reason": "breakpoint", "threadId": 1})
            else:
                event("stopped", {"reason": "entry", "threadId": 1})
        elif command == "threads":
            if mode == "die-stopped":
                os._exit(4)
            threads = [{"id": 1, "name": "main"}, {"id": 2, "name": "worker"}]
            reply(request, {"threads": threads[: 2 if mode == "one-thread" else 1]})
        elif command == "stackTrace":
            if mode == "stall-stack" and time.monotonic() - START > 0:
                continue
            if mode == "one-thread" and not second_stop_sent:
                # Thread 2 stops while the client is still reading thread 1's stop.
                second_stop_sent = True
                event("stopped", {"reason": "breakpoint", "threadId": 2})
            reply(request, {"stackFrames": [], "totalFrames": 0})
        elif command == "continue" and mode == "one-thread":
            if request["arguments"].get("singleThread"):
                reply(request, {"allThreadsContinued": False})
                resumed.add(request["arguments"]["threadId"])
            elif not resumed:  # thread 2 still waits to be seen: resuming it too loses it
                send({**refusal(request), "message": "expected singleThread"})
            else:
                reply(request)
                event("terminated")
        elif command == "disconnect":
            reply(request)
            return
        else:
            reply(request)


START = time.monotonic()

if __name__ == "__main__":
    main(sys.argv[1])
