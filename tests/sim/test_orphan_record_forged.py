"""A tenant's pods whose PodGroup is gone, carrying a bound-under record the tenant wrote (no pod admission
policy: Kubernetes before 1.30, or ``podQueueFixed: false``), read by a scheduler that starts then.

The defect (note14 Found 1): the record was taken as volsched's own word, so the orphans counted in the
queue it named, another team's, at the priority it chose: that team's own job waited behind them, its
queue past its share and its priority below theirs. The record is now asked what a PodGroup is asked (the
queue's rules for the pod's namespace, and a priority its class gives); refused, the pods count in their
namespace's default queue at their own priority, where the other team reclaims its share from them."""

from __future__ import annotations

from typing import Any

from tests.builders import namespace, node, pod, queue
from tests.sim._eviction_helpers import eviction_config, job
from volsched.model.admitted import BOUND_UNDER, bound_under
from volsched.model.vocabulary import NAMESPACE_QUEUE_KEY
from volsched.simulate import Document, Simulator, to_json

Obj = dict[str, Any]

#: What team a wrote on its running pods: team b's queue, at a priority no class of the cluster gives.
FORGED = bound_under(uid="a-1", queue="qb", priority_class="", priority=1_000_000, min_member=6)


def _held(data: Obj, name: str) -> float:
    return float((data["queues"][name]["allocated"] or {}).get("cpu", 0))


def _running(data: Obj, prefix: str) -> int:
    return sum(1 for k, v in data["pods"].items() if v["node"] and k.startswith(prefix))


def test_a_forged_record_charges_the_tenants_own_queue_not_the_other_teams() -> None:
    objs = [
        node("n1", cpu="8"),
        namespace("ns-a", labels={"team": "a", NAMESPACE_QUEUE_KEY: "qa"}),
        namespace("ns-b", labels={"team": "b"}),
        queue("qa", namespaceSelector={"matchLabels": {"team": "a"}}),
        queue("qb", namespaceSelector={"matchLabels": {"team": "b"}}),
        *[
            pod(f"a-{i}", ns="ns-a", cpu="1", group="a", node="n1", annotations={BOUND_UNDER: FORGED})
            for i in range(6)
        ],
    ]
    sim = Simulator([Document(f"o{i}", o) for i, o in enumerate(objs)], eviction_config())
    data = to_json(sim.run(1))
    assert (_held(data, "qa"), _held(data, "qb")) == (6.0, 0.0)  # before: (0, 6), qb charged
    told = {e["object"]: e["message"] for e in data["events"] if e["reason"] == "PodGroupGone"}
    assert sorted(told) == [f"Pod ns-a/a-{i}" for i in range(6)]
    assert told["Pod ns-a/a-0"].startswith(
        "pod group a does not exist, and this pod runs: it counts in queue qa, its namespace's default "
        "queue, at its own priority 0, as a pod standing alone (not in queue qb at priority 1000000, as "
        "the record of its bind says: queue qb does not take jobs of namespace ns-a"
    )

    sim.add([Document(f"b{i}", o) for i, o in enumerate(job("b", ns="ns-b", queue="qb", size=4))])
    data = to_json(sim.run(60))
    assert (_running(data, "ns-a/"), _running(data, "ns-b/")) == (4, 4)  # before: (6, 2), nothing reclaimed
    assert (_held(data, "qa"), _held(data, "qb")) == (4.0, 4.0)
    reclaimed = sorted(e["pod"] for e in data["evictions"] if e["action"] == "reclaim")
    assert len(reclaimed) == 2 and all(k.startswith("ns-a/") for k in reclaimed)
