"""Pods that fit on no node as the nodes stand, on a real apiserver: set aside after their first try (later
sessions do not try them until something may make them fit), they still say why they wait, pods arriving
meanwhile are bound, and each is bound soon after what makes it fit happens: a node relabelled as its
nodeSelector asks, a node joining with room for its request."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def test_pods_set_aside_say_why_and_are_bound_once_a_node_changes_or_joins_for_them(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n0", cpu="3"), node("n1", cpu="2"))  # room for "big" in all (it is admitted), on neither
    ns = k.namespace("aside")
    op = start_operator()
    k.pods(ns, pod("sel", cpu="100m", node_selector={"disk": "ssd"}), pod("big", cpu="4"))

    def why(name: str) -> str:
        p = k.core.read_namespaced_pod(name, ns)
        conds = {c.type: c for c in p.status.conditions or []}
        cond = conds.get("PodScheduled")
        return cond.message if cond is not None and cond.status == "False" and cond.message else ""

    wait_for(lambda: why("sel") and why("big"), 30, what="both pods told why they wait", operator=op)
    said = {"sel": why("sel"), "big": why("big")}
    assert "node selector" in said["sel"], said
    assert "insufficient cpu" in said["big"], said

    for i in range(3):  # sessions go on, the two set aside: pods arriving are bound, they still say why
        k.pods(ns, pod(f"a{i}", cpu="100m"))
        wait_for(lambda i=i: f"{ns}/a{i}" in k.bound(ns), 30, what=f"a{i} bound", operator=op)  # type: ignore[misc]
    assert {"sel": why("sel"), "big": why("big")} == said
    assert f"{ns}/sel" not in k.bound(ns) and f"{ns}/big" not in k.bound(ns)

    k.core.patch_node("n1", {"metadata": {"labels": {"disk": "ssd"}}})
    wait_for(
        lambda: k.bound(ns).get(f"{ns}/sel") == "n1", 30, what="sel bound once n1 is labelled", operator=op
    )
    assert f"{ns}/big" not in k.bound(ns)

    k.nodes(node("n2", cpu="8"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/big") == "n2", 30, what="big bound once n2 joins", operator=op)
