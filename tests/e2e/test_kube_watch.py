"""The lean list+watch of Pods and Nodes (volsched.kube.watch) against a real kube-apiserver: a paginated
list handed over pruned, the watch from the list's resourceVersion, a relist after 410 Gone that deletes
what went meanwhile, and a reconnect after an apiserver outage."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import node, pod, wait_for
from tests.watchspy import recorded_waits
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND
from volsched.framework.decisions import Bind
from volsched.kube.health import ApiHealth
from volsched.kube.lister import WATCHED, WatchedKind
from volsched.kube.prune import EVENT_DECODERS, prune_node, prune_pod
from volsched.kube.watch import ListWatch, Stopped
from volsched.kube.writer import KubeWriter
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

PODS = next(k for k in WATCHED if k.kind == "Pod")
NODES = next(k for k in WATCHED if k.kind == "Node")


class Recorder:
    """What a watcher handed over, in order: (type, "ns/name", resourceVersion, object)."""

    def __init__(self, namespace: str | None = None) -> None:
        self.namespace = namespace
        self.events: list[tuple[str, str, str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, type_: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return
        key = f"{meta.get('namespace')}/{meta['name']}" if meta.get("namespace") else meta["name"]
        with self._lock:
            self.events.append((type_, key, meta.get("resourceVersion", ""), obj))

    def seen(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(t, key) for t, key, _, _ in self.events]

    def names(self, type_: str) -> set[str]:
        return {key.rsplit("/", 1)[-1] for t, key in self.seen() if t == type_}


@pytest.fixture
def watcher(kube: client.ApiClient) -> Iterator[Callable[..., ListWatch]]:
    started: list[ListWatch] = []

    def make(kind: WatchedKind, recorder: Recorder, **kw: Any) -> ListWatch:
        prune = prune_pod if kind.kind == "Pod" else prune_node
        w = ListWatch(kube, kind, on_event=recorder, prune=prune, **kw)
        started.append(w)
        return w

    yield make
    for w in started:
        w.stop()


def create_pods(api: client.ApiClient, ns: str, *names: str) -> None:
    core = client.CoreV1Api(api)
    for name in names:
        body = pod(name)
        body["metadata"]["labels"] = {"app": "web"}
        core.create_namespaced_pod(ns, body)


@pytest.mark.parametrize(
    "pruned_events", [False, True], ids=["events decoded whole", "events pruned as decoded"]
)
def test_the_list_comes_in_pages_pruned_then_the_watch_follows_in_order(
    kube: client.ApiClient, namespace: str, watcher: Callable[..., ListWatch], pruned_events: bool
) -> None:
    names = [f"p{i}" for i in range(7)]
    create_pods(kube, namespace, *names)
    rec = Recorder(namespace)
    taken: list[str] = []  # the events the pruned decode took (the operator's way), by type

    def decode(data: bytes) -> dict[str, Any] | None:
        event = EVENT_DECODERS["Pod"](data)
        if event is not None:
            taken.append(event["type"])
        return event

    extra = {"decode_event": decode} if pruned_events else {}
    w = watcher(PODS, rec, page_size=3, **extra)  # several pages even on a shared apiserver
    w.start()
    assert w.synced.wait(30)
    assert rec.names("ADDED") == set(names)
    first = rec.events[0][3]
    assert first["kind"] == "Pod" and first["apiVersion"] == "v1"
    assert "managedFields" not in first["metadata"] and first["spec"]["schedulerName"] == "volsched"

    core = client.CoreV1Api(kube)
    create_pods(kube, namespace, "late")
    core.patch_namespaced_pod("p1", namespace, {"metadata": {"labels": {"app": "db"}}})
    core.delete_namespaced_pod("p2", namespace, grace_period_seconds=0)
    want = [("ADDED", f"{namespace}/late"), ("MODIFIED", f"{namespace}/p1")]
    wait_for(lambda: ("DELETED", f"{namespace}/p2") in rec.seen(), 30, what="the deletion of p2")
    after = rec.seen()[len(names) :]
    assert after[:2] == want and after[-1] == ("DELETED", f"{namespace}/p2")
    modified = next(obj for t, key, _, obj in rec.events if t == "MODIFIED" and key.endswith("/p1"))
    assert modified["metadata"]["labels"] == {"app": "db"}
    versions = [int(rv) for _, _, rv, _ in rec.events[len(names) :]]
    assert versions == sorted(versions)
    assert w.lists == 1
    if pruned_events:  # the apiserver's events of every type were taken (the shared namespace's too)
        assert {"ADDED", "MODIFIED", "DELETED"} <= set(taken)


def test_a_listing_stopped_midway_ends_at_its_next_page(kube: client.ApiClient, namespace: str) -> None:
    """A start that failed stops the pods' listing: it hands over no page after the one it was on."""
    create_pods(kube, namespace, *(f"p{i}" for i in range(5)))
    rec = Recorder()
    w = ListWatch(kube, PODS, on_event=lambda t, obj: (rec(t, obj), w.stop(timeout=0)), page_size=1)
    with pytest.raises(Stopped):
        w.first_list()
    assert len(rec.events) == 1 and not w.synced.is_set()


