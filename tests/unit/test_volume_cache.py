"""The cache's claims and volumes: a session sees a claim that starts deleting at once (not its pod's old
``bind_claims``), and a decided bind's pre-bind assumed until the API shows it, not ended by an event from
before the write that was still in flight."""

from __future__ import annotations

from typing import Any

from tests.builders import node, pod, pv, pvc, storage_class
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Bind
from volsched.model.vocabulary import Task
from volsched.model.volumes import VolumeBinding


def cache(*objs: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return state


def task_of(state: ClusterState, key: str) -> Task:
    return next(t for j in state.snapshot().jobs.values() for t in j.tasks.values() if t.key == key)


def claims_of(state: ClusterState, key: str = "default/db") -> tuple[tuple[str, ...], tuple[str, ...]]:
    task = task_of(state, key)
    return task.bind_claims, task.unbound_claims


def deleting(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {
        **obj["metadata"],
        "deletionTimestamp": "2026-11-30T09:00:00Z",
        "finalizers": ["kubernetes.io/pvc-protection"],
    }
    return {**obj, "metadata": meta}


def test_a_claim_that_starts_deleting_is_no_longer_the_sessions_to_bind() -> None:
    state = cache(
        node("n1"), storage_class("local"), pvc("data", storage_class="local"), pod("db", claims=["data"])
    )
    assert claims_of(state) == (("data",), ())
    state.apply(deleting(pvc("data", storage_class="local")))  # nothing else about it changed
    assert claims_of(state) == ((), ("data",))


def test_a_volume_bound_meanwhile_is_seen_by_its_pod() -> None:
    state = cache(
        node("n1"), storage_class("local"), pv("pv-1", nodes=["n1"], storage_class="local"),
        pvc("data", storage_class="local"), pod("db", claims=["data"]),
    )  # fmt: skip
    assert claims_of(state) == (("data",), ())
    state.apply(pvc("data", storage_class="local", volume="pv-1"))
    task = task_of(state, "default/db")
    assert (task.bind_claims, [v for v, _ in task.volume_terms]) == ((), ["pv-1"])


def versioned(obj: dict[str, Any], version: int, **spec: Any) -> dict[str, Any]:
    return {
        **obj,
        "metadata": {**obj["metadata"], "resourceVersion": str(version)},
        "spec": {**obj["spec"], **spec},
    }


def test_an_event_from_before_the_prebind_does_not_end_the_assumed_volume() -> None:
    state = cache(
        node("n1"), storage_class("local"), versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 10),
        pvc("data", storage_class="local"),
    )  # fmt: skip
    bind = Bind("default/db", "db-uid", "n1", volumes=(VolumeBinding("default", "data", "", "pv-1"),))
    state.assume_volumes(bind)
    assert state.pv_specs["pv-1"].claim_ref == ("default/data", "")
    # An event of the volume written before the pre-bind went (its labels changed), still in flight.
    older = versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 11)
    older["metadata"]["labels"] = {"tier": "fast"}
    state.apply(older)
    assert state.pv_specs["pv-1"].claim_ref == ("default/data", "")  # still taken
    assert state.pv_specs["pv-1"].labels == {"tier": "fast"}  # with what the event said
    assert state.volume_as_seen("pv-1").claim_ref is None  # type: ignore[union-attr]
    # The event of the pre-bind itself ends the assumption: the API's word from then on.
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data"}
    state.apply(versioned(older, 12, claimRef=ref))
    assert state.pv_specs["pv-1"].claim_ref == ("default/data", "")
    assert state.volume_as_seen("pv-1") is state.pv_specs["pv-1"]


def test_a_failed_prebind_gives_back_the_volume_as_the_api_last_showed_it() -> None:
    state = cache(
        node("n1"), storage_class("local"), versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 10)
    )
    bind = Bind("default/db", "db-uid", "n1", volumes=(VolumeBinding("default", "data", "", "pv-1"),))
    state.assume_volumes(bind)
    later = versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 11)
    later["metadata"]["labels"] = {"tier": "fast"}
    state.apply(later)
    state.forget_volumes(bind)
    assert (state.pv_specs["pv-1"].claim_ref, state.pv_specs["pv-1"].labels) == (None, {"tier": "fast"})


def test_an_event_at_or_past_the_version_written_ends_the_assumption_whatever_it_shows() -> None:
    state = cache(
        node("n1"), storage_class("local"), versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 10)
    )
    bind = Bind("default/db", "db-uid", "n1", volumes=(VolumeBinding("default", "data", "", "pv-1"),))
    state.assume_volumes(bind)
    state.volume_written("PersistentVolume", "pv-1", 12)
    state.apply(versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 11))
    assert state.pv_specs["pv-1"].claim_ref is not None
    state.apply(versioned(pv("pv-1", nodes=["n1"], storage_class="local"), 13))  # claimRef taken off since
    assert state.pv_specs["pv-1"].claim_ref is None
