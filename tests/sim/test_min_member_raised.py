"""A minMember raised on a running gang keeps no more of its pods from reclaim than it was admitted with.

The defect: a gang is never evicted below its minMember, and the minMember read was the PodGroup's as it
is now, so a tenant who raised it (ours ``spec.minMember``, Volcano's) to the pods its queue had borrowed
kept every one of them from reclaim for good. Eviction now keeps min(minMember now, minMember admitted
with) (``volsched.model.admitted``); a lowered minMember lowers it at once, as before."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, queue
from tests.sim._eviction_helpers import eviction_config, job
from volsched.simulate import Document, Simulator, to_json

Obj = dict[str, Any]
VOLCANO = "scheduling.volcano.sh/v1beta1"


def _group(obj: Obj, api: str, min_member: int, phase: str | None = None) -> Obj:
    out = {**obj, "apiVersion": api, "spec": {**obj["spec"], "minMember": min_member}}
    if phase:
        out["status"] = {"phase": phase}
    return out


def _run(api: str, *, admitted: int, now: int | None) -> tuple[int, int, list[str]]:
    """qa's gang of 8 (minMember ``admitted``) fills the 8-cpu node alone; its minMember becomes ``now``
    (None: unchanged) while it runs; then qb (the same weight: 4 cpu deserved each) asks for 4. Returns
    what a and b run, and a's reclaimed pods."""
    group, batch = job("a", ns="ns-a", queue="qa", size=8, min_member=admitted)
    sim = Simulator(
        [
            Document(f"o{i}", o)
            for i, o in enumerate([node("n1", cpu="8"), queue("qa"), _group(group, api, admitted), batch])
        ],
        eviction_config(),
    )
    sim.run(30)
    assert sum(1 for k, v in to_json(sim.run(1))["pods"].items() if v["node"] and k.startswith("ns-a/")) == 8
    if now is not None:  # the tenant's update: the object as the API has it, status included
        sim.add([Document("raise", _group(group, api, now, phase="Running"))])
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
    return running["ns-a/"], running["ns-b/"], reclaimed


@pytest.mark.parametrize("api", ["scheduling.volsched.io/v1beta1", VOLCANO], ids=["ours", "volcano"])
def test_a_min_member_raised_while_running_does_not_keep_borrowed_pods_from_reclaim(api: str) -> None:
    a, b, reclaimed = _run(api, admitted=2, now=8)
    assert (a, b) == (4, 4)  # on main: (8, 0), the raise kept all 8 from reclaim
    assert len(reclaimed) == 4


@pytest.mark.parametrize("api", ["scheduling.volsched.io/v1beta1", VOLCANO], ids=["ours", "volcano"])
def test_a_gang_keeps_the_min_member_it_was_admitted_with(api: str) -> None:
    a, b, reclaimed = _run(api, admitted=6, now=None)
    assert (a, b) == (6, 2)  # never below the minMember it legitimately runs with
    assert len(reclaimed) == 2


@pytest.mark.parametrize("api", ["scheduling.volsched.io/v1beta1", VOLCANO], ids=["ours", "volcano"])
def test_a_lowered_min_member_lowers_what_reclaim_keeps_at_once(api: str) -> None:
    a, b, _ = _run(api, admitted=8, now=2)
    assert (a, b) == (4, 4)


def _pinned(objs: list[Obj], pool: str) -> list[Obj]:
    """``objs`` (a PodGroup and its Job) with the Job's pods held to the nodes labelled ``pool``."""
    group, batch = objs
    template = batch["spec"]["template"]
    template["spec"] = {**template["spec"], "nodeSelector": {"pool": pool}}
    return [group, batch]


@pytest.mark.parametrize("api", ["scheduling.volsched.io/v1beta1", VOLCANO], ids=["ours", "volcano"])
def test_a_min_member_raised_while_running_does_not_grow_the_gang_past_its_queues_share(api: str) -> None:
    """qa's gang (8 pods, minMember 2) and qb's job (8 pods, 4 of which fit its 4-cpu node) share 12
    cpu: 6 each. a runs 6 on its 8-cpu node, 2 left idle there. Raised to 8, a is short of its minimum:
    allocate completed it past qa's share (8 of 12) as if admission had reserved the raise, and with no
    reclaim in the default actions those pods kept qb's share until they ended. Completion past the share
    goes no further than the minMember the gang started with."""
    group, batch = _pinned(job("a", ns="ns-a", queue="qa", size=8, min_member=2), "a")
    sim = Simulator(
        [
            Document(f"o{i}", o)
            for i, o in enumerate(
                [
                    node("n1", cpu="8", labels={"pool": "a"}),
                    node("n2", cpu="4", labels={"pool": "b"}),
                    queue("qa"),
                    queue("qb"),
                    _group(group, api, 2),
                    batch,
                    *_pinned(job("b", ns="ns-b", queue="qb", size=8), "b"),
                ]
            )
        ],
    )
    data = to_json(sim.run(30))
    assert sum(1 for k, v in data["pods"].items() if v["node"] and k.startswith("ns-a/")) == 6
    sim.add([Document("raise", _group(group, api, 8, phase="Running"))])
    data = to_json(sim.run(30))
    assert sum(1 for k, v in data["pods"].items() if v["node"] and k.startswith("ns-a/")) == 6  # before: 8
