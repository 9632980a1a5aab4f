"""The records' key kept in its Secret while the operator runs (note18 Found 6, docs/tenancy.md "The signed
record"): the Secret deleted, or its key changed, under a running operator, the leader puts back the key it
holds (changed: the new one signs, the held one stays as ``previous``), so that no running pod's record
stops verifying at the next start; a follower only finds it owed; the one put back keeps since when the
key signs. And the count, at start, of pods whose signed record no key verifies."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from tests.builders import node, pod, queue
from volsched.cache.state import ClusterState
from volsched.kube import recordkey
from volsched.kube.recordkey import CURRENT, KEPT, MEND_AGAIN, PREVIOUS, RESTORED, SINCE, KeyKeeper
from volsched.kube.secret import Conflict
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER, RecordKeys

HELD, OLDER, NEW = b"h" * 32, b"o" * 32, b"n" * 32
#: The first Secret's creationTimestamp (2026-01-01T00:01:00Z), and a later one's.
FIRST, LATER = 1_767_225_660.0, 1_767_312_060.0


class _Secret:
    """One Secret as the apiserver keeps it, through SecretStore's methods (what KeyKeeper and ``load`` use)."""

    namespace, name = "volsched-system", recordkey.SECRET

    def __init__(self, data: dict[str, bytes] | None) -> None:
        self.data = data
        self.created, self.annotations, self.uid, self.version, self.made = FIRST, {}, "uid-1", "1", False
        self.writes: list[tuple[str, dict[str, bytes], dict[str, str]]] = []
        self.fail: Exception | None = None
        self.then: dict[str, bytes] | None = None  # made by another just before our create (a 409)

    def read(self) -> tuple[dict[str, bytes], str] | None:
        return None if self.data is None else (dict(self.data), self.version)

    def create(self, data: dict[str, bytes], *, annotations: dict[str, str] | None = None) -> str:
        if self.fail is not None:
            raise self.fail
        if self.then is not None:
            self.data, self.then = self.then, None
            raise Conflict("made by another meanwhile")
        self.data, self.annotations, self.created = dict(data), dict(annotations or {}), LATER
        self.uid, self.made = "uid-2", True
        self.writes.append(("create", dict(data), dict(annotations or {})))
        return self._written()

    def replace(
        self, data: dict[str, bytes], version: str, *, annotations: dict[str, str] | None = None
    ) -> str:
        if self.fail is not None:
            raise self.fail
        if version != self.version:
            raise Conflict("written since")
        self.data, self.annotations = dict(data), dict(annotations or {})
        self.writes.append(("replace", dict(data), dict(annotations or {})))
        return self._written()

    def _written(self) -> str:
        self.version = str(int(self.version) + 1)
        return self.version

    def event(self) -> tuple[str, dict[str, Any]]:
        """The watch's event of the Secret as it is now."""
        if self.data is None:
            return "DELETED", {"metadata": {"name": self.name, "namespace": self.namespace}}
        data = {k: base64.b64encode(v).decode() for k, v in self.data.items()}
        return "MODIFIED", {"metadata": {"name": self.name, "resourceVersion": self.version}, "data": data}


class _Replica:
    """A keeper as the operator wires it: leading or not, the keys it adopts, the Events it tells."""

    def __init__(self, secret: _Secret, *, held: tuple[bytes, ...] = (HELD,), leading: bool = True) -> None:
        self.secret, self.leading, self.now = secret, leading, 100.0
        self.adopted: list[RecordKeys] = []
        self.told: list[tuple[str, str, str]] = []
        self.keeper = KeyKeeper(
            leading=lambda: self.leading,
            adopt=self.adopted.append,
            tell=lambda *event: self.told.append(event),
            clock=lambda: self.now,
        )
        self.keeper.hold(secret, RecordKeys(keys=held, since=FIRST))  # type: ignore[arg-type]

    def shown(self) -> None:
        self.keeper.watched(*self.secret.event())


