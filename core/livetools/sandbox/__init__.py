"""Where the conversation's code lives: the Sandbox port, its path mapping, and the adapters
that ship (a command prefix, bubblewrap). See docs/sandbox.md."""

from .bwrap import BwrapSandbox
from .paths import PathMap
from .prefix import PrefixSandbox
from .protocol import Process, Sandbox
from .spawn import SandboxBroken, as_sandbox, lookup, spawn, which, wire_maps
from .wrap import WrapSandbox

__all__ = [
    "BwrapSandbox",
    "PathMap",
    "PrefixSandbox",
    "Process",
    "Sandbox",
    "SandboxBroken",
    "WrapSandbox",
    "as_sandbox",
    "lookup",
    "spawn",
    "which",
    "wire_maps",
]
