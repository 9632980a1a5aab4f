"""A listing whose continue token expired between two pages, on a real kube-apiserver + etcd: etcd is
compacted past the listing's resourceVersion while it is read, and the next page is answered 410 Gone.
Both readers (the start's and catch-up's :func:`~volsched.kube.lister.list_pages`, and the watches'
:meth:`~volsched.kube.watch.ListWatch.relist`) list the whole kind again from its first page: nothing
lost, nothing handed over twice, and what went meanwhile handed over as deleted.

Its own control plane: a 1.35 apiserver serves a continue from its watch cache's snapshots
(ListFromCacheSnapshot), where an etcd compaction it did not make itself expires nothing; with them off
it reads the continue from etcd, as an apiserver does whose snapshot is gone or that has none.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.controlplanes import running
from volsched.kube.lister import WatchedKind, list_pages
from volsched.kube.rest import LeanRest
from volsched.kube.watch import ListWatch
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

CONFIGMAPS = WatchedKind("ConfigMap", "", "v1", "configmaps", True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalControlPlane]:
    with running(
        LocalControlPlane(extra_apiserver_args=("--feature-gates=ListFromCacheSnapshot=false",))
    ) as cp:
        yield cp


@pytest.fixture
def api(cluster: LocalControlPlane) -> Iterator[client.ApiClient]:
    with cluster.api_client() as api:
        yield api


def _etcd(cluster: LocalControlPlane, call: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"{cluster.etcd_url}/v3/{call}", data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
        return answer


def compact(cluster: LocalControlPlane) -> None:
    """Compact etcd at its current revision: every earlier resourceVersion is gone."""
    revision = _etcd(cluster, "kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"]
    _etcd(cluster, "kv/compaction", {"revision": revision, "physical": True})


def _namespace(api: client.ApiClient, name: str, maps: int) -> client.CoreV1Api:
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    for i in range(maps):
        core.create_namespaced_config_map(
            name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"m{i}"))
        )
    return core


def _changed_meanwhile(core: client.CoreV1Api, ns: str, *, deleted: list[str]) -> None:
    """While the listing is read: objects deleted (listed already or not), one changed, one created; then
    etcd compacted, which expires the listing's continue token."""
    for name in deleted:
        core.delete_namespaced_config_map(name, ns)
    core.patch_namespaced_config_map("m1", ns, {"data": {"changed": "yes"}})
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="new")))


def _now(core: client.CoreV1Api, ns: str) -> dict[str, str]:
    return {m.metadata.name: m.metadata.resource_version for m in core.list_namespaced_config_map(ns).items}


def test_a_listing_whose_continue_token_expired_is_read_again_whole_each_version_once(
    api: client.ApiClient, cluster: LocalControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    ns = "expired-pages"
    core = _namespace(api, ns, 5)
    rest = LeanRest(api, direct=False)
    pages = list_pages(rest, f"/api/v1/namespaces/{ns}/configmaps", timeout=lambda: 30.0, limit=2)
    given = [o for o in next(pages)]  # m0, m1
    _changed_meanwhile(core, ns, deleted=["m0", "m3"])
    compact(cluster)
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        given += [o for page in pages for o in page]
    assert any("listing them again from the start" in r.getMessage() for r in caplog.records)
    versions = [(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in given]
    assert len(versions) == len(set(versions))  # no version handed over twice
    latest = {name: rv for name, rv in versions}  # the last one handed over of each object
    now = _now(core, ns)
    assert {n: latest[n] for n in now} == now  # every object, at its version now
    assert set(latest) - set(now) == {"m0"}  # only what the broken-off listing showed before it went


def test_a_watch_list_whose_continue_token_expired_lists_again_and_hands_the_deletions_over(
    api: client.ApiClient, cluster: LocalControlPlane
) -> None:
    """The start's listing of a kind (``first_list``): it used to raise the 410, which ended the start."""
    ns = "expired-watch"
    core = _namespace(api, ns, 6)
    cache: dict[str, str] = {}
    handed: list[tuple[str, str, str]] = []
    changed = False

    def on_event(type_: str, obj: dict[str, Any]) -> None:
        nonlocal changed
        meta = obj["metadata"]
        if meta.get("namespace") != ns:
            return
        handed.append((type_, meta["name"], meta["resourceVersion"]))
        if type_ == "DELETED":
            cache.pop(meta["name"], None)
        else:
            cache[meta["name"]] = meta["resourceVersion"]
        if not changed:  # the first page is being handed over; the second is on its way or in
            changed = True
            _changed_meanwhile(core, ns, deleted=["m0", "m4"])
            compact(cluster)

    w = ListWatch(api, CONFIGMAPS, on_event=on_event, page_size=1)
    rv = w.first_list()
    assert w.lists == 1 and rv
    assert cache == _now(core, ns)
    assert ("DELETED", "m0") in [(t, n) for t, n, _ in handed]  # listed before it went: deleted after
    added = [(n, v) for t, n, v in handed if t == "ADDED"]
    assert len(added) == len(set(added))  # no version handed over twice
