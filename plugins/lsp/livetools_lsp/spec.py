"""What a language server is to us: a record a plugin returns from `livetools_lsp_servers`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ServerSpec:
    """One language server.

    `command` is the argv (its first word is looked up on PATH, then next to the interpreter);
    `extensions` maps a file suffix (or a whole file name: `Dockerfile`) to its LSP languageId;
    `markers` are root markers, nearest directory wins (empty = the run root). `probe` is the
    health check argv (default: `command[0] --version`); a binary that resolves but fails it is
    not usable. `settings` answer
    `workspace/configuration` by section; `checker` is the project checker `lsp diagnostics
    file="*"` runs in the root (`{file}` = run once per matching file, at most 20);
    `checker_requires`: the root must hold one of these files for the checker to run (tsc with
    no tsconfig.json prints its help and exits 1).
    `rename_blockers` are diagnostic codes meaning the server cannot see the whole project, so a
    rename now would be partial; `rename_requires` are files its root must hold for a rename to
    reach files that are not open (clangd indexes only what compile_commands.json lists).
    `warmup` is how long after start an empty answer may only mean "still indexing";
    `await_progress`: the server reports loading its project as `$/progress` and answers wrongly
    or emptily before that ends, so position requests wait for the first progress end (at most
    `warmup` after start); after it an empty answer is the answer. `unchanged_after`: the
    server publishes diagnostics only when they change (typescript-language-server), so this
    much silence after a change means "same as before". `ready_log`: a regex over the server's
    log messages that means its project is loaded (pyright-family: "Found N source files";
    answers before it miss files).
    `symbol_limit`: the server returns at most this many workspace symbols (gopls 100), so a
    full page means it cut. `python_env`: a pyright-family server: the project's interpreter is
    pushed and the project's own pyright config wins over `settings` (see pyenv.py).
    `settle`: after a version-less publish, how long a second one may still follow (syntax
    errors first, semantic ones later) before the first is taken as the answer.
    `linter`: the server only reports diagnostics (ruff, biome, eslint): it never answers
    navigation, and runs beside the server that does, its diagnostics labelled with its id."""

    id: str
    command: tuple[str, ...]
    extensions: Mapping[str, str]
    markers: tuple[str, ...] = ()
    probe: tuple[str, ...] | None = None
    init_options: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    checker: tuple[str, ...] | None = None
    checker_requires: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    rename_blockers: tuple[str, ...] = ()
    rename_requires: tuple[str, ...] = ()
    warmup: float = 3.0
    await_progress: bool = False
    unchanged_after: float | None = None
    first_diagnostics: float = 10.0
    python_env: bool = False
    ready_log: str | None = None
    symbol_limit: int | None = None
    linter: bool = False
    settle: float = 0.0

    @property
    def probe_argv(self) -> tuple[str, ...]:
        return self.probe if self.probe is not None else (self.command[0], "--version")

    def serves(self, file: str | Path) -> bool:
        """`file`: a path, a file name or a suffix (".py"). A key of `extensions` that does not
        start with "." is a whole file name (`Dockerfile`, `CMakeLists.txt`)."""
        return self._key(file) is not None

    def language_id(self, file: str | Path) -> str:
        key = self._key(file)
        return self.extensions[key] if key is not None else "plaintext"

    def _key(self, file: str | Path) -> str | None:
        name = file.name if isinstance(file, Path) else file
        if name in self.extensions:
            return name
        suffix = name if name.startswith(".") else os.path.splitext(name)[1]
        return suffix if suffix in self.extensions else None
