"""A PodGroup deleted while its gang runs, and not made again.

The defect: its pods ran on outside every session, counted by no queue and evicted by nothing: a tenant
who deleted its running gang's PodGroup held the capacity outside every share, for as long as the pods
ran. Each pod carries the record its bind wrote (queue, priority, the PodGroup it was bound under), and
is now a pod standing alone in that queue: the queue still pays for it, and another queue owed its share
reclaims it (a job of one pod is no gang: none of them is kept). Pods the Job makes again for the evicted
ones name the missing group and wait."""

from __future__ import annotations

from typing import Any

from tests.builders import node, queue
from tests.sim._eviction_helpers import eviction_config, job
from volsched.simulate import Document, Simulator, to_json

Obj = dict[str, Any]


def _held(data: Obj, name: str) -> float:
    return float((data["queues"][name]["allocated"] or {}).get("cpu", 0))


def _running(data: Obj, prefix: str) -> int:
    return sum(1 for k, v in data["pods"].items() if v["node"] and k.startswith(prefix))


def test_a_queue_whose_podgroup_vanished_still_pays_for_its_pods_and_another_queue_reclaims_them() -> None:
    group, batch = job("a", ns="ns-a", queue="qa", size=8, min_member=8)
    group["metadata"]["uid"] = "a-1"
    sim = Simulator(
        [Document(f"o{i}", o) for i, o in enumerate([node("n1", cpu="8"), queue("qa"), group, batch])],
        eviction_config(),
    )
    sim.run(30)
    data = to_json(sim.run(1))
    assert _running(data, "ns-a/") == 8 and _held(data, "qa") == 8.0

    sim.port.remove("PodGroup", "ns-a/a")
    data = to_json(sim.run(3))
    assert _held(data, "qa") == 8.0  # before: 0, the 8 pods counted by no queue
    told = {e["object"]: e for e in data["events"] if e["reason"] == "PodGroupGone"}
    assert sorted(told) == [f"Pod ns-a/a-{i}" for i in range(8)]
    assert "it counts in queue qa, the one it was bound under" in told["Pod ns-a/a-0"]["message"]

    sim.add(
        [Document(f"b{i}", o) for i, o in enumerate([queue("qb"), *job("b", ns="ns-b", queue="qb", size=4)])]
    )
    data = to_json(sim.run(60))
    assert (_running(data, "ns-a/"), _running(data, "ns-b/")) == (4, 4)  # before: (8, 0)
    assert (_held(data, "qa"), _held(data, "qb")) == (4.0, 4.0)
    reclaimed = sorted(e["pod"] for e in data["evictions"] if e["action"] == "reclaim")
    assert reclaimed == [f"ns-a/a-{i}" for i in range(4, 8)]
    waiting = [k for k, v in data["pods"].items() if k.startswith("ns-a/") and not v["node"]]
    assert waiting  # (the Job's new pods name the missing group: they wait, told so)
