"""The session thread's nudge (:class:`~volsched.operator.sessions.Nudge`): a flag with
:class:`threading.Event`'s ``set``, ``clear``, ``wait`` and ``is_set``, made of one bare lock. It answers
as an Event does through any sequence of calls, a set from another thread wakes its waiter, and a wait of
no time (0 or less) never blocks."""

from __future__ import annotations

import random
import threading

import pytest

from volsched.operator.sessions import Nudge


@pytest.mark.parametrize("seed", range(20))
def test_a_nudge_answers_as_an_event_through_any_sequence_of_calls(seed: int) -> None:
    rng = random.Random(seed)
    nudge, event = Nudge(), threading.Event()
    for _ in range(200):
        op = rng.choice(("set", "clear", "wait", "wait no time", "is_set"))
        if op in ("set", "clear"):
            getattr(nudge, op)()
            getattr(event, op)()
        elif op == "wait":  # set: at once (not set: a millisecond, and False)
            assert nudge.wait(0.001) is event.wait(0.001)
        elif op == "wait no time":
            timeout = rng.choice((0.0, -1.0))
            assert nudge.wait(timeout) is event.wait(timeout)
        assert nudge.is_set() is event.is_set()


@pytest.mark.parametrize(
    ("calls", "is_set"),
    [
        ((), False),
        (("set",), True),
        (("set", "set"), True),
        (("set", "set", "clear"), False),
        (("clear", "clear"), False),
        (("clear", "set"), True),
        (("set", "wait"), True),  # a wait that saw it set leaves it set
    ],
)
def test_a_nudge_is_set_by_the_last_set_or_clear(calls: tuple[str, ...], is_set: bool) -> None:
    nudge = Nudge()
    for call in calls:
        if call == "wait":
            assert nudge.wait(0)
        else:
            getattr(nudge, call)()
    assert nudge.is_set() is is_set
    assert nudge.wait(0) is is_set and nudge.wait(-1) is is_set


def test_a_set_from_another_thread_wakes_the_waiter() -> None:
    nudge = Nudge()
    waiting, woke = threading.Event(), []

    def waiter() -> None:
        waiting.set()
        woke.append(nudge.wait(3600.0))  # returns when set, not at the timeout

    thread = threading.Thread(target=waiter)
    thread.start()
    waiting.wait()
    nudge.set()
    thread.join()
    assert woke == [True] and nudge.is_set()


def test_a_wait_longer_than_a_lock_takes_is_a_wait_as_long_as_a_lock_takes() -> None:
    nudge = Nudge()
    nudge.set()
    assert nudge.wait(float("inf")) and nudge.wait(threading.TIMEOUT_MAX * 10)
