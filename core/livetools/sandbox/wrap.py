"""The older sandbox port, `wrap(argv) -> argv` (or a callable), sync or async, kept working as a
prefix launcher whose command someone else words: host paths (identity map), no shared folder."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .prefix import PrefixSandbox


class WrapSandbox(PrefixSandbox):
    def __init__(self, wrap: Any, root: Path) -> None:
        named = hasattr(wrap, "wrap")
        super().__init__(
            ["(wrap)"],
            host_root=root,
            name=type(wrap).__name__ if named else "wrap",
            host_network=True,  # its kernels always spoke loopback TCP
        )
        self._wrap = wrap.wrap if named else wrap

    async def launch(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> list[str]:
        wrapped = self._wrap(list(argv))
        if inspect.isawaitable(wrapped):
            wrapped = await wrapped
        return [str(a) for a in wrapped]

    def host_cwd(self, cwd: str) -> Path:
        return Path(cwd)  # host paths: the launcher starts where the process should

    def host_env(self, env: Mapping[str, str] | None) -> Mapping[str, str] | None:
        return env  # the launcher passes its environment on, as before

    def describe(self) -> str:
        return f"{self.name} (a wrap(argv) launcher, host paths)"
