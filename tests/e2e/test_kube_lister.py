"""The paginated listings of volsched.kube.lister against a real kube-apiserver: every object once, in
pages of the size asked for, the continue token followed to the end (the start-up listings and the
catch-up after a takeover read this way)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import node, pod
from volsched.kube.lister import list_pages, pods_of
from volsched.kube.prune import PRUNERS, decode_pruned
from volsched.kube.rest import LeanRest, loads

pytestmark = pytest.mark.cluster

NAMES = [f"p{i}" for i in range(5)]


@pytest.fixture
def rest(kube: client.ApiClient) -> Iterator[LeanRest]:
    r = LeanRest(kube, direct=False)
    yield r
    r.close()


def _create(api: client.ApiClient, ns: str, scheduler: str) -> None:
    core = client.CoreV1Api(api)
    for name in NAMES:
        core.create_namespaced_pod(ns, pod(name, scheduler=scheduler))


def test_a_listing_comes_in_pages_of_the_size_asked_each_object_once(rest: LeanRest, namespace: str) -> None:
    _create(rest.api, namespace, "volsched")
    pages = list(list_pages(rest, f"/api/v1/namespaces/{namespace}/pods", timeout=lambda: 30.0, limit=2))
    assert [len(p) for p in pages] == [2, 2, 1]
    assert sorted(o["metadata"]["name"] for p in pages for o in p) == NAMES


def test_our_pods_are_read_by_scheduler_name_through_a_query_that_has_one_already(
    rest: LeanRest, namespace: str
) -> None:
    scheduler = f"lister-{namespace}"  # no other test's pods
    _create(rest.api, namespace, scheduler)
    client.CoreV1Api(rest.api).create_namespaced_pod(namespace, pod("theirs", scheduler="default-scheduler"))
    got = [o for page in pods_of(rest, scheduler, timeout=lambda: 30.0) for o in page]
    assert sorted(o["metadata"]["name"] for o in got) == NAMES
    assert {(o["kind"], o["apiVersion"]) for o in got} == {("Pod", "v1")}


def test_a_listing_the_apiserver_would_compress_comes_back_readable(rest: LeanRest, namespace: str) -> None:
    """kube-apiserver gzips a response over 128 KiB for a client that accepts gzip: a listing that large
    (a few hundred nodes' worth) must still come back as objects."""
    core = client.CoreV1Api(rest.api)
    names = [f"big{i}" for i in range(24)]
    for name in names:  # 24 pods of ~8 KiB each: a ~200 KiB listing
        body = pod(name, scheduler="volsched")
        body["metadata"]["annotations"] = {"example.com/padding": "x" * 8192}
        core.create_namespaced_pod(namespace, body)
    pages = list(list_pages(rest, f"/api/v1/namespaces/{namespace}/pods", timeout=lambda: 30.0, limit=500))
    assert sorted(o["metadata"]["name"] for p in pages for o in p) == sorted(names)


def test_pods_and_nodes_pruned_as_their_page_is_decoded_are_what_pruning_the_whole_gives(
    rest: LeanRest, namespace: str
) -> None:
    """As the apiserver writes them (its defaults, managedFields, a volume of each kind, conditions)."""
    core = client.CoreV1Api(rest.api)
    full = pod("vols")
    full["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}", "a": "b"}
    full["spec"]["volumes"] = [
        {"name": "c", "persistentVolumeClaim": {"claimName": "c"}},
        {"name": "e", "emptyDir": {}},
        {"name": "h", "hostPath": {"path": "/tmp"}},
        {"name": "m", "configMap": {"name": "m"}},
    ]
    core.create_namespaced_pod(namespace, full)
    core.create_namespaced_pod(namespace, pod("plain"))
    created = core.create_node(node(f"{namespace}-n"))
    try:
        for kind, path in (("Pod", f"/api/v1/namespaces/{namespace}/pods"), ("Node", "/api/v1/nodes")):
            data = rest.read(path, timeout=30)
            decoded = decode_pruned(kind, data)
            assert decoded is not None
            assert decoded["items"] == [PRUNERS[kind](o) for o in loads(data)["items"]]
            assert decoded["metadata"] == loads(data)["metadata"]
    finally:
        core.delete_node(created.metadata.name)
