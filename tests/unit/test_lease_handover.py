"""What a holder owes goes with its Lease (``HANDOVER``): each write of the Lease says what the writer set
(``handover``), nothing more, and leaves the Lease's other annotations alone; a replica that becomes the
holder keeps what the Lease said (``inherited``) and writes it on unchanged until the writer takes it over,
and a clean release hands it over too. Fault injection: the loopback Lease server of
:mod:`tests.unit.test_lease_release_bounded`."""

from __future__ import annotations

import pytest

from tests.unit.test_lease_release_bounded import LeaseServer, _renewing_holder, served
from tests.unit.test_lease_release_bounded import renewed as _renew
from volsched.kube.lease import HANDOVER

server = pytest.fixture(served, name="server")


def _notes(server: LeaseServer) -> dict[str, str]:
    return dict(server.lease["metadata"].get("annotations") or {})


def test_each_write_of_the_lease_says_what_the_holder_owes_and_nothing_else_is_touched(
    server: LeaseServer,
) -> None:
    server.lease["metadata"]["annotations"] = {"example.com/kept": "yes"}
    lease = _renewing_holder(server)
    assert _renew(lease)
    assert _notes(server) == {"example.com/kept": "yes"}  # nothing said yet: as it was
    lease.handover = '[{"pod":"ns/p"}]'
    assert _renew(lease)
    assert _notes(server) == {"example.com/kept": "yes", HANDOVER: '[{"pod":"ns/p"}]'}
    assert _renew(lease)  # (written as answered: one request)
    assert _notes(server)[HANDOVER] == '[{"pod":"ns/p"}]'
    lease.handover = ""
    assert _renew(lease)
    assert _notes(server) == {"example.com/kept": "yes"}


def test_a_new_holder_keeps_what_the_lease_said_until_the_writer_takes_it_over(server: LeaseServer) -> None:
    server.lease["metadata"]["annotations"] = {HANDOVER: "owed"}
    server.lease["spec"]["holderIdentity"] = ""  # released by the holder before
    heir = _renewing_holder(server)
    heir.identity, heir._expires, heir._written = "heir", 0.0, None
    heir.handover = "its own, from a holding long ago"
    assert heir.ensure() and heir.acquired_how == "released"
    assert heir.inherited == "owed" and heir.handover is None
    assert _notes(server) == {HANDOVER: "owed"}  # written on unchanged
    assert _renew(heir)
    assert _notes(server) == {HANDOVER: "owed"}
    heir.handover = ""  # taken over (and done)
    assert _renew(heir)
    assert _notes(server) == {}


def test_a_clean_release_hands_over_what_is_owed(server: LeaseServer) -> None:
    lease = _renewing_holder(server)
    lease.handover = "owed"
    lease.release()
    assert server.lease["spec"].get("holderIdentity") is None
    assert _notes(server) == {HANDOVER: "owed"}
