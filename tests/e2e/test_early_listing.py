"""The Pods' first pages asked for at the process's start (volsched.kube.early) make the same first listing
as the watch asking for them itself, on a real kube-apiserver: the pages that came early, then the rest
from the last one's continue token; an early listing that fails leaves the whole listing to the watch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
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

ROOT = Path(__file__).resolve().parents[2]

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


#: Run in a process of its own (one thread, as ``volsched run`` at its start): the kind's pages fetched by
#: a forked process (:func:`volsched.kube.early.apart`), then listed as the watch lists them; prints the
#: names handed over, whether the fork was begun, and whether that process is gone (waited for).
_APART = """
import json, os, sys, threading
from volsched.kube.early import EarlyListing, apart
from volsched.kube.kubeconfig import read_kubeconfig
cfg = read_kubeconfig(sys.argv[1])
early = EarlyListing(cfg, sys.argv[2], page_size=2, pages=int(sys.argv[3]))
left = apart([early])
pid = early._pid
if sys.argv[4] == "drop":  # the listing over before its pages are taken: the process is ended
    early.drop()
    names = []
else:
    from tests.e2e.test_early_listing import _listed, _kind
    names, _ = _listed(cfg, _kind(sys.argv[2]), early)
for t in threading.enumerate():
    if t.name.startswith("volsched-early-"):
        t.join()
try:
    os.waitpid(pid, os.WNOHANG)
    gone = False
except ChildProcessError:
    gone = True
print(json.dumps({"names": names, "begun": not left, "gone": gone}))
"""


def _kind(path: str) -> WatchedKind:
    return WatchedKind("Pod", "", "v1", path.removeprefix("/api/v1/"), True)


def _apart(control_plane: LocalControlPlane, pods: WatchedKind, pages: int, mode: str) -> dict[str, Any]:
    argv = [sys.executable, "-c", _APART, str(control_plane.kubeconfig_path), f"/api/v1/{pods.plural}"]
    done = subprocess.run([*argv, str(pages), mode], capture_output=True, text=True, cwd=ROOT, check=True)
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@pytest.mark.parametrize("early_pages", [1, 4, 20])
def test_pages_fetched_by_a_process_of_their_own_make_the_same_listing(
    control_plane: LocalControlPlane, pods: WatchedKind, early_pages: int
) -> None:
    cfg = read_kubeconfig(str(control_plane.kubeconfig_path))
    assert isinstance(cfg, ClientConfig)
    plain, _ = _listed(cfg, pods, None)
    out = _apart(control_plane, pods, early_pages, "list")
    assert out["begun"]  # forked: the process had one thread
    assert out["names"] == plain  # every pod once, in the apiserver's order
    assert out["gone"]  # the process that fetched them waited for


def test_a_listing_dropped_ends_the_process_fetching_its_pages(
    control_plane: LocalControlPlane, pods: WatchedKind
) -> None:
    out = _apart(control_plane, pods, 20, "drop")
    assert out["begun"]
    assert out["gone"]
