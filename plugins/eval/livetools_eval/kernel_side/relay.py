"""Runs inside a sandbox in front of a kernel that speaks only TCP (Deno, most kernelspecs).

TCP does not cross a network namespace, a folder shared with the host does: this process starts
the kernel (its argv after `--`) on the inside's loopback, listens on a unix socket in the shared
folder for each of the kernel's ports (`PREFIX-PORT`, the names ZeroMQ's `ipc` transport uses for
`ip=PREFIX`), and copies bytes both ways. ZeroMQ's wire protocol is a byte stream, so the host's
client speaks `ipc` and the kernel `tcp` without either knowing. It forwards SIGINT (a
signal-mode interrupt) and ends with the kernel. Standard library only: it runs under whatever
Python the sandbox offers.

    python relay.py CONNECTION_FILE IPC_PREFIX -- KERNEL ARGV...
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
CONNECT_FOR = 60.0  # seconds a connection waits for the kernel to listen
CHUNK = 1 << 16


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The kernel's port, once it listens (it binds a moment after it starts)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CONNECT_FOR
    while True:
        try:
            return await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.02)


def server(port: int) -> Handler:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            k_reader, k_writer = await connect(port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pump(reader, k_writer), pump(k_reader, writer))

    return serve


async def main(info: dict[str, object], prefix: str, argv: list[str]) -> int:
    servers: list[asyncio.Server] = []
    for key in PORTS:
        port = int(str(info[key]))
        path = f"{prefix}-{port}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        servers.append(await asyncio.start_unix_server(server(port), path=path))
    try:
        kernel = await asyncio.create_subprocess_exec(*argv)
    except OSError as exc:
        print(f"cannot start the kernel {argv[0]!r} inside the sandbox: {exc}", file=sys.stderr)
        return 127
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, kernel.send_signal, sig)
    code = await kernel.wait()
    for s in servers:
        s.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    split = sys.argv.index("--")
    conn, ipc_prefix = sys.argv[1:split]
    with open(conn) as f:
        connection = json.load(f)
    sys.exit(asyncio.run(main(connection, ipc_prefix, sys.argv[split + 1 :])))
