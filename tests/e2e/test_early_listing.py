"""The Pods' first pages asked for at the process's start (volsched.kube.early) make the same first listing
as the watch asking for them itself, on a real kube-apiserver: the pages that came early, then the rest
from the last one's continue token; an early listing that fails leaves the whole listing to the watch."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import pod
from volsched.kube.early import EarlyListing
from volsched.kube.kubeconfig import Api, ClientConfig, read_kubeconfig
from volsched.kube.lister import WatchedKind
from volsched.kube.prune import prune_pod
from volsched.kube.watch import ListWatch
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

PODS = 7  # four pages of two


def _listed(cfg: ClientConfig, kind: WatchedKind, early: EarlyListing | None) -> tuple[list[str], ListWatch]:
    """The names a ListWatch's first listing (pages of two) hands over, and the ListWatch."""
    names: list[str] = []

    def on_event(type_: str, obj: dict[str, Any]) -> None:
        assert type_ == "ADDED"
        names.append(obj["metadata"]["name"])

    watch = ListWatch(Api(cfg), kind, on_event=on_event, prune=prune_pod, page_size=2, early=early)
    watch.first_list()
    return names, watch


@pytest.fixture
def pods(control_plane: LocalControlPlane, kube: client.ApiClient, namespace: str) -> WatchedKind:
    core = client.CoreV1Api(kube)
    for i in range(PODS):
        core.create_namespaced_pod(namespace, pod(f"p{i}"))
    # The namespace's pods as a kind of its own: its listing holds only this test's pods.
    return WatchedKind("Pod", "", "v1", f"namespaces/{namespace}/pods", True)


@pytest.mark.parametrize("early_pages", [1, 2, 4, 20])
def test_early_pages_and_the_rest_make_the_same_listing(
    control_plane: LocalControlPlane, pods: WatchedKind, early_pages: int
) -> None:
    cfg = read_kubeconfig(str(control_plane.kubeconfig_path))
    assert isinstance(cfg, ClientConfig)
    plain, _ = _listed(cfg, pods, None)
    assert sorted(plain) == [f"p{i}" for i in range(PODS)]
    early = EarlyListing(cfg, f"/api/v1/{pods.plural}", page_size=2, pages=early_pages).start()
    names, watch = _listed(cfg, pods, early)
    assert names == plain  # every pod once, in the apiserver's order
    # The watch asked for what did not come early itself (its own connection made), nothing else.
    assert (watch._lists is None) is (early_pages >= 4)
    assert early.page("") is None  # taken, and the rest dropped with the listing


def test_an_early_listing_that_fails_leaves_the_listing_to_the_watch(
    control_plane: LocalControlPlane, pods: WatchedKind
) -> None:
    cfg = read_kubeconfig(str(control_plane.kubeconfig_path))
    assert isinstance(cfg, ClientConfig)
    refused = ClientConfig(cfg.host, ssl_ca_cert=cfg.ssl_ca_cert, token="not-a-token")  # answered 401
    early = EarlyListing(refused, f"/api/v1/{pods.plural}", page_size=2).start()
    names, watch = _listed(cfg, pods, early)
    assert sorted(names) == [f"p{i}" for i in range(PODS)]
    assert watch._lists is not None
