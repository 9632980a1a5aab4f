"""A holder renews its Lease with one write: the Lease as its last write was answered, written again
with a new renewTime, without reading it first (as client-go's leader election renews). Should another
replica have written the Lease since, that write fails on resourceVersion (409) and the Lease is read as
before: a holder that lost it stops writing at once. Fault injection: the loopback Lease server of
:mod:`tests.unit.test_lease_release_bounded` (a PUT whose resourceVersion is not the current one: 409)."""

from __future__ import annotations

import time

import pytest

from tests.unit.test_lease_release_bounded import LeaseServer, _renewing_holder, served
from tests.unit.test_lease_release_bounded import renewed as _renew

server = pytest.fixture(served, name="server")


def test_after_the_first_renewal_each_renewal_is_one_write(server: LeaseServer) -> None:
    lease = _renewing_holder(server)
    acquired = server.lease["spec"].get("acquireTime")
    for _ in range(4):
        assert _renew(lease)
        assert lease.time_left() > 9.0  # renewed: the fence 10 s from the renewal again
    assert [(m, s) for m, _, s in server.seen] == [("GET", 200)] + [("PUT", 200)] * 4
    spec = server.lease["spec"]
    assert spec["holderIdentity"] == "me" and spec["leaseTransitions"] == 0
    assert spec.get("acquireTime") == acquired or acquired is None  # kept from the Lease as read


def test_a_lease_another_wrote_since_fails_the_write_and_is_read_and_the_writes_stop(
    server: LeaseServer,
) -> None:
    lease = _renewing_holder(server)
    assert _renew(lease)  # read and written: the next renewal writes at once
    with server._lock:  # another replica takes it over (say, after a pause of ours)
        version = int(server.lease["metadata"]["resourceVersion"]) + 1
        server.lease["metadata"]["resourceVersion"] = str(version)
        server.lease["spec"]["holderIdentity"] = "other"
    assert not _renew(lease)
    assert lease.time_left() <= 0 and not lease.renew_if_due()
    assert [(m, w, s) for m, w, s in server.seen][-2:] == [("PUT", "me", 409), ("GET", "", 200)]
    assert server.holder == "other"


def test_a_write_lost_on_its_way_makes_the_next_renewal_read_first(server: LeaseServer) -> None:
    lease = _renewing_holder(server)
    assert _renew(lease)
    server.httpd.shutdown()  # the apiserver gone: the renewal fails, the Lease kept until the fence
    server.httpd.server_close()
    lease.rest.close()
    assert _renew(lease)  # still within the fence (renewed 3 s ago)
    assert lease._written is None  # the next renewal reads the Lease first


def test_renewals_behind_share_one_connection(server: LeaseServer) -> None:
    lease = _renewing_holder(server)
    lease.settings.retry_every = 0.0  # not spaced out: each call here starts a renewal behind
    for _ in range(3):
        lease._won(time.monotonic() - 3.0)
        assert lease.renew_if_due()
        behind = lease._behind
        assert behind is not None
        behind.join(10)
        assert not behind.is_alive() and lease.time_left() > 9.0
    # each renewal's thread parked its connection as it ended, for the next one
    assert (lease.rest.connects, lease.rest.adopted, lease.rest._aio.connects) == (1, 2, 0)
    assert [m for m, _, _ in server.seen] == ["GET", "PUT", "PUT", "PUT"]