def test_the_event_a_bind_brings_back_keeps_the_assumed_task_unparsed(
    kube: client.ApiClient, namespace: str, watcher: Callable[..., ListWatch]
) -> None:
    """What the apiserver changes when it binds (spec.nodeName, the PodScheduled condition, managed
    fields) is, pruned, what the cache assumed: the MODIFIED event it sends is not parsed again."""
    core = client.CoreV1Api(kube)
    core.create_node(node("bind-event-node"))
    create_pods(kube, namespace, "bound")
    feeder = Feeder(ClusterState())
    rec = Recorder(namespace)

    def on_event(type_: str, obj: dict[str, Any]) -> None:
        rec(type_, obj)
        if obj["metadata"].get("namespace") == namespace:
            feeder.apply("Pod", obj)

    w = watcher(PODS, on_event)
    w.start()
    assert w.synced.wait(30)
    key = f"{namespace}/bound"
    uid = feeder.state.raw_pods[key]["metadata"]["uid"]
    feeder.assume(key, uid, "bind-event-node")
    assumed = feeder.state.tasks[key]
    writer = KubeWriter(kube)
    try:
        bind = Bind(pod=key, node="bind-event-node", uid=uid)
        assert writer.bind(bind, feeder.state.raw_pods[key]).result == BOUND
    finally:
        writer.close()
    wait_for(lambda: ("MODIFIED", key) in rec.seen(), 30, what="the bind's event")
    assert not feeder.is_assumed(key)  # the API has caught up
    assert feeder.state.tasks[key] is assumed
    assert feeder.state.raw_pods[key]["spec"]["nodeName"] == "bind-event-node"


def test_a_gone_resource_version_lists_again_handing_over_only_what_changed(
    cluster: LocalControlPlane,
) -> None:
    with cluster.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "relist"}})
        create_pods(api, "relist", "stays", "goes")
        rec = Recorder("relist")
        w = ListWatch(api, PODS, on_event=rec, prune=prune_pod)
        w.relist()
        assert rec.names("ADDED") == {"stays", "goes"}
        core.delete_namespaced_pod("goes", "relist", grace_period_seconds=0)
        create_pods(api, "relist", "new")
    # A restarted apiserver keeps no history older than its start: the watch from the first list's
    # resourceVersion is answered 410 Gone (as after a compaction), and the watcher lists again.
    cluster.stop_apiserver()
    cluster.start_apiserver()
    with cluster.api_client() as api:
        w.api = api
        try:
            w.start()
            wait_for(lambda: w.lists == 2, 30, what="a second list")
            seen = rec.seen()[2:]
            assert ("DELETED", "relist/goes") in seen and ("ADDED", "relist/new") in seen
            assert ("ADDED", "relist/stays") not in seen  # unchanged: not handed over again
            gone = next(obj for t, key, _, obj in rec.events if t == "DELETED")
            assert gone["metadata"]["uid"]  # the writer forgets what it wrote to it by uid
            assert int(gone["metadata"]["resourceVersion"]) > int(rec.events[1][2])

            create_pods(api, "relist", "after")  # and the watch goes on from the new list
            wait_for(lambda: "after" in rec.names("ADDED"), 30, what="a pod created after the relist")
            assert w.lists == 2
        finally:
            w.stop()


