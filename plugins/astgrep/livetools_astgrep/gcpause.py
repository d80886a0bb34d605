"""Pause the cyclic garbage collector while a large result is built: hundreds of thousands of
small match objects make it rescan the whole heap again and again (seconds per query)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

LARGE = 50_000  # objects kept from a paused stretch before they are filed as old at once


class Pause:
    kept = 0  # how many objects the caller keeps from what was built meanwhile


@contextmanager
def gc_paused() -> Iterator[Pause]:
    was = gc.isenabled()
    gc.disable()
    pause = Pause()
    try:
        yield pause
    finally:
        if was:
            if pause.kept >= LARGE:
                # freeze + unfreeze files every tracked object under the oldest generation in
                # one list splice, so the next young collection does not walk 500k kept rows
                # (0.2 s) only to promote them. The process's other young objects move too
                # (their cycles wait for a full collection), hence only for large results.
                gc.freeze()
                gc.unfreeze()
            gc.enable()
