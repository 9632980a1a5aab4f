"""The few kinds besides Pods and Nodes (budgets, Queues, PodGroups...) never linger in the cache once
deleted: not when deleted between the operator's first listing and its watch, not when deleted while
its watches were cut off (real apiserver; the operator in-process, to read its cache)."""

from __future__ import annotations

import base64
import contextlib
import json
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, operator_on_a_thread, queue, wait_for
from volsched.operator import Operator, Settings
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

RunningOperator = Callable[[], Operator]


def budget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": name}}},
    }


@pytest.fixture
def running(cluster: LocalControlPlane) -> Iterator[RunningOperator]:
    """Starts :meth:`Operator.run` on a thread of its own (lease off, any free port); stops it after."""
    with contextlib.ExitStack() as stack:

        def start() -> Operator:
            settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
            settings.lease.enabled = False
            settings.http.host, settings.http.port = "127.0.0.1", 0
            return stack.enter_context(operator_on_a_thread(Operator(settings)))

        yield start


def etcd_delete(cluster: LocalControlPlane, key: str) -> None:
    """Delete one object's key in etcd behind the apiserver's back (it is down: as another apiserver
    of an HA control plane would, while this one is unreachable)."""
    body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
    req = urllib.request.Request(f"{cluster.etcd_url}/v3/kv/deleterange", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert json.loads(resp.read()).get("deleted") == "1", key


def test_a_budget_deleted_between_the_first_listing_and_the_watch_leaves_the_cache(
    k: Kube, running: RunningOperator, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = k.namespace("gap")
    policy = client.PolicyV1Api(k.api)
    for name in ("kept", "deleted"):
        policy.create_namespaced_pod_disruption_budget(ns, budget(name))
    listed = Operator.prelist

    def prelist_then_delete(op: Operator) -> None:
        listed(op)
        assert f"{ns}/deleted" in op.state.budgets  # in the first listing
        policy.delete_namespaced_pod_disruption_budget("deleted", ns)  # before any watch is under way

    monkeypatch.setattr(Operator, "prelist", prelist_then_delete)
    op = running()
    wait_for(lambda: op.synced.is_set(), 60, what="the first listing")
    policy.create_namespaced_pod_disruption_budget(ns, budget("later"))  # the watch is under way
    wait_for(lambda: f"{ns}/later" in op.state.budgets, 60, what="a budget created after the start")
    wait_for(lambda: f"{ns}/deleted" not in op.state.budgets, 10, what="the deleted budget to leave")
    assert f"{ns}/kept" in op.state.budgets


def test_a_budget_and_a_queue_deleted_while_the_watches_are_down_leave_the_cache(
    cluster: LocalControlPlane, k: Kube, running: RunningOperator
) -> None:
    ns = k.namespace("outage")
    policy = client.PolicyV1Api(k.api)
    for name in ("kept", "deleted"):
        policy.create_namespaced_pod_disruption_budget(ns, budget(name))
    k.queue(queue("kept"))
    k.queue(queue("deleted"))
    op = running()
    wait_for(lambda: op.synced.is_set(), 60, what="the first listing")
    wait_for(lambda: {"kept", "deleted"} <= set(op.state.queues), 30, what="the queues in the cache")

    cluster.stop_apiserver()
    wait_for(lambda: op.health.down, 30, what="the watches to notice the outage")
    etcd_delete(cluster, f"/registry/poddisruptionbudgets/{ns}/deleted")
    etcd_delete(cluster, "/registry/scheduling.volsched.io/queues/deleted")
    cluster.start_apiserver()

    with cluster.api_client() as api:  # the watches are back: they bring what is new
        client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(ns, budget("after"))
    wait_for(lambda: f"{ns}/after" in op.state.budgets, 60, what="a budget created after the outage")
    wait_for(lambda: f"{ns}/deleted" not in op.state.budgets, 10, what="the deleted budget to leave")
    wait_for(lambda: "deleted" not in op.state.queues, 10, what="the deleted queue to leave")
    assert f"{ns}/kept" in op.state.budgets and "kept" in op.state.queues
