"""The cluster of the anti-affinity preemption tests: a high-priority pod whose required pod
anti-affinity keeps it off every node where a lower-priority web pod runs."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.e2e.operator_fixtures import (
    RECLAIM_CONFIG,
    Kube,
    OperatorProcess,
    Start,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)

WEB = {"app": "web"}
TERM = "pod anti-affinity (app=web, kubernetes.io/hostname)"


def _pod(
    name: str, *, on: str | None = None, group: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    obj = pod(name, cpu="1", group=group, node_selector={"kubernetes.io/hostname": on} if on else None)
    obj["metadata"]["labels"] = labels or {}
    obj["spec"]["terminationGracePeriodSeconds"] = (
        30  # stays Terminating (no kubelet): what it was told stays
    )
    return obj


def budget(k: Kube, ns: str, node_name: str) -> None:
    """A budget (keep-web-1 for n1) that allows no disruption of the web pod on ``node_name`` (no
    disruption controller runs here: its status stays unset, which the Eviction API and volsched alike
    read as none allowed)."""
    body = {
        "metadata": {"name": f"keep-web-{node_name.removeprefix('n')}"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"pdb": node_name}}},
    }
    client.PolicyV1Api(k.api).create_namespaced_pod_disruption_budget(ns, body)


def cluster(
    k: Kube, start_operator: Start, *, config: str = RECLAIM_CONFIG, budgets: tuple[str, ...] = ()
) -> tuple[str, OperatorProcess]:
    """Two 4-cpu nodes; job "a" (low priority) runs a web pod and a filler on each, and a spare on n1;
    the operator runs ``config`` (unless told, the example that preempts and reclaims). When both web
    pods are in a preemptor's way, n1's (web-1) goes.

    ``budgets``: the nodes whose web pod a :func:`budget` keeps, made before the operator starts, so its
    first listing has them. Made once it runs, a budget comes through a watch of its own, which may hand
    it over after the pods' watch hands the preemptor over: a session could decide with the pod in, the
    budget not yet (as a starved watch thread makes it on a loaded machine)."""
    k.set_config(config)
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    k.nodes(node("n1", cpu="4"), node("n2", cpu="4"))
    k.queue(queue("default"))
    k.queue(queue("q"))
    ns = k.namespace("anti")
    for node_name in budgets:
        budget(k, ns, node_name)
    k.podgroup(ns, podgroup("a", 1, queue="q", priority_class="low"))
    # web-2 is made first, so web-1 is never the older: with one pod in the way on each node, preempt
    # tries the node of the youngest first, then the node's name, so n1 comes first whether the two were
    # made in the same second of creationTimestamp or not (made in this order, a second could end between
    # them, and n2 would come first).
    k.pods(
        ns,
        _pod("web-2", on="n2", group="a", labels={**WEB, "pdb": "n2"}),
        _pod("web-1", on="n1", group="a", labels={**WEB, "pdb": "n1"}),
        _pod("fill-1", on="n1", group="a"),
        _pod("fill-2", on="n2", group="a"),
        _pod("spare", on="n1", group="a"),
    )
    op = start_operator()
    wait_for(lambda: len(k.bound(ns)) == 5, 30, what="job a runs")
    return ns, op


def preemptor(k: Kube, ns: str) -> None:
    k.podgroup(ns, podgroup("b", 1, queue="q", priority_class="high"))
    new = _pod("new", group="b")
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": WEB}}
    new["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    k.pods(ns, new)


def leaving(k: Kube, ns: str) -> list[str]:
    return sorted(
        p.metadata.name for p in k.core.list_namespaced_pod(ns).items if p.metadata.deletion_timestamp
    )
