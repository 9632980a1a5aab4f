"""The pre-bind of claims of a WaitForFirstConsumer class (fault injection): a volume's claimRef is written
before the pod is bound, and the pod is bound only once the cache (the watch) shows the claim bound, with no
read of the apiserver while it waits; a volume another claim took meanwhile is never taken from it, and then
no pod of the commit is bound and each is told why; a claim whose provisioner gave up has its selected node
taken off again, with no pod bound; an event from before the pre-bind says nothing of it; a claim that
failed backs off before its next pre-bind."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.builders import pod
from tests.fences import Fence
from tests.unit._scripted_server import OK, ScriptedServer
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND, FAILED, FENCED, GONE, BindOutcome
from volsched.framework.decisions import Bind
from volsched.kube.volumebind import VolumeBinder
from volsched.kube.writer import KubeWriter
from volsched.model.volumes import BIND_COMPLETED, SELECTED_NODE, VolumeBinding

PVC = "/api/v1/namespaces/default/persistentvolumeclaims/data"
PV = "/api/v1/persistentvolumes/pv-1"


def claim(*, version: int = 3, volume: str = "", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data",
            "namespace": "default",
            "uid": "claim-uid",
            "resourceVersion": str(version),
            "annotations": annotations or {},
        },
        "spec": {"storageClassName": "local", "volumeName": volume},
    }


def bound(version: int, volume: str = "pv-1") -> dict[str, Any]:
    return claim(version=version, volume=volume, annotations={BIND_COMPLETED: "yes"})


def volume(claim_ref: dict[str, Any] | None = None, *, version: int = 5) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": "local", "capacity": {"storage": "1Gi"}}
    if claim_ref:
        spec["claimRef"] = claim_ref
    meta = {"name": "pv-1", "resourceVersion": str(version)}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def cached_pod(name: str) -> dict[str, Any]:
    p = pod(name)
    p["metadata"]["uid"] = f"{name}-uid"
    return p


@pytest.fixture
def cache() -> ClusterState:
    """The operator's cache as the watches fed it: the pods, the claim and the volume."""
    state = ClusterState()
    for obj in (cached_pod("p"), cached_pod("a"), cached_pod("b"), claim(), volume()):
        state.apply(obj)
    return state


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def binder(writer: KubeWriter, cache: ClusterState, clock: Clock) -> Iterator[VolumeBinder]:
    b = VolumeBinder(writer, cache, timeout=5, clock=clock)
    yield b
    b.close()


def static(name: str = "p") -> Bind:
    return Bind(
        f"default/{name}",
        f"{name}-uid",
        "n1",
        volumes=(VolumeBinding("default", "data", "claim-uid", "pv-1"),),
    )


def dynamic(name: str = "p") -> Bind:
    return Bind(
        f"default/{name}", f"{name}-uid", "n1", volumes=(VolumeBinding("default", "data", "claim-uid"),)
    )


class Pending:
    """A commit handed to the binder, its outcomes to come."""

    def __init__(self, binder: VolumeBinder, binds: list[Bind]) -> None:
        self.outcomes: list[BindOutcome] = []
        self.finished = threading.Event()
        pods = {b.pod: pod(b.pod.split("/")[1]) for b in binds}
        binder.submit(binds, pods, done=self._done)

    def _done(self, outcomes: list[BindOutcome]) -> None:
        self.outcomes = outcomes
        self.finished.set()

    def result(self) -> list[BindOutcome]:
        assert self.finished.wait(60), "the binder never answered"
        return self.outcomes


def until(what: Callable[[], bool]) -> None:
    """Wait for something that happens (the binder's threads doing what the test waits for)."""
    done = threading.Event()
    for _ in range(6000):
        if what():
            return
        done.wait(0.01)
    raise AssertionError("never happened")


def gets(server: ScriptedServer, path: str) -> int:
    return sum(1 for r in server.received if r.method == "GET" and r.path == path)


def test_the_volume_is_prebound_and_the_pod_bound_once_the_watch_shows_the_claim_bound(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder, clock: Clock
) -> None:
    ref = {"namespace": "default", "name": "data", "uid": "claim-uid"}
    server.script[PVC] = [(200, {}, claim())]  # read before the pre-bind
    server.script[PV] = [(200, {}, volume()), (200, {}, volume(ref, version=6))]  # read, then written
    server.script["/binding"] = [OK]
    pending = Pending(binder, [static()])
    until(lambda: binder.waiting == 1)
    # The wait reads the cache, woken by its events and its deadline: never the apiserver.
    looked = binder.looks
    for version in (7, 8, 9):  # the claim's events before the PersistentVolume controller bound it
        cache.apply(claim(version=version, annotations={"seen": str(version)}))
    clock.now += 3
    until(lambda: binder.looks >= looked + 2)
    assert (gets(server, PVC), gets(server, PV)) == (1, 1)
    assert not server.sent("/binding") and not pending.finished.is_set()
    cache.apply(bound(10))
    [outcome] = pending.result()
    assert outcome.result == BOUND
    [put] = [r for r in server.received if r.method == "PUT"]
    assert put.path == PV
    assert put.body["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "data",
        "uid": "claim-uid",
        "resourceVersion": "3",
    }
    order = [r.method for r in server.received if r.path.endswith(("pv-1", "binding"))]
    assert order == ["GET", "PUT", "POST"]


