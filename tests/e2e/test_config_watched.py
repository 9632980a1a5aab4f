"""The scheduler ConfigMap is watched (by its name): with the poll set to once an hour, a change is loaded
soon, a bad config is rejected with the reason on the ConfigMap and the config in force kept, and a fix
loads again (real apiserver; the operator in-process, to read its config; the poll's own behaviour, while
the watch is not answered: tests/unit/test_config_watched.py)."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import (
    CONFIG_MAP,
    OPERATOR_NS,
    Kube,
    node,
    operator_on_a_thread,
    pod,
    wait_for,
)
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched.operator import Operator, Settings
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

ENQUEUE = DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue")


def test_a_config_change_comes_through_the_watch_without_a_poll(k: Kube, cluster: LocalControlPlane) -> None:
    k.set_config(ENQUEUE)
    k.nodes(node("n1"))
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
    settings.lease.namespace = OPERATOR_NS
    settings.config.poll_every = 3600.0  # read at start, then never polled within the test
    with operator_on_a_thread(Operator(settings)) as op:
        wait_for(op.synced.is_set, 60, what="the cache synced")
        assert list(op.config.actions) == ["enqueue"]
        wait_for(lambda: op.config_watch.answering, 60, what="the ConfigMap's watch answered")
        ns = k.namespace("watched")
        k.pods(ns, pod("waits"))

        k.set_config("actions: enqueue, allocate, teleport\ntiers: []\n")
        wait_for(lambda: op.reloader.error is not None, 30, what="the bad config rejected")
        assert list(op.config.actions) == ["enqueue"]  # the config in force kept
        events = wait_for(
            lambda: [
                e
                for e in k.core.list_namespaced_event(OPERATOR_NS).items
                if e.reason == "InvalidSchedulerConfig" and e.involved_object.name == CONFIG_MAP
            ],
            30,
            what="the rejection's event on the ConfigMap",
        )
        assert "teleport" in events[0].message

        k.set_config(DEFAULT_CONFIG_YAML)  # fixed: loaded, and the pod is placed under it
        wait_for(lambda: k.bound(ns) == {f"{ns}/waits": "n1"}, 60, what="the pod bound under the new config")
        assert op.reloader.error is None and "allocate" in op.config.actions
