"""A renewal due while the Lease is ours for a while yet is made on a thread of its own: the session about
to start and the bind workers do not wait for its round trips (every write still checks the fence). Near
the Lease's end, the caller renews itself and waits to learn whether it was kept."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client

from volsched.kube.lease import LeaderLease, LeaseSettings

#: With these settings the fence closes 10 s after a renewal (duration 15 - margin 5); renew_every 2.
SETTINGS = dict(duration=15.0, renew_every=2.0)


class SlowLease(LeaderLease):
    """A Lease of ours last renewed ``age`` seconds ago whose renewal takes ``takes`` seconds and finds it
    kept (``kept``) or another's; no apiserver. Renewals are counted, with the threads that made them."""

    def __init__(self, *, age: float, takes: float, kept: bool = True) -> None:
        super().__init__(client.ApiClient(), LeaseSettings(**SETTINGS), "me")  # type: ignore[arg-type]
        self._won(time.monotonic() - age, how="created")
        self.takes, self.kept = takes, kept
        self.renewed_on: list[str] = []
        self.done = threading.Event()

    def _try_acquire(self, *, acquire: bool = True) -> None:
        time.sleep(self.takes)
        self.renewed_on.append(threading.current_thread().name)
        if self.kept:
            self._won(time.monotonic())
        else:  # another replica took it over
            self._expires = 0.0
        self.done.set()


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
    lease = SlowLease(age=age, takes=0.5)
    began = time.monotonic()
    assert getattr(lease, call)() is True
    took = time.monotonic() - began
    assert lease.done.wait(5)
    assert (took >= 0.4) is waits, f"{call} took {took:.3f}s"
    assert len(lease.renewed_on) == 1
    assert (lease.renewed_on[0] == "volsched-lease-renew") is not waits
    assert lease.time_left() > 9.0  # renewed: the fence 10 s from the renewal again


def test_callers_while_a_renewal_runs_behind_start_no_second_one() -> None:
    lease = SlowLease(age=3.0, takes=0.3)
    assert all(lease.renew_if_due() for _ in range(50))  # a bind worker's call before each bind
    assert lease.done.wait(5)
    time.sleep(0.1)
    assert len(lease.renewed_on) == 1


def test_a_renewal_behind_that_finds_the_lease_taken_fences_the_writes_from_then_on() -> None:
    lease = SlowLease(age=3.0, takes=0.2, kept=False)
    assert lease.renew_if_due() is True  # ours until the renewal says otherwise
    assert lease.done.wait(5)
    assert lease.time_left() <= 0
    assert lease.renew_if_due() is False


def test_a_fresh_lease_is_not_renewed() -> None:
    lease = SlowLease(age=0.5, takes=0.0)
    assert lease.ensure() and lease.renew_if_due()
    time.sleep(0.05)
    assert lease.renewed_on == []


def test_release_waits_for_a_renewal_in_flight_and_none_starts_after_it() -> None:
    lease = SlowLease(age=3.0, takes=0.3)
    released: list[str] = []
    lease._read = lambda timeout: {"spec": {"holderIdentity": "me"}}  # type: ignore[method-assign]
    lease._replace = lambda body, timeout: released.append("released")  # type: ignore[method-assign]
    assert lease.ensure()  # a renewal starts behind
    time.sleep(0.05)
    lease.release()
    assert lease.renewed_on == ["volsched-lease-renew"] and released == ["released"]  # the renewal first
    assert lease.time_left() <= 0 and not lease.renew_if_due() and not lease.ensure()
    time.sleep(0.05)
    assert lease.renewed_on == ["volsched-lease-renew"]