def test_a_deleted_secret_is_made_again_by_the_leader_with_the_keys_it_holds_and_since_when_they_sign(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = _Secret({CURRENT: HELD, PREVIOUS: OLDER})
    replica = _Replica(secret, held=(HELD, OLDER))
    secret.data = None
    with caplog.at_level(logging.WARNING, "volsched.kube"):
        replica.shown()
    assert secret.writes == [("create", {CURRENT: HELD, PREVIOUS: OLDER}, {SINCE: "2026-01-01T00:01:00Z"})]
    assert replica.adopted == [] and not replica.keeper.owed  # (the same keys: nothing to adopt)
    [(reason, message, uid)] = replica.told
    assert (reason, uid) == (RESTORED, "uid-2") and "was deleted: put back with the 2 keys" in message
    assert f"Secret volsched-system/{recordkey.SECRET}" in caplog.text and "was deleted" in caplog.text
    replica.shown()  # (its own create, echoed by the watch: nothing more)
    assert len(secret.writes) == 1 and len(replica.told) == 1
    # The next start reads the key it held, and since when it signs from the annotation: the Secret made
    # again is newer than the pods signed with it (an unsigned record on one of them is still not taken).
    assert recordkey.load(secret) == RecordKeys(keys=(HELD, OLDER), since=FIRST)  # type: ignore[arg-type]


def test_a_changed_key_signs_from_then_on_and_the_one_held_stays_as_previous() -> None:
    secret = _Secret({CURRENT: HELD})
    replica = _Replica(secret)
    secret.data = {CURRENT: NEW, PREVIOUS: OLDER}  # (another key, and a previous not held: two are kept)
    secret.version = "5"
    replica.shown()
    assert secret.writes == [("replace", {CURRENT: NEW, PREVIOUS: HELD}, {SINCE: "2026-01-01T00:01:00Z"})]
    assert replica.adopted == [RecordKeys(keys=(NEW, HELD), since=FIRST)]
    [(reason, message, _)] = replica.told
    assert reason == KEPT and "kept as 'previous'" in message and "(one key not kept: two are)" in message
    signed = admitted.sign(admitted.STANDING_ALONE, uid="u", key=HELD)  # (a running pod's)
    assert admitted.verified(signed, uid="u", keys=replica.adopted[-1].keys) == admitted.STANDING_ALONE


@pytest.mark.parametrize("secret_now", [{CURRENT: NEW, PREVIOUS: HELD}, {CURRENT: HELD, PREVIOUS: NEW}])
def test_a_secret_that_holds_the_key_signing_is_taken_as_it_is(secret_now: dict[str, bytes]) -> None:
    """A rotation (a new key first, the one signing as previous) or a key added to verify: adopted, nothing
    written."""
    secret = _Secret({CURRENT: HELD})
    replica = _Replica(secret)
    secret.data = secret_now
    replica.shown()
    assert secret.writes == [] and replica.told == [] and not replica.keeper.owed
    assert replica.adopted == [RecordKeys(keys=(secret_now[CURRENT], secret_now[PREVIOUS]), since=FIRST)]


def test_a_secret_left_without_a_usable_key_is_given_the_held_one_back() -> None:
    secret = _Secret({CURRENT: HELD})
    replica = _Replica(secret)
    secret.data = {CURRENT: b"short"}
    replica.shown()
    assert secret.writes == [("replace", {CURRENT: HELD}, {SINCE: "2026-01-01T00:01:00Z"})]
    assert replica.told[0][0] == RESTORED and "held no usable key" in replica.told[0][1]


def test_a_follower_finds_it_owed_and_puts_it_back_once_it_leads() -> None:
    secret = _Secret({CURRENT: HELD})
    replica = _Replica(secret, leading=False)
    secret.data = None
    replica.shown()
    assert secret.writes == [] and replica.keeper.owed and replica.keeper.due()
    replica.leading = True
    replica.keeper.mend()  # (the session loop, leading: KeyKeeper.due)
    assert [w[0] for w in secret.writes] == ["create"] and not replica.keeper.due()


def test_the_leader_puts_back_the_one_another_made_meanwhile_is_judged_again() -> None:
    """A 409 on the create (another made it meanwhile): read again and judged; holding the key signing,
    it is taken without a write."""
    secret = _Secret({CURRENT: HELD})
    replica = _Replica(secret)
    secret.data = None
    secret.then = {CURRENT: NEW, PREVIOUS: HELD}
    replica.shown()
    assert secret.writes == [] and replica.told == [] and not replica.keeper.owed
    assert replica.adopted == [RecordKeys(keys=(NEW, HELD), since=FIRST)]


def test_a_write_that_fails_is_said_once_and_tried_again_later(caplog: pytest.LogCaptureFixture) -> None:
    secret = _Secret({CURRENT: HELD})
    replica = _Replica(secret)
    secret.data = None
    secret.fail = OSError("connection refused")
    with caplog.at_level(logging.ERROR, "volsched.kube"):
        replica.shown()
        assert replica.keeper.owed and not replica.keeper.due()
        replica.now += MEND_AGAIN
        assert replica.keeper.due()
        replica.keeper.mend()
    assert caplog.text.count("cannot put back the key Secret") == 1
    secret.fail = None
    replica.now += MEND_AGAIN
    replica.keeper.mend()
    assert [w[0] for w in secret.writes] == ["create"] and not replica.keeper.owed


def test_since_is_read_from_the_secret_put_back_but_never_later_than_its_creation() -> None:
    secret = _Secret({CURRENT: HELD})
    secret.created, secret.annotations = LATER, {SINCE: "2026-01-01T00:01:00Z"}
    assert recordkey.load(secret).since == FIRST  # type: ignore[arg-type]
    secret.annotations = {SINCE: "2027-01-01T00:00:00Z"}  # (later than the Secret itself: not taken)
    assert recordkey.load(secret).since == LATER  # type: ignore[arg-type]
    secret.annotations = {SINCE: "not a time"}
    assert recordkey.load(secret).since == LATER  # type: ignore[arg-type]


def test_the_pods_whose_signed_record_no_key_verifies_are_counted() -> None:
    """What the start says once when its key Secret was made anew: the pods signed with another key,
    not those with an unsigned record on a pod made after the key, nor those that verify."""
    state = ClusterState()
    state.record_keys = RecordKeys(keys=(NEW,), since=FIRST)
    for obj in (node("n1", cpu="8"), queue("q")):
        state.apply(obj)
    records = {
        "old-0": admitted.sign(admitted.STANDING_ALONE, uid="uid-old-0", key=HELD),
        "old-1": admitted.sign(admitted.STANDING_ALONE, uid="uid-old-1", key=HELD),
        "new": admitted.sign(admitted.STANDING_ALONE, uid="uid-new", key=NEW),
        "unsigned": admitted.STANDING_ALONE,
    }
    for name, record in records.items():
        obj = pod(name, ns="ns", cpu="1", node="n1", created="2026-01-02T00:00:00Z")
        obj["metadata"].update(uid=f"uid-{name}", annotations={BOUND_UNDER: record})
        state.apply(obj)
    assert set(state.not_verified) == {"ns/old-0", "ns/old-1", "ns/unsigned"}
    assert state.signed_not_verified() == 2
