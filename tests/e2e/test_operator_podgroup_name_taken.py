"""A PodGroup named like a running pod standing alone, against the real apiserver (note14 Found 11): the
pod joined it, so a tenant whose pod ran standing alone made a PodGroup of its name with minMember 4 and
the pod, a gang below its minimum, was never reclaimed. The pod keeps its name now: the PodGroup is no
job while the pod exists and is told why, and reclaim takes the pod as any pod standing alone
(docs/tenancy.md "A PodGroup named like a pod standing alone")."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import (
    ROOT,
    Kube,
    Start,
    node,
    node_usage,
    pod,
    podgroup,
    queue,
    queue_cpu,
    wait_for,
)

pytestmark = pytest.mark.cluster

CONFIG = (ROOT / "examples/reclaim-preempt-scheduler.yaml").read_text()
DEFAULT_QUEUE = "scheduling.volsched.io/default-queue"


def _namespace(k: Kube, name: str, default_queue: str) -> str:
    meta = {"name": name, "labels": {DEFAULT_QUEUE: default_queue}}
    k.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return name


def test_a_podgroup_named_like_a_running_pod_standing_alone_does_not_keep_it_from_reclaim(
    k: Kube, start_operator: Start
) -> None:
    k.set_config(CONFIG)
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("qa"))
    k.queue(queue("qb"))
    ns_a, ns_b = _namespace(k, "name-taken-a", "qa"), _namespace(k, "name-taken-b", "qb")
    k.pods(ns_a, pod("a-0", cpu="2"))
    op = start_operator()
    wait_for(lambda: f"{ns_a}/a-0" in k.bound(ns_a), 30, what="a-0 bound", operator=op)
    k.pods(ns_a, pod("x", cpu="2"))  # (the newer: reclaim's first choice)
    wait_for(lambda: len(k.bound(ns_a)) == 2, 30, what="x bound", operator=op)
    wait_for(lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa holding both", operator=op)

    k.podgroup(ns_a, podgroup("x", 4, queue="qa"))
    wait_for(
        lambda: any(
            e.reason == "PodGroupNameTaken"
            and e.involved_object.kind == "PodGroup"
            and e.involved_object.name == "x"
            and "pod x, which names no pod group, has its name" in (e.message or "")
            for e in k.core.list_namespaced_event(ns_a).items
        ),
        30,
        what="PodGroup x told its name is taken",
        operator=op,
    )
    k.podgroup(ns_b, podgroup("b", 1, queue="qb"))
    k.pods(ns_b, pod("b-0", cpu="2", group="b"))
    # qb deserves half the node: reclaim takes x, the newer (before: a-0, x kept as a gang of minMember 4)
    wait_for(lambda: len(k.bound(ns_b)) == 1, 60, what="qb's pod bound after reclaim", operator=op)
    assert list(k.bound(ns_a)) == [f"{ns_a}/a-0"]
    for used, alloc in node_usage(k).values():
        assert used <= alloc + 1e-9
    op.check_running()
