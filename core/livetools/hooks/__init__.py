"""The host's hooks: resource discovery, tool registration, write wrapping (and a way for a family
plugin to add its own hookspecs)."""

from .manager import PluginFailure, PluginInfo, Plugins
from .specs import PROJECT, hookimpl, hookspec

__all__ = ["PROJECT", "PluginFailure", "PluginInfo", "Plugins", "hookimpl", "hookspec"]