def test_a_volume_taken_meanwhile_is_never_taken_and_no_pod_of_the_gang_is_bound(
    server: ScriptedServer, writer: KubeWriter, binder: VolumeBinder
) -> None:
    binds = [static("a"), Bind("default/b", "b-uid", "n1")]
    server.script[PVC] = [(200, {}, claim())]
    server.script[PV] = [(200, {}, volume({"namespace": "default", "name": "other"}))]
    outcomes = Pending(binder, binds).result()
    why = (
        "binding volumes: persistentvolume pv-1 was bound to claim default/other meanwhile; not bound; "
        "backing off 1 s (failed 1 time)"
    )
    assert [(o.bind.pod, o.result, o.detail) for o in outcomes] == [
        ("default/a", FAILED, why),
        ("default/b", FAILED, why),
    ]
    assert not [r for r in server.received if r.method == "PUT" or r.path.endswith("/binding")]
    told = [r for r in server.received if r.method == "PATCH" and r.path.endswith("/status")]
    assert sorted(r.path for r in told) == [
        "/api/v1/namespaces/default/pods/a/status",
        "/api/v1/namespaces/default/pods/b/status",
    ]


def test_a_provisioning_given_up_takes_the_selected_node_off_and_binds_nothing(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    server.script[PVC] = [
        (200, {}, claim()),  # read before the pre-bind
        (200, {}, claim(version=4, annotations={SELECTED_NODE: "n1"})),  # written
        (200, {}, claim(version=5)),  # read again to undo: nothing of ours left to take off
    ]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    cache.apply(claim(version=4, annotations={SELECTED_NODE: "n1"}))
    cache.apply(claim(version=5))  # the provisioner took the selected node off
    [outcome] = pending.result()
    assert outcome.result == FAILED
    assert "provisioning failed for persistentvolumeclaim default/data" in outcome.detail
    puts = [r for r in server.received if r.method == "PUT"]
    assert [p.body["metadata"]["annotations"] for p in puts] == [{SELECTED_NODE: "n1"}]
    assert not server.sent("/binding")


def test_an_event_from_before_the_prebind_says_nothing_of_it(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    """The cache still holds the claim as it was before the selected node was written (no annotation):
    that is not the provisioner taking it off."""
    server.script[PVC] = [(200, {}, claim()), (200, {}, claim(version=6, annotations={SELECTED_NODE: "n1"}))]
    server.script["/binding"] = [OK]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    looked = binder.looks
    cache.apply(claim(version=5, annotations={"labelled": "before the write"}))
    until(lambda: binder.looks > looked)
    assert not pending.finished.is_set()
    cache.apply(claim(version=6, annotations={SELECTED_NODE: "n1"}))
    cache.apply(claim(version=7, volume="pvc-1", annotations={SELECTED_NODE: "n1", BIND_COMPLETED: "yes"}))
    [outcome] = pending.result()
    assert outcome.result == BOUND


def test_a_claim_not_bound_in_time_has_its_selected_node_taken_off_and_backs_off(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder, clock: Clock
) -> None:
    written = claim(version=4, annotations={SELECTED_NODE: "n1"})
    server.script[PVC] = [
        (200, {}, claim()),
        (200, {}, written),
        (200, {}, written),
        (200, {}, claim(version=5)),
    ]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    clock.now += 5
    [outcome] = pending.result()
    assert outcome.result == FAILED
    assert outcome.detail == (
        "binding volumes: persistentvolumeclaim(s) default/data not bound within 5 s (waiting for the "
        "volume's provisioner and the PersistentVolume controller); not bound; backing off 1 s (failed 1 time)"
    )
    puts = [r for r in server.received if r.method == "PUT"]
    assert [p.body["metadata"]["annotations"] for p in puts] == [{SELECTED_NODE: "n1"}, {}]
    assert not server.sent("/binding")

    # Placed again at once: held back until its backoff is over, nothing written meanwhile.
    sent = len(server.received)
    looked = binder.looks
    again = Pending(binder, [dynamic()])
    until(lambda: binder.looks > looked)
    assert len(server.received) == sent and not again.finished.is_set()
    server.script[PVC] = [
        (200, {}, claim(version=5)),
        (200, {}, claim(version=6, annotations={SELECTED_NODE: "n1"})),
    ]
    clock.now += 1
    until(lambda: len([r for r in server.received if r.method == "PUT"]) == 3 and binder.waiting == 1)
    clock.now += 5
    [outcome] = again.result()
    assert outcome.detail.endswith("; not bound; backing off 2 s (failed 2 times)")


def test_a_pod_deleted_while_its_claims_wait_is_gone_and_backs_nothing_off(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    written = claim(version=4, annotations={SELECTED_NODE: "n1"})
    server.script[PVC] = [
        (200, {}, claim()),
        (200, {}, written),
        (200, {}, written),
        (200, {}, claim(version=5)),
    ]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    cache.delete("Pod", "default", "p")
    [outcome] = pending.result()
    assert (outcome.result, outcome.detail) == (
        GONE,
        "binding volumes: pod default/p: pod does not exist any more; not bound",
    )
    puts = [r for r in server.received if r.method == "PUT"]
    assert [p.body["metadata"]["annotations"] for p in puts] == [{SELECTED_NODE: "n1"}, {}]


def test_a_claim_deleted_while_it_waits_fails_the_commit_and_binds_no_pod(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    written = claim(version=4, annotations={SELECTED_NODE: "n1"})
    gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
    server.script[PVC] = [(200, {}, claim()), (200, {}, written), (404, {}, gone)]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    cache.delete("PersistentVolumeClaim", "default", "data")
    [outcome] = pending.result()
    assert (outcome.result, outcome.detail) == (
        FAILED,
        "binding volumes: persistentvolumeclaim default/data does not exist any more; not bound; "
        "backing off 1 s (failed 1 time)",
    )
    assert len([r for r in server.received if r.method == "PUT"]) == 1  # the pre-bind; nothing to undo
    assert not server.sent("/binding")


def test_a_lease_lost_while_claims_wait_ends_the_wait_and_nothing_more_is_written(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    """A writer that may have lost its Lease stops writing at once: the claim shown bound after it, the
    pod is not bound, nor is the pre-bind undone or the pod told (the next leader sees what was written)."""
    fence = writer.fence = Fence()
    written = claim(version=4, annotations={SELECTED_NODE: "n1"})
    server.script[PVC] = [(200, {}, claim()), (200, {}, written)]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    sent = len(server.received)
    fence.open = False
    cache.apply(claim(version=6, volume="pv-9", annotations={SELECTED_NODE: "n1", BIND_COMPLETED: "yes"}))
    [outcome] = pending.result()
    assert outcome.result == FENCED, outcome
    assert server.received[sent:] == []


def test_a_claim_being_deleted_while_it_waits_fails_the_commit_at_once_and_backs_off(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    """A claim deleted while a pending pod refers to it is kept by its ``kubernetes.io/pvc-protection``
    finalizer, shown with a deletionTimestamp, and never bound: the commit fails as soon as the cache shows
    it (not at the timeout), its selected node taken off, no pod bound, and the claim backs off as one
    gone entirely does."""
    written = claim(version=4, annotations={SELECTED_NODE: "n1"})
    deleting = claim(version=5, annotations={SELECTED_NODE: "n1"})
    deleting["metadata"] |= {
        "deletionTimestamp": "2026-11-30T10:00:00Z",
        "finalizers": ["kubernetes.io/pvc-protection"],
    }
    server.script[PVC] = [
        (200, {}, claim()),  # read before the pre-bind
        (200, {}, written),  # written
        (200, {}, deleting),  # read again to undo
        (200, {}, deleting),  # the selected node taken off
    ]
    pending = Pending(binder, [dynamic()])
    until(lambda: binder.waiting == 1)
    cache.apply(deleting)
    [outcome] = pending.result()  # the fake clock stands still: the timeout never comes
    assert (outcome.result, outcome.detail) == (
        FAILED,
        "binding volumes: persistentvolumeclaim default/data is being deleted; not bound; "
        "backing off 1 s (failed 1 time)",
    )
    puts = [r for r in server.received if r.method == "PUT"]
    assert [p.body["metadata"]["annotations"] for p in puts] == [{SELECTED_NODE: "n1"}, {}]
    assert not server.sent("/binding")
    told = [r for r in server.received if r.method == "PATCH" and r.path.endswith("/status")]
    assert [r.path for r in told] == ["/api/v1/namespaces/default/pods/p/status"]


def test_a_claim_already_being_deleted_at_the_prebind_is_not_written_to(
    server: ScriptedServer, writer: KubeWriter, cache: ClusterState, binder: VolumeBinder
) -> None:
    """A claim the pre-bind reads with a deletionTimestamp will never be bound: it is refused there, with
    nothing written (no selected node to put on and take off again), no pod bound, and the pod told."""
    deleting = claim()
    deleting["metadata"] |= {
        "deletionTimestamp": "2026-11-30T10:00:00Z",
        "finalizers": ["kubernetes.io/pvc-protection"],
    }
    server.script[PVC] = [(200, {}, deleting), (200, {}, deleting)]
    [outcome] = Pending(binder, [dynamic()]).result()
    assert (outcome.result, outcome.detail) == (
        FAILED,
        "binding volumes: persistentvolumeclaim default/data is being deleted; not bound; "
        "backing off 1 s (failed 1 time)",
    )
    assert [r for r in server.received if r.method == "PUT"] == []
    assert not server.sent("/binding")
