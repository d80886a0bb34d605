"""Pause the cyclic garbage collector while a large result is built: hundreds of thousands of
small match objects make it rescan the whole heap again and again (seconds per query)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
