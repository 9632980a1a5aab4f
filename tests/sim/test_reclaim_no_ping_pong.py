"""reclaim never takes a pod for a queue that would not get the room: the queue a pod is taken from must
still come after the taker in the queue order once the pod is gone, when the taker already holds its
deserved share (it reclaims what the work-conserving remainder lends it). Else the next session's
allocate, which serves queues in that order, hands the freed room back to the victim's queue (its pod
made again by its owner), the taker reclaims again, and the two trade the same room for ever. And a job
not admitted yet takes nothing back while its queue would not admit it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import batch_job, node, pod, podgroup, queue
from tests.sim._eviction_helpers import Staged
from volsched.framework.config import default_config_with
from volsched.framework.registry import load_config
from volsched.simulate import Document

Obj = dict[str, Any]

#: Reclaim with no minimum run time and no overcommit (the starvation bench's evicting config, less the
#: reservation): every victim rule that could stop the churn is off, so only the queue order may.
CONFIG = default_config_with(
    actions="enqueue, allocate, reclaim, backfill",
    lines={
        "  - name: gang": "  - name: gang\n    enableReclaimable: false",
        "  - name: pdb": "",
        "  - name: overcommit": "",
        "  - name: reservation": "",
    },
)


def _job(name: str, *, queue_name: str, size: int, cpu: str = "1", pool: str = "small") -> list[Obj]:
    group = podgroup(name, ns=f"ns-{queue_name}", queue=queue_name, min_member=1)
    batch = batch_job(name, ns=f"ns-{queue_name}", parallelism=size, group=name, cpu=cpu)
    batch["spec"]["template"]["spec"]["nodeSelector"] = {"pool": pool}
    return [group, batch]


@pytest.mark.parametrize(
    ("a_held", "b_held", "evicted"),
    [
        # qa and qb hold 2 each (deserved 1 each: qc's weight 6 takes the rest); qc's two 3-cpu pods fit
        # no node now (their selector admits n2 alone, where another scheduler's pod leaves 2 cpu; not a
        # selector no node matches, nor one 6-cpu pod: either could never run and would ask for no
        # share), so its share is the remainder lent out, and qb may take one more. Taking it from qa
        # would leave qa at 1 (share 1) behind qb's 2: qa's pod made again takes the room back first.
        pytest.param(2, 2, 0, id="equal-shares-nothing-moves"),
        # qa holds 3, qb 1 (below its deserved: the rule does not apply): qb takes one back.
        pytest.param(3, 1, 1, id="below-deserved-takes-back"),
    ],
)
def test_reclaim_never_takes_room_the_victims_queue_gets_back(a_held: int, b_held: int, evicted: int) -> None:
    before: list[Obj] = [
        node("n1", cpu="4", labels={"pool": "small"}),
        node("n2", cpu="4", labels={"pool": "other"}),
        pod("other", cpu="2", node="n2", scheduler="default-scheduler"),
        queue("qa"),
        queue("qb"),
        queue("qc", weight=6),
        *_job("a", queue_name="qa", size=a_held),
        *_job("b", queue_name="qb", size=b_held),
    ]
    after = [*_job("c", queue_name="qc", size=2, cpu="3", pool="other"), *_job("b2", queue_name="qb", size=1)]
    s = Staged(before, after, load_config(text=CONFIG))
    assert (s.running("ns-qa/", before=True), s.running("ns-qb/", before=True)) == (a_held, b_held)
    assert len(s.evicted()) == evicted
    assert s.settled() and s.stays_settled()


def test_reclaim_takes_nothing_for_a_pod_its_queue_would_not_admit() -> None:
    # qa holds all of n1 (4, past its deserved 2); qc (weight 3: deserved 6 of 8) then holds 2 on n2 and
    # admits a gang of two 2-cpu pods that must wait for n2 (only its own pods are there). A bare pod of
    # qc arrives: admitting it would take qc past its deserved share (2 held + 4 admitted + 1 > 6), so
    # enqueue refuses it at every session. Reclaim used to evict a pod of qa for it anyway: the pod,
    # admitted only within that session, was refused at the next and never started.
    before: list[Obj] = [
        node("n1", cpu="4", labels={"pool": "small"}),
        node("n2", cpu="4", labels={"pool": "other"}),
        queue("qa"),
        queue("qc", weight=3),
        *_job("a", queue_name="qa", size=4),
    ]
    gang = _job("w", queue_name="qc", size=2, cpu="2", pool="other")
    gang[0]["spec"]["minMember"] = 2
    s = Staged(before, [*_job("c", queue_name="qc", size=2, pool="other"), *gang], load_config(text=CONFIG))
    assert (s.running("ns-qa/"), s.running("ns-qc/")) == (4, 2)
    assert s.data["podgroups"]["ns-qc/w"]["phase"] == "Inqueue"
    s.sim.add([Document("bare pod", pod("p", ns="ns-qc", queue="qc", node_selector={"pool": "small"}))])
    result = s.sim.run(60)
    assert [e.pod for r in result.history for e in r.evictions] == []
    assert not result.history[-1].changed
