"""What the first session needs besides the cache, read at start (the rights on PodGroups, the scheduler
config), is read while the cache is listed, not before the listing begins: their round trips wait beside
the listing's work. Both are read before the first session, which runs under the config read. Real
apiserver; the operator in-process, its first listing held until the config's read has been made."""

from __future__ import annotations

import threading

import pytest

from tests.e2e.operator_fixtures import OPERATOR_NS, Kube, node, operator_on_a_thread, pod, wait_for
from volsched.kube.configsource import ConfigMapText
from volsched.operator import Operator, Settings
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def test_the_config_is_read_while_the_cache_is_listed_and_before_the_first_session(
    cluster: LocalControlPlane, k: Kube
) -> None:
    k.nodes(node("n1"))
    ns = k.namespace("first")
    k.pods(ns, pod("p1"))
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
    settings.lease.namespace = OPERATOR_NS
    op = Operator(settings)
    listing, read = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    prelist = op.prelist

    def held_listing() -> None:
        listing.set()
        seen["read before the listing ended"] = read.wait(120)  # the listing waits for the read beside it
        prelist()

    reads = op.reloader.read

    def reading(at_start: bool) -> ConfigMapText | None:
        if at_start:
            seen["listing when read"] = listing.wait(120)  # the read waits for the listing to begin
        answer = reads(at_start)
        read.set()
        return answer

    op.prelist = held_listing  # type: ignore[method-assign]
    op.reloader.read = reading
    with operator_on_a_thread(op):
        wait_for(op.synced.is_set, 300, what="the cache synced")
        assert seen == {"listing when read": True, "read before the listing ended": True}
        wait_for(lambda: k.bound(ns) == {f"{ns}/p1": "n1"}, 60, what="the first session's bind")
        assert op.reloader.known and op.loop.sessions >= 1
