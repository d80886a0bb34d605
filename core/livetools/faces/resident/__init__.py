"""Resident runs: one run kept open for a root and its options, served on a Unix socket, so
that `livetools call` (a process per call, as a harness shells out) answers from warm parsed
trees and language servers instead of importing the host and opening a run every time.

keys.py and client.py are the fast path `livetools call` takes before anything heavy is
imported (stdlib only); server.py is the resident process; control.py is `livetools resident`."""
