"""The family hook: which kernels a run can start, one per language.

A third party adds a language (or replaces a built-in kernel) with a tiny plugin implementing
`livetools_eval_kernels`; nothing here has to change. Kept free of jupyter_client so that
`import livetools_eval` stays cheap."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from livetools import hookspec

if TYPE_CHECKING:
    from livetools import Run

Dialect = Literal["ipython", "python", "javascript", "none"]


class KernelUnavailable(Exception):
    """Raised by `KernelSpec.argv` when the kernel cannot start here; the message says why and
    how to fix it (it reaches the model and `livetools status`)."""


@dataclass(frozen=True)
class KernelSpec:
    """How to start one language's kernel.

    `argv` is the command (a sequence, or a callable returning one, so that locating a binary
    waits until the kernel is needed); `{connection_file}` in it is replaced by the path of the
    connection file. `dialect` picks the helpers injected at start (`tool()`, `tools()`) and how
    the reflex idioms (`%pip`, `!cmd`, ...) are handled: "ipython" kernels run them natively (with
    our `%pip` and `!cmd`), "python" and "javascript" kernels get them rewritten into plain code,
    "none" (any other language) gets neither helpers nor rewrites.
    `transport` "ipc" uses unix sockets in a private directory (only for kernels that support it;
    inside a sandbox, in its shared folder); a sandbox without a shared folder gets "tcp" on
    loopback. `interrupt_mode` "message" sends an
    interrupt_request instead of SIGINT. `env` entries override the host's environment; None
    removes a variable. `settle` is how long to keep reading output after the cell reports idle,
    for kernels whose last messages can trail their idle status; a cell whose result or error
    has already arrived does not wait. `helpers`, when given, is the silent cell run at start
    instead of the dialect's (e.g. a `tool()` for another language); `origin` says where the
    spec came from (an installed kernelspec's folder), for status."""

    language: str
    name: str
    argv: Sequence[str] | Callable[[], Sequence[str]]
    dialect: Dialect = "python"
    transport: Literal["ipc", "tcp"] = "tcp"
    interrupt_mode: Literal["signal", "message"] = "signal"
    env: Mapping[str, str | None] = field(default_factory=dict)
    settle: float = 0.0
    start_timeout: float = 60.0
    helpers: str | None = None
    origin: str = ""

    def command(self) -> list[str]:
        """The argv template; raises KernelUnavailable with the reason when it cannot start."""
        argv = self.argv() if callable(self.argv) else self.argv
        return [str(a) for a in argv]


@hookspec
def livetools_eval_kernels(run: Run) -> KernelSpec | list[KernelSpec] | None:
    """The kernels this plugin offers for `run` (language → how to start it). Cheap: nothing
    starts here. The first spec per language wins; pluggy calls plugins registered later first,
    so a third-party plugin replaces a built-in kernel of the same language."""
