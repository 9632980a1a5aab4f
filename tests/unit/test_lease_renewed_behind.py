"""A renewal due while the Lease is ours for a while yet is made on a thread of its own: the session about
to start and the bind workers do not wait for its round trips (every write still checks the fence). Near
the Lease's end, the caller renews itself and waits to learn whether it was kept.

The renewal's answer is held back until the test lets it through (``SlowLease.answer``): whether a caller
waited for it is told by what it knew when it returned, never by a clock."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes import client

from tests.unit._held_quiet import HeldQuiet
from volsched.kube.lease import LeaderLease, LeaseSettings

#: With these settings the fence closes 10 s after a renewal (duration 15 - margin 5); renew_every 2.
SETTINGS: dict[str, Any] = dict(duration=15.0, renew_every=2.0)
BEHIND = "volsched-lease-renew"


class SlowLease(LeaderLease):
    """A Lease of ours last renewed ``age`` seconds ago whose renewal, once begun (``began``), waits for
    ``answer`` and then finds it kept (``kept``) or another's (``done``); no apiserver. Each renewal
    says which thread made it (``renewed_on``) and ``order`` what was done to the Lease in turn."""

    def __init__(self, *, age: float, kept: bool = True, **settings: Any) -> None:
        super().__init__(client.ApiClient(), LeaseSettings(**{**SETTINGS, **settings}), "me")
        self._won(time.monotonic() - age, how="created")
        self.kept = kept
        self.renewed_on: list[str] = []
        self.order: list[str] = []
        self.began, self.answer, self.done = threading.Event(), threading.Event(), threading.Event()

    def _try_acquire(self, *, acquire: bool = True) -> None:
        self.renewed_on.append(threading.current_thread().name)
        self.began.set()
        self.answer.wait(10)
        if self.kept:
            self._won(time.monotonic())
        else:  # another replica took it over
            self._expires = 0.0
        self.order.append("renewed")
        self.done.set()


def _renewing(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == BEHIND and t not in before]


#: (case, seconds since the last renewal, whether the call waits for the renewal)
WAITS: list[tuple[str, float, bool]] = [
    ("due, ours for 7 s more: renewed behind, nobody waits", 3.0, False),
    ("due, ours for 1 s more: the caller renews and waits", 9.0, True),
]


@pytest.mark.parametrize("call", ["ensure", "renew_if_due"])
@pytest.mark.parametrize(("case", "age", "waits"), WAITS, ids=[w[0] for w in WAITS])
def test_a_due_renewal_holds_up_its_caller_only_near_the_leases_end(
    case: str, age: float, waits: bool, call: str
) -> None:
    lease = SlowLease(age=age)
    if waits:  # the caller renews itself: its answer must be let through before it returns
        lease.answer.set()
    assert getattr(lease, call)() is True
    assert lease.done.is_set() is waits  # returned knowing the answer, or with it still on its way
    lease.answer.set()
    assert lease.done.wait(5)
    assert lease.renewed_on == [BEHIND if not waits else threading.current_thread().name]
    assert lease.time_left() > 9.0  # renewed: the fence 10 s from the renewal again


def test_callers_while_a_renewal_runs_behind_start_no_second_one() -> None:
    # Retries not spaced out: only the renewal running keeps the callers from starting another.
    lease = SlowLease(age=3.0, retry_every=0.0)
    before = set(threading.enumerate())
    assert lease.renew_if_due()
    assert lease.began.wait(5)  # the first one is under way, its answer held back
    assert all(lease.renew_if_due() for _ in range(50))  # a bind worker's call before each bind
    assert len(_renewing(before)) == 1
    lease.answer.set()
    assert lease.done.wait(5)
    assert lease.renewed_on == [BEHIND]


def test_a_renewal_behind_that_finds_the_lease_taken_fences_the_writes_from_then_on() -> None:
    lease = SlowLease(age=3.0, kept=False)
    assert lease.renew_if_due() is True  # ours until the renewal says otherwise
    lease.answer.set()
    assert lease.done.wait(5)
    assert lease.time_left() <= 0
    assert lease.renew_if_due() is False


def test_a_fresh_lease_is_not_renewed() -> None:
    lease = SlowLease(age=0.5)
    before = set(threading.enumerate())
    assert lease.ensure() and lease.renew_if_due()
    assert _renewing(before) == [] and lease.renewed_on == []


def test_release_waits_for_a_renewal_in_flight_and_none_starts_after_it() -> None:
    lease = SlowLease(age=3.0)

    def read(timeout: float) -> dict[str, Any]:
        lease.order.append("read to release")
        return {"spec": {"holderIdentity": "me"}}

    lease._read = read  # type: ignore[method-assign]
    lease._replace = lambda body, timeout: lease.order.append("released")  # type: ignore[method-assign]
    assert lease.ensure()  # a renewal starts behind
    assert lease.began.wait(5)  # and holds the Lease meanwhile, its answer held back
    behind = lease._behind
    # Its answer comes a little later: a release that did not wait for it would read the Lease first.
    threading.Timer(0.2, lease.answer.set).start()
    lease.release()
    assert lease.order == ["renewed", "read to release", "released"]
    assert lease.time_left() <= 0 and not lease.renew_if_due() and not lease.ensure()
    assert lease._behind is behind and lease.renewed_on == [BEHIND]  # none started after the release


def test_a_renewal_behind_waits_for_the_sessions_to_be_quiet_first_and_no_longer_than_the_lease_allows() -> (
    None
):
    """The operator's sessions (``wait_quiet``): the session that found the renewal due has only begun, and
    the renewal's work shared the interpreter with its pod. The caller never waits for that."""
    from volsched.kube.lease import QUIET_WAIT

    lease = SlowLease(age=3.0)
    sessions = lease.wait_quiet = HeldQuiet()
    lease.answer.set()
    assert lease.ensure() is True  # at once: the renewal goes behind
    assert sessions.entered.wait(10)  # the renewal's thread waits for the sessions, not renewing yet
    assert not lease.began.is_set()
    sessions.quiet.set()  # the session ended
    assert lease.done.wait(5) and lease.renewed_on == [BEHIND]
    # ours for about 7 s more than renew_every: the wait is QUIET_WAIT at most, never half of that time
    assert 0 < sessions.asked[0] <= QUIET_WAIT

    near = SlowLease(age=7.9)  # ours for 2.1 s: 0.1 s past renew_every, so at most 0.05 s of waiting
    sessions = near.wait_quiet = HeldQuiet()
    sessions.quiet.set()
    near.answer.set()
    assert near.ensure() is True and near.done.wait(5)
    assert sessions.asked[-1] <= 0.05
