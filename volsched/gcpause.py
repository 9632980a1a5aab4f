"""The cyclic collector paused around a section that makes many objects and frees none.

``gc.disable``/``gc.enable`` are process-global: two threads each saving ``gc.isenabled()`` and
restoring it race (one can read "off" just as the other turns it back on, and then leave it off for
good; or one turns it back on under the other). Sections paused here share one count under a lock: the
first to enter turns the collector off if it was on, the last to leave turns it back on.

Plain calls, not a context manager: making one allocates, and could start the very collection the
section is meant to skip. :func:`freeze_all` ends such a section whose objects live long: all of them out
of every later collection's way at once, with no collection first. :func:`pause_from_start` is one such
section from ``volsched run``'s start, its imports, to the first listing's freeze.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_inside = 0
_was_enabled = False
#: Whether the section from the process's start (:func:`pause_from_start`) is open, under its own lock.
_start_lock = threading.Lock()
_from_start = False


def freeze_all() -> int:
    """Every object the collector tracks left out of every later collection's way (``gc.freeze``), at once
    (it moves the generations' lists whole): no collection first, which cannot pause and walks every young
    object, so the cyclic garbage made since the last collection is kept for good. About how many objects
    were young (the youngest generation's count, paused: the objects made since its last collection)."""
    young = gc.get_count()[0]
    gc.freeze()
    return young


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


def pause_from_start() -> None:
    """Open the paused section from the process's start (``volsched run``, before its imports) to
    :func:`resume_after_start` (the first listing's freeze), once: the imports make a few hundred thousand
    objects that live as long as the process and free next to none (the young collections meanwhile
    cost the imports CPU and freed next to nothing); frozen with the cache, no collection walks them
    again."""
    global _from_start
    with _start_lock:
        if not _from_start:
            _from_start = True
            pause_collector()


def resume_after_start() -> None:
    """Close the section :func:`pause_from_start` opened, if it is open (else nothing)."""
    global _from_start
    with _start_lock:
        if _from_start:
            _from_start = False
            resume_collector()