def test_nodes_are_listed_pruned_and_their_changes_watched(
    kube: client.ApiClient, watcher: Callable[..., ListWatch]
) -> None:
    core = client.CoreV1Api(kube)
    name = "watched-node"
    core.create_node(node(name, cpu="16"))
    rec = Recorder()
    w = watcher(NODES, rec)
    w.start()
    assert w.synced.wait(30)
    listed = next(obj for t, key, _, obj in rec.events if key == name)
    assert listed["metadata"]["labels"]["kubernetes.io/hostname"] == name
    assert listed["status"]["allocatable"]["cpu"] == "16"
    core.patch_node(name, {"spec": {"unschedulable": True}})
    wait_for(
        lambda: any(
            t == "MODIFIED" and obj["spec"].get("unschedulable") for t, k, _, obj in rec.events if k == name
        ),
        30,
        what="the cordon",
    )


def test_after_an_apiserver_outage_the_watch_resumes_with_a_line_each_way(
    cluster: LocalControlPlane, watcher: Callable[..., ListWatch]
) -> None:
    with cluster.api_client() as api:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": "outage"}})
        create_pods(api, "outage", "before")
    health = ApiHealth()
    rec = Recorder("outage")
    with cluster.api_client() as api:
        w = ListWatch(api, PODS, on_event=rec, prune=prune_pod, health=health)
        try:
            w.start()
            assert w.synced.wait(30)
            cluster.stop_apiserver()
            wait_for(lambda: health.down, 30, what="the watcher to notice the outage")
            cluster.start_apiserver()
            with cluster.api_client() as fresh:
                create_pods(fresh, "outage", "after")
                client.CoreV1Api(fresh).delete_namespaced_pod("before", "outage", grace_period_seconds=0)
            wait_for(
                lambda: ("DELETED", "outage/before") in rec.seen(), 60, what="the deletion after the outage"
            )
            # An outage ends once an answer came and ApiHealth.settle seconds passed since the last
            # failure: the deletion can arrive sooner than that.
            wait_for(lambda: not health.down, 30, what="the outage to end")
        finally:
            w.stop()
    assert rec.names("ADDED") == {"before", "after"}
    assert not health.down and health.outages == 1


def test_a_kind_whose_crd_is_missing_is_asked_for_less_and_less_often_and_read_once_installed(
    kube: client.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each 404 (the CRD not installed) doubles the wait before the next attempt, up to the cap (it was
    one attempt a second, forever); the CRD installed later, its objects arrive."""
    group = f"{namespace}.faults.volsched.test"
    widgets = WatchedKind("Widget", group, "v1", "widgets", True)
    rec = Recorder(namespace)
    w = ListWatch(kube, widgets, on_event=rec, refused_backoff=(0.05, 0.2))
    waits = recorded_waits(w)
    with caplog.at_level(logging.WARNING, logger="volsched.kube"):
        w.start()
        try:
            wait_for(lambda: len(waits) >= 5, 30, what="five refused attempts")
            assert waits[:5] == [0.05, 0.1, 0.2, 0.2, 0.2]
            client.ApiextensionsV1Api(kube).create_custom_resource_definition(
                {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": f"widgets.{group}"},
                    "spec": {
                        "group": group,
                        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                        "scope": "Namespaced",
                        "versions": [
                            {
                                "name": "v1",
                                "served": True,
                                "storage": True,
                                "schema": {
                                    "openAPIV3Schema": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    }
                                },
                            }
                        ],
                    },
                }
            )
            custom = client.CustomObjectsApi(kube)

            def created() -> bool:
                try:
                    custom.create_namespaced_custom_object(
                        group,
                        "v1",
                        namespace,
                        "widgets",
                        {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}},
                    )
                except client.ApiException as exc:
                    if exc.status == 404:  # established, not served yet
                        return False
                    raise
                return True

            wait_for(created, 30, what="the CRD served")
            wait_for(lambda: ("ADDED", f"{namespace}/w1") in rec.seen(), 30, what="the widget read")
        finally:
            w.stop()
    refused = [r.getMessage() for r in caplog.records if "widgets" in r.getMessage()]
    assert len(refused) == 1 and "is its CRD installed?" in refused[0]  # one line, not one per attempt
