"""The `livetools` command's entry point, kept light: `call` first tries a resident run (see
resident/client.py, stdlib only), and only when none answers is the full command (commands.py,
with the host, pluggy and pydantic) imported.

Exit codes of `call`: 0 ok, 1 the tool reported an error, 2 usage error (unknown tool, tool not
on the surface, bad arguments); the same through a resident."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .commands import UsageError, parse_options, parser

__all__ = ["UsageError", "main", "parse_options", "parser"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["call"]:
        from .resident.client import serve_call

        code = serve_call(args)
        if code is not None:
            return code
    from .commands import main as run_command

    return run_command(args)


def __getattr__(name: str) -> object:
    """The command's other names, from where they live now (commands.py)."""
    if name in ("UsageError", "parse_options", "parser"):
        from . import commands

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
