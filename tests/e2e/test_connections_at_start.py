"""Fewer connections (and TLS handshakes) on the way to ready, on a real kube-apiserver: the few kinds' first
pages asked for early one after the other over one connection (volsched.kube.early.FEW_PATHS), each kind's
first listing the same as the watch asking itself, a kind that is not served leaving only its own listing to
the watch; the early listing's connection parked once done (volsched.kube.parked) and taken by the next
thread that needs one; a parked connection the apiserver closed meanwhile replaced; and the watch following
on from the early listing's resourceVersion, an object created after it seen."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import wait_for
from volsched.kube import parked
from volsched.kube.early import FEW_PATHS, EarlyListing, in_turn
from volsched.kube.kubeconfig import Api, ClientConfig, read_kubeconfig
from volsched.kube.lister import WATCHED, WatchedKind
from volsched.kube.rest import LeanRest
from volsched.kube.watch import ApiError, ListWatch
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

FEW = [k for k in WATCHED if k.kind in FEW_PATHS]
NOT_SERVED = "/apis/example.volsched.io/v1/nothings"  # answered 404


def _cfg(control_plane: LocalControlPlane) -> ClientConfig:
    cfg = read_kubeconfig(str(control_plane.kubeconfig_path))
    assert isinstance(cfg, ClientConfig)
    return cfg


def _names(cfg: ClientConfig, kind: WatchedKind, early: EarlyListing | None) -> tuple[list[str], ListWatch]:
    names: list[str] = []
    watch = ListWatch(
        Api(cfg),
        kind,
        on_event=lambda _t, obj: names.append(obj["metadata"]["name"]),
        page_size=2,
        early=early,
    )
    watch.first_list()
    return names, watch


def _listing(cfg: ClientConfig, kind: WatchedKind, early: EarlyListing | None) -> list[str] | int:
    """What a kind's first listing hands over, or the status it was refused with (a CRD not installed)."""
    try:
        names, watch = _names(cfg, kind, early)
    except ApiError as exc:
        return exc.status
    assert watch._lists is None or early is None, kind.kind  # with early pages: nothing asked for itself
    return names


def _done(listings: list[EarlyListing]) -> None:
    """Wait until every listing's pages came (or failed)."""
    for listing in listings:
        with listing._done:
            listing._done.wait_for(lambda listing=listing: listing._next is None, timeout=60)  # type: ignore[misc]


@pytest.fixture
def namespaces(kube: client.ApiClient, namespace: str) -> Iterator[str]:
    """Three more namespaces (the Namespaces' listing over two pages of two), deleted after the test."""
    core = client.CoreV1Api(kube)
    names = [f"{namespace}-few-{i}" for i in range(3)]
    for name in names:
        core.create_namespace({"metadata": {"name": name}})
    yield namespace
    for name in names:
        core.delete_namespace(name)


def test_the_few_kinds_listed_early_over_one_connection_make_the_same_listings(
    control_plane: LocalControlPlane, namespaces: str
) -> None:
    cfg = _cfg(control_plane)
    parked.close_all()
    assert list(FEW_PATHS) == [k.kind for k in FEW]  # the cache's order, every kind but the many
    assert all(FEW_PATHS[k.kind] == k.path for k in FEW)
    plain = {k.kind: _listing(cfg, k, None) for k in FEW}
    assert len(plain["Namespace"]) >= 4 and plain["Queue"] == 404  # this cluster has no Queues' CRD
    # One kind not served first: it leaves its listing to its watch, the others still come early.
    nothing = EarlyListing(cfg, NOT_SERVED, page_size=2)
    few = {k.kind: EarlyListing(cfg, k.path, page_size=2) for k in FEW}
    in_turn([nothing, *few.values()], name="test-early-few")
    _done([nothing, *few.values()])
    assert nothing.page("") is None
    for k in FEW:
        assert _listing(cfg, k, few[k.kind]) == plain[k.kind], k.kind
    # The one connection they came over, parked once done, is what the next read takes.
    rest = LeanRest(Api(cfg))
    assert rest.get("/version", timeout=30)["major"]
    assert (rest.connects, rest.adopted) == (0, 1)
    assert parked.take(*rest._netloc, rest._tls) is None  # one was parked, and it is taken
    rest.close()


def test_a_kind_listed_early_and_not_served_fails_as_its_own_listing_would(
    control_plane: LocalControlPlane,
) -> None:
    cfg = _cfg(control_plane)
    kind = WatchedKind("Nothing", "example.volsched.io", "v1", "nothings", False)
    early = EarlyListing(cfg, kind.path)
    in_turn([early], name="test-early-none")
    with pytest.raises(ApiError) as refused:
        _names(cfg, kind, early)
    assert refused.value.status == 404


def test_a_parked_connection_the_apiserver_closed_is_replaced(control_plane: LocalControlPlane) -> None:
    cfg = _cfg(control_plane)
    parked.close_all()
    reader = LeanRest(Api(cfg))
    assert reader.get("/version", timeout=30)["major"]
    sock = reader._local.conn.sock
    reader.park()
    # The apiserver's side ends it (as after 90 s idle): our half shut for writing, it closes its own.
    sock.shutdown(socket.SHUT_WR)
    wait_for(lambda: bool(select.select([sock], [], [], 0)[0]), 30, what="the apiserver closing its side")
    taker = LeanRest(Api(cfg))
    assert taker.get("/version", timeout=30)["major"]
    assert (taker.connects, taker.adopted) == (1, 0)
    assert parked.take(*taker._netloc, taker._tls) is None  # the closed one was not kept
    taker.close()


def test_the_watch_follows_on_from_the_early_listing(
    control_plane: LocalControlPlane, kube: client.ApiClient, namespace: str, request: pytest.FixtureRequest
) -> None:
    cfg = _cfg(control_plane)
    kind = next(k for k in WATCHED if k.kind == "Namespace")
    early = EarlyListing(cfg, kind.path)
    in_turn([early], name="test-early-ns")
    _done([early])
    # Created after the early page was read, before the listing takes it: only the watch can show it.
    core = client.CoreV1Api(kube)
    core.create_namespace({"metadata": {"name": f"{namespace}-after"}})
    request.addfinalizer(lambda: core.delete_namespace(f"{namespace}-after"))
    seen: list[tuple[str, str]] = []
    watch = ListWatch(
        Api(cfg), kind, on_event=lambda t, obj: seen.append((t, obj["metadata"]["name"])), early=early
    )
    watch.first_list()
    assert ("ADDED", f"{namespace}-after") not in seen  # not in the early listing
    assert watch._lists is None
    watch.start()
    try:
        wait_for(
            lambda: ("ADDED", f"{namespace}-after") in seen, 60, what="the namespace made after the listing"
        )
    finally:
        watch.stop()
