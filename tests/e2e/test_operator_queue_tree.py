"""The operator on a real apiserver with a queue tree: shares per level in Queue status (and the printer
columns' fields), a job in a parent queue refused, and an impossible guarantee reported on the Queue."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, podgroup, queue, wait_for

pytestmark = pytest.mark.cluster


def _status(k: Kube, name: str) -> dict[str, Any]:
    return k.get_queue(name).get("status") or {}


def test_a_queue_tree_shares_per_level_and_reports_what_is_wrong(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"), node("n2", cpu="4"))
    k.queue(queue("default"))
    k.queue(queue("services"))
    k.queue(queue("bigdata"))
    k.queue(queue("hadoop", parent="bigdata"))
    k.queue(queue("spark", parent="bigdata"))
    # An impossible guarantee: 1000 cpu on an 8-cpu cluster. The others must keep working.
    k.queue(queue("greedy", guarantee={"resource": {"cpu": "1000"}}))
    ns = k.namespace("tree")
    for q in ("hadoop", "spark", "bigdata"):
        k.podgroup(ns, podgroup(q, 1, queue=q))
        k.pods(ns, *(pod(f"{q}-{i}", cpu="1", group=q) for i in range(6)))
    op = start_operator()

    def settled() -> dict[str, Any] | None:
        # The queues' statuses are written concurrently: wait for the leaves' too, not only the parent's.
        st = _status(k, "bigdata")
        leaves = all(_status(k, q).get("parent") for q in ("hadoop", "spark"))
        return st if st.get("allocated", {}).get("cpu") and st.get("parent") == "root" and leaves else None

    wait_for(lambda: len(k.bound(ns)) >= 4, 40, what="pods bound in the leaf queues")
    wait_for(settled, 30, what="bigdata status")
    bound = k.bound(ns)
    assert not any(key.startswith(f"{ns}/bigdata-") for key in bound)  # a parent queue runs no jobs
    hadoop, spark = _status(k, "hadoop"), _status(k, "spark")
    assert hadoop["parent"] == spark["parent"] == "bigdata"
    held = int(hadoop["allocated"]["cpu"]) + int(spark["allocated"]["cpu"])
    assert wait_for(
        lambda: int(_status(k, "bigdata")["allocated"]["cpu"]) == held or None, 20, what="subtree sum"
    )
    assert "deservedSummary" in _status(k, "bigdata") and "allocatedSummary" in hadoop

    def greedy_condition() -> dict[str, Any] | None:
        conds = _status(k, "greedy").get("conditions") or []
        return next((c for c in conds if c["type"] == "Valid" and c["status"] == "False"), None)

    cond = wait_for(greedy_condition, 20, what="the Valid condition on queue greedy")
    assert (
        cond["reason"] == "GuaranteeNotMet"
        and "missing cpu" in cond["message"]
        and cond["lastTransitionTime"]
    )

    def greedy_event() -> Any:
        events = k.core.list_event_for_all_namespaces(field_selector="involvedObject.name=greedy").items
        return next((e for e in events if e.involved_object.kind == "Queue"), None)

    event = wait_for(greedy_event, 20, what="an event on queue greedy")
    assert event.reason == "GuaranteeNotMet" and "missing cpu" in event.message
    assert event.involved_object.uid == k.get_queue("greedy")["metadata"]["uid"]

    def bigdata_pg_refused() -> str | None:
        conds = (k.get_podgroup(ns, "bigdata").get("status") or {}).get("conditions") or []
        return next(
            (c["message"] for c in conds if "jobs go only to leaf queues" in c.get("message", "")), None
        )

    wait_for(bigdata_pg_refused, 20, what="the PodGroup in a parent queue told why")
    assert op.metric("volsched_queue_allocated", queue="hadoop", parent="bigdata", resource="cpu") > 0
