"""Pods that fit on no node as the nodes stand, on a real apiserver: set aside after their first try (later
sessions do not try them until something may make them fit), they still say why they wait and that they are
set aside (their figures those of their last try), pods arriving meanwhile are bound, and each is bound soon
after what makes it fit happens (within seconds, not the five minutes after which a pod set aside is tried
whatever happened): a node relabelled as its nodeSelector asks, a node joining with room for its request, a
node becoming Ready, a node's allocatable growing, its PodGroup's minMember lowered."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import GROUP, VERSION, Kube, Start, node, pod, podgroup, queue, wait_for

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
    assert all(
        "; set aside, " in m and m.endswith("the figures here are those of its last try")
        for m in said.values()
    ), said

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


def _why(k: Kube, ns: str, name: str) -> str:
    p = k.core.read_namespaced_pod(name, ns)
    conds = {c.type: c for c in p.status.conditions or []}
    cond = conds.get("PodScheduled")
    return cond.message if cond is not None and cond.status == "False" and cond.message else ""


def test_pods_set_aside_are_bound_once_a_node_is_ready_grows_or_their_gang_asks_less(
    k: Kube, start_operator: Start
) -> None:
    not_ready = node("nr", cpu="2", labels={"disk": "ssd"})
    not_ready["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "down"}
    ]
    k.nodes(node("n0", cpu="2"), node("za", cpu="2", labels={"zone": "a"}), not_ready)
    ns = k.namespace("aside-wakes")
    k.podgroup(ns, podgroup("g", 3))
    op = start_operator()
    k.pods(
        ns,
        pod("sel", cpu="100m", node_selector={"disk": "ssd"}),  # only the node not ready has the label
        pod("big", cpu="3"),  # more than any node's allocatable
        *(pod(f"g-{i}", cpu="1", group="g", node_selector={"zone": "a"}) for i in range(3)),  # za holds 2
    )
    names = ("sel", "big", "g-0", "g-1", "g-2")
    wait_for(
        lambda: all("; set aside, " in _why(k, ns, n) for n in names),
        30,
        what="all five set aside",
        operator=op,
    )
    k.pods(ns, pod("a0", cpu="100m"))  # sessions go on: a pod arriving is bound, the five are not
    wait_for(lambda: f"{ns}/a0" in k.bound(ns), 30, what="a0 bound", operator=op)
    assert not {f"{ns}/{n}" for n in names} & k.bound(ns).keys()

    ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]
    k.core.patch_node_status("nr", {"status": {"conditions": ready}})
    wait_for(lambda: k.bound(ns).get(f"{ns}/sel") == "nr", 30, what="sel bound once nr is Ready", operator=op)

    grown = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    k.core.patch_node_status("n0", {"status": {"capacity": grown, "allocatable": grown}})
    wait_for(lambda: k.bound(ns).get(f"{ns}/big") == "n0", 30, what="big bound once n0 grows", operator=op)

    k.custom.patch_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "g", {"spec": {"minMember": 2}})
    wait_for(
        lambda: sum(k.bound(ns).get(f"{ns}/g-{i}") == "za" for i in range(3)) == 2,
        30,
        what="two of g bound once its minMember is 2",
        operator=op,
    )


def _in_queue(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {})["scheduling.volsched.io/queue-name"] = name
    return obj


def test_pods_standing_alone_that_no_node_could_hold_ask_their_queue_no_share(
    k: Kube, start_operator: Start
) -> None:
    """The defect, on a real apiserver: a pod with no PodGroup that no node could ever hold (a label no
    node has) still counted in its queue's demand, so queue a was given half the cluster it could never
    use: four of b's eight pods were bound and four refused "... > deserved 4" for ever, 4 cpu idle. Now
    they ask a nothing (b deserves the whole cluster), b's eight are bound, and a's pods say why."""
    k.nodes(node("n1", cpu="4"), node("n2", cpu="4"))
    k.queue(queue("a"))
    k.queue(queue("b"))
    ns = k.namespace("never-alone")
    op = start_operator()
    k.pods(
        ns,
        *(
            _in_queue(pod(f"a{i}", cpu="1", memory="1Mi", node_selector={"disk": "nowhere"}), "a")
            for i in range(6)
        ),
        *(_in_queue(pod(f"b{i}", cpu="1", memory="1Mi"), "b") for i in range(8)),
    )
    wait_for(lambda: len(k.bound(ns)) == 8, 30, what="b's eight pods bound", operator=op)
    assert set(k.bound(ns)) == {f"{ns}/b{i}" for i in range(8)}
    wait_for(
        lambda: all(_why(k, ns, f"a{i}").startswith("can never run as it stands: ") for i in range(6)),
        30,
        what="a's pods told they can never run",
        operator=op,
    )
    assert "node selector" in _why(k, ns, "a0"), _why(k, ns, "a0")

    def deserved(name: str) -> Any:
        return ((k.get_queue(name).get("status") or {}).get("deserved") or {}).get("cpu")

    # (the Queue's status shows what it deserves: all 8 cpu b's, none a's)
    wait_for(lambda: str(deserved("b")) == "8", 30, what="b's status deserves 8 cpu", operator=op)
    assert deserved("a") in (None, 0, "0"), k.get_queue("a").get("status")


def test_a_gang_that_no_node_could_hold_stays_pending_says_why_and_runs_once_a_node_is_labelled(
    k: Kube, start_operator: Start
) -> None:
    """The defect, on a real apiserver: a PodGroup in phase Pending whose pods select a label no node has
    was voted into its queue (phase Inqueue), its minimum taking a place in its queue's share for that
    session. Not voted on now: it stays Pending and its Scheduled condition says why in numbers, a pod
    of its queue is bound meanwhile, and once a node is labelled as its pods select, it is admitted and
    bound whole."""
    k.nodes(node("n1", cpu="4"), node("n2", cpu="4"))
    k.queue(queue("a"))
    ns = k.namespace("never-gang")
    k.podgroup(ns, podgroup("g", 2, "a"))
    # (its pods there before the first session: a PodGroup with no pod yet is admitted on its minResources,
    # Volcano's job flow, and then set aside once its pods are tried)
    k.pods(
        ns,
        *(pod(f"g-{i}", cpu="1", memory="1Mi", group="g", node_selector={"disk": "ssd"}) for i in range(2)),
        _in_queue(pod("p", cpu="4", memory="1Mi"), "a"),
    )
    op = start_operator()

    def scheduled() -> dict[str, Any]:
        status = k.get_podgroup(ns, "g").get("status") or {}
        conds = {c["type"]: c for c in status.get("conditions") or []}
        return {"phase": status.get("phase"), **conds.get("Scheduled", {})}

    said = wait_for(
        lambda: (
            (s := scheduled()).get("status") == "False"
            and (s.get("message") or "").startswith("can never")
            and s
        ),
        30,
        what="g told it can never run",
        operator=op,
    )
    assert said["message"].startswith(
        "can never run as it stands: none of the 2 ready node(s) has the labels its pods' node selector or "
        "required node affinity ask for (minMember 2); not admitted to queue a while it can never run"
    ), said
    assert said["phase"] == "Pending", said
    wait_for(lambda: f"{ns}/p" in k.bound(ns), 30, what="p bound", operator=op)
    assert scheduled()["phase"] == "Pending"

    k.core.patch_node("n2", {"metadata": {"labels": {"disk": "ssd"}}})
    wait_for(
        lambda: k.bound(ns).get(f"{ns}/g-0") == "n2" and k.bound(ns).get(f"{ns}/g-1") == "n2",
        30,
        what="g bound once n2 is labelled",
        operator=op,
    )
    wait_for(lambda: scheduled()["phase"] == "Running", 30, what="g Running", operator=op)


def test_pods_standing_alone_that_tolerate_no_node_ask_no_share_and_run_once_the_taint_goes(
    k: Kube, start_operator: Start
) -> None:
    """The defect, on a real apiserver: ``never_fits`` read no taints, so queue a's pods, which tolerate
    none of the taint both nodes carry, counted in a's demand: a was given half the cluster it could never
    use, and four of b's eight pods (which tolerate it) were refused "... > deserved 4" for ever. Now a's
    pods say which taint keeps them off, b's eight are bound, and once one node's taint is removed a's
    pods are bound there."""
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    tainted = [node("n1", cpu="4"), node("n2", cpu="4")]
    for n in tainted:
        n["spec"] = {"taints": [taint]}
    k.nodes(*tainted)
    k.queue(queue("a"))
    k.queue(queue("b"))
    ns = k.namespace("never-taint")

    def tolerating(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ]
        return obj

    op = start_operator()
    k.pods(
        ns,
        *(_in_queue(pod(f"a{i}", cpu="1", memory="1Mi"), "a") for i in range(2)),
        *(_in_queue(tolerating(pod(f"b{i}", cpu="1", memory="1Mi")), "b") for i in range(8)),
    )
    wait_for(lambda: len(k.bound(ns)) == 8, 30, what="b's eight pods bound", operator=op)
    assert set(k.bound(ns)) == {f"{ns}/b{i}" for i in range(8)}
    wait_for(
        lambda: all(_why(k, ns, f"a{i}").startswith("can never run as it stands: ") for i in range(2)),
        30,
        what="a's pods told they can never run",
        operator=op,
    )
    assert _why(k, ns, "a0").startswith(
        "can never run as it stands: each of the 2 ready node(s) has a taint it does not tolerate "
        "(untolerated taint {dedicated: gpu} on 2)"
    ), _why(k, ns, "a0")

    for key, on in k.bound(ns).items():  # room on n2 for a's pods once its taint goes
        if on == "n2":
            k.core.delete_namespaced_pod(key.split("/")[1], ns, grace_period_seconds=0)
    k.core.patch_node("n2", {"spec": {"taints": None}})
    wait_for(
        lambda: k.bound(ns).get(f"{ns}/a0") == "n2" and k.bound(ns).get(f"{ns}/a1") == "n2",
        30,
        what="a's pods bound once n2's taint is removed",
        operator=op,
    )
