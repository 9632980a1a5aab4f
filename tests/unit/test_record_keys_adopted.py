"""Keys taken while the operator runs check again the records the cache holds not verified (docs/tenancy.md
"The signed record"): another replica made or rotated the key, or it was put back. Before, a pod whose
record the new key signed, already flagged, stayed so until it changed: an orphan counted in its
namespace's default queue, a PodGroup made again over its pods not held to their record, a pod bound
standing alone without its name; each told its record was not verified."""

from __future__ import annotations

import types
from typing import Any

from tests.builders import node, pod, podgroup, queue
from tests.unit.test_record_key_kept import FIRST, HELD, NEW, _Replica, _Secret
from volsched.cache.doorbell import Doorbell
from volsched.cache.state import ClusterState
from volsched.kube.recordkey import CURRENT, PREVIOUS
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER, RecordKeys
from volsched.operator import Operator

OTHER = b"x" * 32
RECORD = admitted.bound_under(uid="g-uid", queue="qb", priority_class="", priority=0, min_member=2)
AFTER = "2026-01-02T00:00:00Z"  # (made after the key's Secret: an unsigned record is not taken)


def _state(*objs: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    state.record_keys = RecordKeys(keys=(HELD,), since=FIRST)
    for obj in (node("n1", cpu="8"), queue("qa"), queue("qb"), *objs):
        state.apply(obj)
    return state


def _on_n1(name: str, record: str, *, group: str | None = "g", key: bytes | None = NEW) -> dict[str, Any]:
    """Pod ``name`` running on n1 with ``record`` (signed for it with ``key``; None: unsigned)."""
    uid = f"uid-{name}"
    text = record if key is None else admitted.sign(record, uid=uid, key=key)
    obj = pod(name, ns="ns", cpu="1", group=group, node="n1", phase="Running", created=AFTER)
    obj["metadata"].update(uid=uid, annotations={**obj["metadata"].get("annotations", {}), BOUND_UNDER: text})
    return obj


def _adopted(state: ClusterState, keys: tuple[bytes, ...]) -> str | None:
    """``keys`` taken as the operator takes them (``Operator._adopt_keys``, which its KeyKeeper calls):
    what its writer signs with then."""
    op = types.SimpleNamespace(state=state, writer=types.SimpleNamespace(record_key=None))
    Operator._adopt_keys(op, RecordKeys(keys=keys, since=FIRST))  # type: ignore[arg-type]
    return op.writer.record_key  # type: ignore[no-any-return]


def test_a_key_taken_while_running_takes_the_orphans_records_it_signed_at_once() -> None:
    """Orphans g-0, g-1 (PodGroup g gone), whose records another replica's new key signed, counted in
    their namespace's default queue: once a rotation brings that key, they count in qb, their record's,
    in the next snapshot (the change counted, the doorbell rung), and are no longer told. h-0, signed by a
    key not held, and u-0, unsigned on a pod made after the key, stay as they were."""
    state = _state(
        _on_n1("g-0", RECORD),
        _on_n1("g-1", RECORD),
        _on_n1("h-0", RECORD, key=OTHER),
        _on_n1("u-0", RECORD, key=None),
    )
    snap = state.snapshot(now=1.0)
    assert {k: snap.jobs[f"ns/{k}"].queue for k in ("g-0", "g-1", "h-0", "u-0")} == dict.fromkeys(
        ("g-0", "g-1", "h-0", "u-0"), "default"
    )
    assert set(state.not_verified) == {"ns/g-0", "ns/g-1", "ns/h-0", "ns/u-0"}
    changes = state.changes
    state.doorbell = Doorbell()

    replica = _Replica(_Secret({CURRENT: NEW, PREVIOUS: HELD}))  # (rotated by another: taken as it is)
    replica.keeper.adopt = lambda keys: _adopted(state, keys.keys)  # type: ignore[assignment]
    replica.shown()

    assert state.record_keys is not None and state.record_keys.keys == (NEW, HELD)
    assert _adopted(state, (NEW, HELD)) == NEW  # (the writer signs with the new key; nothing more to take)
    assert set(state.not_verified) == {"ns/h-0", "ns/u-0"}  # before: all four, until each pod changed
    assert state.changes > changes and state.doorbell.take().freed
    snap = state.snapshot(now=2.0)
    assert {k: snap.jobs[f"ns/{k}"].queue for k in ("g-0", "g-1", "h-0", "u-0")} == {
        "g-0": "qb",
        "g-1": "qb",
        "h-0": "default",
        "u-0": "default",
    }
    told = {obj: message for obj, _, message in snap.problems}
    assert "it counts in queue qb, the one it was bound under" in told["Pod ns/g-0"]
    assert admitted.NOT_VERIFIED_WHY in told["Pod ns/h-0"]
    assert state.tasks["ns/g-0"].annotations[BOUND_UNDER] == RECORD  # (its text without the signature)


def test_a_key_taken_while_running_holds_a_podgroup_made_again_to_its_pods_record() -> None:
    """PodGroup g made again in qa over g-0 and g-1, whose records (queue qb) the new key signed: not held
    to them while the key was not held (told BoundUnderRefused), held to them once it is."""
    state = _state(
        podgroup("g", ns="ns", queue="qa", min_member=2, created=AFTER),
        _on_n1("g-0", RECORD),
        _on_n1("g-1", RECORD),
    )
    assert state.snapshot(now=1.0).jobs["ns/g"].queue == "qa"
    assert admitted.NOT_VERIFIED_WHY in state.record_refused["ns/g"]
    _adopted(state, (NEW, HELD))
    assert state.snapshot(now=2.0).jobs["ns/g"].queue == "qb"
    assert state.record_refused == {}


def test_a_key_taken_while_running_gives_a_pod_bound_standing_alone_its_name_back() -> None:
    """Pod x, bound standing alone with the new key, was PodGroup x's member (its record not verified);
    once the key is held, it keeps its name: PodGroup x is no job while x exists."""
    state = _state(
        podgroup("x", ns="ns", queue="qa", min_member=2, created="2026-01-01T00:00:01Z"),
        _on_n1("x", admitted.STANDING_ALONE, group=None),
    )
    assert state.snapshot(now=1.0).jobs["ns/x"].podgroup is not None
    _adopted(state, (NEW, HELD))
    job = state.snapshot(now=2.0).jobs["ns/x"]
    assert job.podgroup is None and list(job.tasks) == ["ns/x"]
