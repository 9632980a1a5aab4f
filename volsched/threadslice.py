"""A short time slice asked of the kernel for the calling thread, where an arriving pod waits on it.

Linux 6.12 and later (the EEVDF scheduler) take ``sched_runtime`` of ``sched_setattr`` as the slice a
thread of the fair class wants: a thread with a shorter slice gets an earlier deadline when it wakes, so
it runs sooner on a busy machine, and is asked to yield sooner if it runs long. The pod watch's thread and
the session thread each wake for a pod and run briefly; see docs/design/steady-state.md.

Only the slice changes: the policy, nice value and flags read back first are written again as they were.
A thread of another policy than SCHED_OTHER (batch, idle, real-time) is left alone. Where the call is not
there (not Linux, another architecture, an older kernel that refuses or ignores the field, a seccomp
profile that forbids it), nothing happens and :func:`ask_short_slice` says False: never an error. There is
no system call wrapper in Python's standard library, hence ``ctypes``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform

__all__ = ["SLICE", "ask_short_slice", "slice_of"]

log = logging.getLogger("volsched.threadslice")

#: The slice asked by default, in seconds (the kernel takes 0.1 to 100 ms; its own default is 0.75 ms
#: times a factor of the number of CPUs).
SLICE = 0.0001

#: ``sched_setattr``/``sched_getattr``'s numbers, by machine (``platform.machine()``).
_CALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "arm64": (274, 275)}
_SCHED_OTHER = 0


class _SchedAttr(ctypes.Structure):
    """``struct sched_attr`` as of Linux 5.3 (``SCHED_ATTR_SIZE_VER1``)."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
        ("sched_util_min", ctypes.c_uint32),
        ("sched_util_max", ctypes.c_uint32),
    ]


def _calls() -> tuple[ctypes.CDLL, int, int] | None:
    if platform.system() != "Linux":
        return None
    numbers = _CALLS.get(platform.machine())
    if numbers is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall  # noqa: B018 (present?)
    except (OSError, AttributeError):
        return None
    return libc, numbers[0], numbers[1]


def _read() -> tuple[ctypes.CDLL, int, _SchedAttr] | None:
    """The calling thread's attributes, with what writes them; None where they cannot be read."""
    calls = _calls()
    if calls is None:
        return None
    libc, set_nr, get_nr = calls
    attr = _SchedAttr()
    if libc.syscall(get_nr, 0, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        return None
    return libc, set_nr, attr


def slice_of() -> float | None:
    """The calling thread's slice in seconds as the kernel reports it, or None where it cannot say (a
    kernel before 6.12 reports 0 for the fair class: None too)."""
    read = _read()
    if read is None or read[2].sched_policy != _SCHED_OTHER or not read[2].sched_runtime:
        return None
    return int(read[2].sched_runtime) / 1e9


def ask_short_slice(seconds: float = SLICE) -> bool:
    """Ask the kernel for a slice of ``seconds`` for the calling thread (and the threads it starts from
    now on, which inherit it). True when the kernel reports that slice after; False, and nothing
    changed, where it cannot be asked or was refused (said once at DEBUG on ``volsched.threadslice``)."""
    read = _read()
    if read is None:
        log.debug("no short slice for this thread: sched_getattr is not there")
        return False
    libc, set_nr, attr = read
    if attr.sched_policy != _SCHED_OTHER or not attr.sched_runtime:
        log.debug(
            "no short slice for this thread: policy %d, slice %d ns", attr.sched_policy, attr.sched_runtime
        )
        return False
    wanted = max(1, round(seconds * 1e9))
    if attr.sched_runtime == wanted:
        return True
    attr.size = ctypes.sizeof(attr)
    attr.sched_runtime = wanted
    if libc.syscall(set_nr, 0, ctypes.byref(attr), 0) != 0:
        log.debug("no short slice for this thread: sched_setattr: %s", os.strerror(ctypes.get_errno()))
        return False
    return slice_of() == wanted / 1e9
