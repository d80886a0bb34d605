"""Loading plugins: built-in families and third parties alike come through the entry-point group
`livetools`. A plugin that fails to import, or implements a hook that does not exist, is recorded
with its error and left out; it never takes the host down."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pluggy

from . import specs
from .entrypoints import entry_points

ENV_DISABLE = "LIVETOOLS_DISABLE_PLUGINS"
ENV_ALLOW = "LIVETOOLS_PLUGINS"


@dataclass(frozen=True)
class PluginInfo:
    name: str
    distribution: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class PluginFailure:
    name: str
    error: str
    distribution: str | None = None


def _names(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


class Plugins:
    """A pluggy manager plus the record of what loaded, what was blocked and what failed."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(specs.PROJECT)
        self.pm.add_hookspecs(specs)
        self.loaded: list[PluginInfo] = []
        self.failures: list[PluginFailure] = []
        self.blocked: list[str] = []
        self._disabled = _names(os.environ.get(ENV_DISABLE)) or set()
        self._allowed = _names(os.environ.get(ENV_ALLOW))

    def _admitted(self, name: str) -> bool:
        if name in self._disabled or (self._allowed is not None and name not in self._allowed):
            self.blocked.append(name)
            return False
        return True

    def add(
        self,
        plugin: object,
        name: str,
        distribution: str | None = None,
        version: str | None = None,
    ) -> bool:
        """Register one plugin object (a module or an instance) under `name`. The environment's
        block/allow lists apply to installed plugins, not to what a harness passes in itself."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # PluginValidationError, duplicate names
            self.failures.append(PluginFailure(name, f"{type(exc).__name__}: {exc}", distribution))
            return False
        self.loaded.append(PluginInfo(name, distribution, version))
        return True

    def load_entry_points(self, group: str = specs.PROJECT) -> None:
        for ep in sorted(entry_points(group), key=lambda e: e.name):
            dist = ep.distribution
            if self.pm.has_plugin(ep.name) or not self._admitted(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:
                self.failures.append(
                    PluginFailure(ep.name, f"import failed: {type(exc).__name__}: {exc}", dist)
                )
                continue
            self.add(plugin, ep.name, dist, ep.version)

    def add_all(self, plugins: Iterable[object | tuple[str, object]]) -> None:
        for item in plugins:
            if isinstance(item, tuple):
                name, plugin = item
            else:
                plugin = item
                name = getattr(plugin, "__name__", None) or type(plugin).__name__
            self.add(plugin, name)

    def check_unknown_hooks(self) -> None:
        """Report (and unregister) plugins implementing hooks that no spec declares: almost always
        a misspelling, which would otherwise be silently never called."""
        for hook_name, caller in vars(self.pm.hook).items():
            if not hook_name.startswith(specs.PROJECT + "_") or caller.spec is not None:
                continue
            for impl in caller.get_hookimpls():
                if impl.opts.get("optionalhook"):
                    continue
                self.failures.append(
                    PluginFailure(
                        impl.plugin_name,
                        f"unknown hook {hook_name!r} (misspelled? known hooks: "
                        f"{', '.join(self.hook_names())})",
                    )
                )
                self.pm.unregister(name=impl.plugin_name)
                self.loaded = [p for p in self.loaded if p.name != impl.plugin_name]

    def hook_names(self) -> list[str]:
        return sorted(
            name
            for name, caller in vars(self.pm.hook).items()
            if name.startswith(specs.PROJECT + "_") and caller.spec is not None
        )

    def impls(self, hook_name: str) -> list[Any]:
        return getattr(self.pm.hook, hook_name).get_hookimpls()
