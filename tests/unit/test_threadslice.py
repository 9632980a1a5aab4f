"""A short slice asked of the kernel for one thread: taken where the kernel takes it (Linux 6.12 and later),
the thread's policy and nice value kept, inherited by the threads it starts; nothing changed and no error
where it cannot be asked."""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Callable

import pytest

from volsched.threadslice import ask_short_slice, slice_of


def _on_a_thread(work: Callable[[], object]) -> object:
    """``work``'s answer, run on a thread of its own (the test's thread keeps its slice)."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


needs_slices = pytest.mark.skipif(
    slice_of() is None, reason="this kernel does not report a fair thread's slice (before Linux 6.12)"
)


@needs_slices
def test_the_slice_asked_is_the_threads_and_its_nice_value_is_kept() -> None:
    def ask() -> tuple[bool, float | None, int, int]:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _nice() + 3)  # as under `nice -n`
        before = _nice()
        return ask_short_slice(0.0002), slice_of(), before, _nice()

    answer = _on_a_thread(ask)
    assert isinstance(answer, tuple)
    taken, after, nice_before, nice_after = answer
    assert taken
    assert after == pytest.approx(0.0002)
    assert nice_after == nice_before
    assert slice_of() != pytest.approx(0.0002)  # the test's own thread was not touched


@needs_slices
def test_a_thread_started_after_takes_the_slice_too() -> None:
    def ask() -> object:
        ask_short_slice(0.0003)
        return _on_a_thread(slice_of)

    assert _on_a_thread(ask) == pytest.approx(0.0003)


def test_where_the_call_is_not_there_nothing_is_asked_and_nothing_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "s390x")
    before = _on_a_thread(slice_of)
    assert _on_a_thread(ask_short_slice) is False
    assert before is None


@needs_slices
def test_a_thread_of_another_policy_is_left_alone() -> None:
    def ask() -> tuple[bool, int]:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # (0: the calling thread)
        return ask_short_slice(), os.sched_getscheduler(0)

    assert _on_a_thread(ask) == (False, os.SCHED_BATCH)
