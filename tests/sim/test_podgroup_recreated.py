"""A PodGroup deleted and created again over its running pods inherits what they were bound under.

The defect: the policies that fix an admitted PodGroup's queue and priority class check updates only,
and the minMember a gang started with was kept on the object. A tenant who deleted its running gang's
PodGroup and created it again (same name, a new uid) moved the running pods into another queue or
priority class, and its minMember (8 for 8 pods running) kept every one of them from reclaim. Each pod
now records, as it is bound, the PodGroup (uid), queue, priority and minMember-at-start it was bound
under (``volsched.model.admitted``); a group whose object is not the one its running pods were bound
under is held to their record until it holds none of them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, queue
from tests.sim._eviction_helpers import eviction_config, job
from volsched.simulate import Document, Simulator, to_json

Obj = dict[str, Any]
VOLCANO = "scheduling.volcano.sh/v1beta1"


def _group(obj: Obj, api: str, *, min_member: int, uid: str, queue_name: str = "qa") -> Obj:
    meta = {**obj["metadata"], "uid": uid}
    return {
        **obj,
        "apiVersion": api,
        "metadata": meta,
        "spec": {**obj["spec"], "minMember": min_member, "queue": queue_name},
    }


def _run(api: str, *, min_member: int, queue_name: str) -> tuple[dict[str, int], Obj, list[str]]:
    """qa's gang of 8 (minMember 2) fills the 8-cpu node alone; its PodGroup is deleted and made again
    with ``min_member`` in ``queue_name``; then qb (the same weight: 4 cpu deserved each) asks for 4."""
    group, batch = job("a", ns="ns-a", queue="qa", size=8, min_member=2)
    sim = Simulator(
        [
            Document(f"o{i}", o)
            for i, o in enumerate(
                [
                    node("n1", cpu="8"),
                    queue("qa"),
                    queue("qc"),
                    _group(group, api, min_member=2, uid="a-1"),
                    batch,
                ]
            )
        ],
        eviction_config(),
    )
    sim.run(30)
    pods = to_json(sim.run(1))["pods"]
    assert sum(1 for k, v in pods.items() if v["node"] and k.startswith("ns-a/")) == 8
    kind = "PodGroup"
    sim.port.remove(kind, "ns-a/a")
    sim.run(2)
    sim.add([Document("again", _group(group, api, min_member=min_member, uid="a-2", queue_name=queue_name))])
    sim.run(10)
    sim.add(
        [Document(f"b{i}", o) for i, o in enumerate([queue("qb"), *job("b", ns="ns-b", queue="qb", size=4)])]
    )
    data = to_json(sim.run(60))
    running = {
        p: sum(1 for k, v in data["pods"].items() if v["node"] and k.startswith(p))
        for p in ("ns-a/", "ns-b/")
    }
    reclaimed = [
        e["pod"] for e in data["evictions"] if e["action"] == "reclaim" and e["pod"].startswith("ns-a/")
    ]
    return running, data, reclaimed


@pytest.mark.parametrize("api", ["scheduling.volsched.io/v1beta1", VOLCANO], ids=["ours", "volcano"])
def test_a_podgroup_made_again_with_a_higher_min_member_keeps_no_more_pods_from_reclaim(api: str) -> None:
    running, _, reclaimed = _run(api, min_member=8, queue_name="qa")
    assert running == {"ns-a/": 4, "ns-b/": 4}  # before: {8, 0}, the new object's minMember kept all 8
    assert len(reclaimed) == 4


@pytest.mark.parametrize("api", ["scheduling.volsched.io/v1beta1", VOLCANO], ids=["ours", "volcano"])
def test_a_podgroup_made_again_in_another_queue_leaves_its_running_pods_in_theirs(api: str) -> None:
    running, data, _ = _run(api, min_member=2, queue_name="qc")
    assert running == {"ns-a/": 4, "ns-b/": 4}
    held = {q: float((data["queues"][q]["allocated"] or {}).get("cpu", 0)) for q in ("qa", "qc")}
    assert held == {"qa": 4.0, "qc": 0.0}  # before: the 8 pods moved to qc, which owed qb nothing
