"""The cyclic collector paused around a section that makes many objects and frees none.

``gc.disable``/``gc.enable`` are process-global: two threads each saving ``gc.isenabled()`` and
restoring it race (one can read "off" just as the other turns it back on, and then leave it off for
good; or one turns it back on under the other). Sections paused here share one count under a lock: the
first to enter turns the collector off if it was on, the last to leave turns it back on.

Plain calls, not a context manager: making one allocates, and could start the very collection the
section is meant to skip. :func:`collect_and_freeze` ends such a section whose objects live long: one
full collection, then what is left out of every later collection's way.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_inside = 0
_was_enabled = False


def collect_and_freeze() -> int:
    """One full collection (the cyclic garbage made so far freed, not kept for good), then every object
    left frozen (``gc.freeze``): no later collection walks them again. How many objects were frozen."""
    gc.collect()
    before = gc.get_freeze_count()
    gc.freeze()
    return gc.get_freeze_count() - before


def pause_collector() -> None:
    """Turn the cyclic collector off for a section; pair it with :func:`resume_collector` in a finally."""
    global _inside, _was_enabled
    with _lock:
        if _inside == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _inside += 1


def resume_collector() -> None:
    """End a paused section: the collector is left as found once no paused section is left."""
    global _inside
    with _lock:
        _inside -= 1
        if _inside == 0 and _was_enabled:
            gc.enable()
