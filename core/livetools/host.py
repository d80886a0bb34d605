"""The host: loads plugins once, knows the surfaces, opens runs."""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

from .config import load_config
from .hooks import Plugins
from .options import CORE, Declared, declared_by, validate
from .ports import Ports
from .run import Run
from .tiers import BUILTIN_SURFACES, Surface, Tier


class Host:
    """`Host()` loads every plugin of the entry-point group `livetools` (subject to
    LIVETOOLS_DISABLE_PLUGINS / LIVETOOLS_PLUGINS); `plugins` adds objects directly, e.g. a
    harness's own plugin or a test's."""

    def __init__(
        self,
        plugins: Iterable[object | tuple[str, object]] = (),
        *,
        entry_points: bool = True,
    ) -> None:
        self.plugins = Plugins()
        self.plugins.add_all(plugins)
        if entry_points:
            self.plugins.load_entry_points()
        self.plugins.pm.hook.livetools_addhooks.call_historic(
            kwargs={"pluginmanager": self.plugins.pm}
        )
        self.plugins.check_unknown_hooks()
        self.surfaces: dict[str, Surface] = dict(BUILTIN_SURFACES)
        self._declared: Declared | None = None

    @property
    def declared_options(self) -> Declared:
        """Every run option core and the loaded plugins declare (worked out once: the plugins
        do not change after the host is built)."""
        if self._declared is None:
            plugins = self.plugins
            inactive = set(plugins.blocked) | {f.name for f in plugins.failures}
            declared = declared_by(
                plugins.impls("livetools_options"), [p.name for p in plugins.loaded], inactive
            )
            for option in CORE:
                declared.add(option, "core")
            self._declared = declared
        return self._declared

    def check_options(self, options: dict[str, Any] | None) -> dict[str, Any]:
        """The options as a run keeps them (coerced), or OptionError saying what is wrong with
        each bad one: what every face calls before anything starts."""
        return validate(options, self.declared_options)

    def define_surface(
        self, name: str, tiers: Iterable[Tier | str], exclude: Iterable[str] = ()
    ) -> Surface:
        """A harness's own surface, e.g. `define_surface("reviewer", ["read", "exec"])`."""
        surface = Surface(name, frozenset(Tier(t) for t in tiers), frozenset(exclude))
        self.surfaces[name] = surface
        return surface

    def surface(self, surface: str | Surface) -> Surface:
        if isinstance(surface, Surface):
            return surface
        try:
            return self.surfaces[surface]
        except KeyError:
            raise KeyError(
                f"unknown surface {surface!r}; surfaces: {', '.join(self.surfaces)}"
            ) from None

    def open_run(
        self,
        root: str | Path = ".",
        *,
        conversation_id: str | None = None,
        ports: Ports | None = None,
        options: dict[str, Any] | None = None,
    ) -> _RunOpener:
        """`run = await host.open_run(root)` or `async with host.open_run(root) as run:`.
        Bad options raise OptionError here, before anything starts."""
        self.check_options(options)  # the run option's own errors first, as every face says them
        path = Path(root).resolve()
        if not path.is_dir():
            raise NotADirectoryError(f"run root {root} is not a directory")
        loaded = load_config(path, options, self.declared_options)
        run = Run(self, path, conversation_id or uuid.uuid4().hex, ports or Ports(), loaded.options)
        run.option_sources = loaded.sources
        run.problems.extend(self.declared_options.problems)  # clashing or failing declarations
        run.problems.extend(loaded.notes)
        return _RunOpener(run)


class _RunOpener:
    def __init__(self, run: Run) -> None:
        self._run = run

    def __await__(self) -> Generator[Any, None, Run]:
        return self._open().__await__()

    async def _open(self) -> Run:
        try:
            await self._run._open()
        except BaseException:
            await self._run.aclose()
            raise
        return self._run

    async def __aenter__(self) -> Run:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        await self._run.aclose()
