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
            # What was built meanwhile is mostly the result the caller keeps. freeze + unfreeze
            # files every tracked object under the oldest generation in one list splice, so the
            # next young collection does not walk 500k rows (0.2 s) only to promote them. The
            # process's other young objects move too; their cycles wait for a full collection.
            gc.freeze()
            gc.unfreeze()
            gc.enable()
