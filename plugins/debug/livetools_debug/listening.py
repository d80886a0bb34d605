"""Is a local TCP port listening? Read from the kernel's socket table, never by connecting.

`attach` through an adapter that dials the port itself (lldb's `gdb-remote`) must not race a
debug server that was started a moment ago (lldb then fails with "process unloaded during launch
or attach"), and a probe connection is no way to find out: a gdbserver serves exactly one
connection and then exits.
"""

from __future__ import annotations

from pathlib import Path

_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_LISTEN = "0A"


def listening(port: int) -> bool | None:
    """True if some socket listens on `port`, False if none does, None if this system does not
    say (no /proc socket table): the caller then goes ahead without waiting."""
    seen_table = False
    for table in _TABLES:
        try:
            lines = table.read_text(encoding="ascii", errors="replace").splitlines()[1:]
        except OSError:
            continue
        seen_table = True
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _LISTEN:
                continue
            _, _, hex_port = fields[1].rpartition(":")
            try:
                if int(hex_port, 16) == port:
                    return True
            except ValueError:
                continue
    return False if seen_table else None
