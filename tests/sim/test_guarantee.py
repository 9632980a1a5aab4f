"""Queue guarantees at admission, the held-back job that must still reclaim what its queue is owed, and
the 30-GPU example of queue-guarantee-reservation.md settling with every queue at its deserved share."""

from __future__ import annotations

import pytest

from tests.builders import config, count_placed, node, podgroup, pods, queue, run
from tests.sim._eviction_helpers import EXAMPLES, Staged, eviction_config, job
from volsched.model.errors import InputError
from volsched.simulate import load_documents, simulate_stages, to_json

DEFAULT_WITH_EXACT_OVERCOMMIT = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: overcommit, arguments: {overcommit-factor: 1.0}}
  - {name: drf}
  - {name: predicates}
  - {name: proportion}
  - {name: nodeorder}
  - {name: binpack}
"""


@pytest.mark.parametrize(
    ("guarantee", "b_min", "phase"),
    [
        pytest.param("4", 2, "Inqueue", id="fits-the-guarantee-admitted-into-a-full-cluster"),
        pytest.param("4", 4, "Inqueue", id="exactly-the-guarantee-admitted"),
        pytest.param("1", 2, "Pending", id="beyond-the-guarantee-held-back-by-overcommit"),
        pytest.param(None, 2, "Pending", id="no-guarantee-held-back-by-overcommit"),
    ],
)
def test_a_guarantee_admits_a_job_into_a_full_cluster(guarantee, b_min, phase):
    # Default actions (no reclaim): admission alone is under test. The cluster is full and overcommit
    # leaves no room (factor 1.0), so only the guarantee can let the job in.
    # qa's 8 pods were bound before qg existed (a queue created later with a guarantee, as queue4 of the
    # design document).
    objs = [node("n1", cpu="8"), queue("qa"), podgroup("a", ns="ns-a", queue="qa", phase="Running")]
    objs += pods("a", 8, ns="ns-a", group="a", node="n1")
    objs += [queue("qg", guarantee=None if guarantee is None else {"cpu": guarantee})]
    objs += job("b", ns="ns-g", queue="qg", size=b_min, min_member=b_min)
    data = run(objs, conf=config(DEFAULT_WITH_EXACT_OVERCOMMIT))
    assert count_placed(data, "ns-a/") == 8 and count_placed(data, "ns-g/") == 0
    assert data["podgroups"]["ns-g/b"]["phase"] == phase
    pg_events = [e["message"] for e in data["events"] if e["object"] == "PodGroup ns-g/b"]
    if phase == "Pending":
        assert any("overcommit" in m for m in pg_events), pg_events


@pytest.mark.parametrize(
    ("guarantee", "g_min", "phase"),
    [
        pytest.param("16", 2, "Inqueue", id="impossible-guarantee-admits-within-its-cut-part"),
        pytest.param("16", 3, "Pending", id="impossible-guarantee-admits-nothing-beyond-its-cut-part"),
        pytest.param("16", 8, "Pending", id="impossible-guarantee-never-admits-the-whole-cluster"),
        pytest.param("2", 2, "Inqueue", id="a-guarantee-that-fits-admits-up-to-itself"),
        pytest.param("2", 3, "Pending", id="a-guarantee-that-fits-admits-nothing-beyond-itself"),
    ],
)
def test_admission_into_a_full_cluster_holds_the_cut_guarantee_not_the_configured_one(
    guarantee, g_min, phase
):
    # 8 cpu, all held by qa; overcommit leaves no room (factor 1.0), so only a guarantee lets a job in.
    # Four queues (default, qa, qg, qh): with qg asking 16 cpu (twice the cluster) the guarantees cannot
    # all be met, and qg keeps min(16, its weighted share 8/4) = 2 cpu; qh's 2 cpu is met in full.
    # Admission must hold qg to those 2 cpu, as proportion does, and qh keeps working.
    objs = [node("n1", cpu="8"), queue("qa"), podgroup("a", ns="ns-a", queue="qa", phase="Running")]
    objs += pods("a", 8, ns="ns-a", group="a", node="n1")
    objs += [queue("qg", guarantee={"cpu": guarantee}), queue("qh", guarantee={"cpu": "2"})]
    objs += job("g", ns="ns-g", queue="qg", size=g_min, min_member=g_min)
    objs += job("h", ns="ns-h", queue="qh", size=2, min_member=2)
    data = run(objs, conf=config(DEFAULT_WITH_EXACT_OVERCOMMIT))
    assert (
        count_placed(data, "ns-a/") == 8 and count_placed(data, "ns-g/") == count_placed(data, "ns-h/") == 0
    )
    assert data["podgroups"]["ns-g/g"]["phase"] == phase
    assert data["podgroups"]["ns-h/h"]["phase"] == "Inqueue"  # the other guaranteed queue keeps working
    queue_events = [e["reason"] for e in data["events"] if e["object"] == "Queue qg"]
    assert queue_events == (["GuaranteeNotMet"] if guarantee == "16" else [])
    if phase == "Pending":
        (message,) = {e["message"] for e in data["events"] if e["object"] == "PodGroup ns-g/g"}
        assert "overcommit" in message and f"minResources cpu {g_min} > room 0" in message, message
        if guarantee == "16":
            assert "guarantee cpu 16 cannot be met and holds only cpu 2" in message, message


@pytest.mark.parametrize(
    ("c1_min", "phase"),
    [
        pytest.param(2, "Inqueue", id="within-the-share-of-the-parents-guarantee-admitted"),
        pytest.param(3, "Pending", id="beyond-the-share-of-the-parents-guarantee-held-back"),
    ],
)
def test_children_guaranteeing_more_than_their_parent_admit_only_their_cut_part_into_a_full_cluster(
    c1_min, phase
):
    # Parent p guarantees 4 cpu, its children c1 and c2 4 cpu each: they keep 2 each (by weight). p weighs 3,
    # so c1, asking for 6, deserves 4 (more than its cut guarantee): proportion alone would let a 3-cpu
    # minimum in. The cluster is full and overcommit leaves no room: only the 2 guaranteed cpu may admit.
    objs = [node("n1", cpu="8"), queue("qa"), podgroup("a", ns="ns-a", queue="qa", phase="Running")]
    objs += pods("a", 8, ns="ns-a", group="a", node="n1")
    objs += [queue("p", weight=3, guarantee={"cpu": "4"})]
    objs += [queue(c, parent="p", guarantee={"cpu": "4"}) for c in ("c1", "c2")]
    objs += job("j", ns="ns-c1", queue="c1", size=6, min_member=c1_min)
    data = run(objs, conf=config(DEFAULT_WITH_EXACT_OVERCOMMIT))
    assert data["queues"]["c1"]["deserved"]["cpu"] == 4
    assert data["podgroups"]["ns-c1/j"]["phase"] == phase
    assert count_placed(data, "ns-a/") == 8 and count_placed(data, "ns-c1/") == 0


def test_a_guaranteed_job_runs_in_a_full_cluster_once_reclaim_is_enabled():
    before = [node("n1", cpu="8"), queue("qa"), *job("a", ns="ns-a", queue="qa", size=8)]
    after = [queue("qg", guarantee={"cpu": "4"}), *job("b", ns="ns-g", queue="qg", size=4, min_member=4)]
    s = Staged(before, after, eviction_config(overcommit_factor=1.0))
    assert s.running("ns-a/", before=True) == 8
    assert (s.running("ns-a/"), s.running("ns-g/")) == (4, 4)
    assert s.settled() and s.stays_settled()


def test_a_job_held_back_by_enqueue_still_reclaims_what_its_queue_is_owed():
    # No guarantee: overcommit (factor 1.0) refuses the job because the cluster is full. Volcano would
    # keep it Pending forever; reclaim admits it as part of a committed reclaim instead.
    before = [node("n1", cpu="8"), queue("qa"), *job("a", ns="ns-a", queue="qa", size=8)]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=4, min_member=2)]
    s = Staged(before, after, eviction_config(overcommit_factor=1.0))
    first = s.history[0]
    assert first.podgroups["ns-b/b"].phase == "Inqueue"
    assert {e.action for e in first.evictions} == {"reclaim"}
    assert (s.running("ns-a/"), s.running("ns-b/")) == (4, 4)
    assert s.data["podgroups"]["ns-b/b"]["phase"] == "Running"


def _thirty_gpu(queue4_size: int):
    before = load_documents([EXAMPLES / "guarantee-30gpu-before.yaml"])
    later = load_documents([EXAMPLES / "guarantee-30gpu-queue4.yaml"])
    for doc in later:
        if doc.obj.get("kind") == "Job":
            doc.obj["spec"]["parallelism"] = queue4_size
    return before, later


def test_the_30gpu_example_settles_with_queue4_running_and_every_queue_at_its_deserved_share():
    result = simulate_stages(
        [[EXAMPLES / "guarantee-30gpu-before.yaml"], [EXAMPLES / "guarantee-30gpu-queue4.yaml"]],
        config=eviction_config(),
    )
    data = to_json(result)
    assert not result.last.changed  # settled
    gpu = "nvidia.com/gpu"
    held = {q: data["queues"][q]["allocated"].get(gpu, 0) for q in ("queue1", "queue2", "queue3", "queue4")}
    deserved = {q: data["queues"][q]["deserved"][gpu] for q in held}
    assert deserved == {"queue1": 6.666667, "queue2": 6.666667, "queue3": 6.666667, "queue4": 10}
    assert data["podgroups"]["team4/finetune"]["phase"] == "Running"
    assert held["queue4"] == 2  # all it asks for (its deserved 10 is its guarantee)
    assert sum(held.values()) == 30
    assert all(held[q] >= deserved[q] for q in ("queue1", "queue2", "queue3"))  # nobody cut below
    assert len(data["evictions"]) == 2 and {e["action"] for e in data["evictions"]} == {"reclaim"}
    # Taken from the two queues most above their share, one pod each.
    assert sorted(held[q] for q in ("queue1", "queue2", "queue3")) == [9, 9, 10]


def test_the_30gpu_example_with_a_big_queue4_job_ends_at_6_6_6_12_and_stays():
    from volsched.simulate import Simulator

    before, later = _thirty_gpu(queue4_size=16)
    sim = Simulator(before, eviction_config())
    sim.run(50)
    sim.add(later)
    result = sim.run(50)
    assert not result.last.changed
    data = to_json(result)
    gpu = "nvidia.com/gpu"
    held = {q: data["queues"][q]["allocated"].get(gpu, 0) for q in ("queue1", "queue2", "queue3", "queue4")}
    deserved = {q: data["queues"][q]["deserved"][gpu] for q in held}
    assert deserved == {"queue1": 6, "queue2": 6, "queue3": 6, "queue4": 12}  # the design document's table
    assert held == deserved
    for _ in range(20):  # no ping-pong: nothing moves any more
        step, changed = sim.step()
        assert not changed and not step.evictions and not step.binds


def test_the_cli_runs_the_30gpu_example_in_two_stages(capsys):
    import json

    from volsched.cli import main

    code = main(
        [
            "simulate",
            "-f",
            str(EXAMPLES / "guarantee-30gpu-before.yaml"),
            "--then",
            str(EXAMPLES / "guarantee-30gpu-queue4.yaml"),
            "--config",
            str(EXAMPLES / "reclaim-preempt-scheduler.yaml"),
            "-o",
            "json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["podgroups"]["team4/finetune"]["phase"] == "Running"
    assert [e["action"] for e in data["evictions"]] == ["reclaim", "reclaim"]
    assert sum(1 for p in data["pods"].values() if p["node"] is None) == 2  # the two replacements wait


# --- guarantees as a percentage of the cluster ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("percent", "amount"),
    [
        pytest.param("25%", "4", id="a-quarter-of-16-cpu"),
        pytest.param("50%", "8", id="half"),
        pytest.param("12.5%", "2", id="fractional-percent"),
        pytest.param("0%", "0", id="zero"),
    ],
)
def test_a_percentage_guarantee_acts_as_that_share_of_the_clusters_amount(percent, amount):
    def scenario(guarantee):
        objs = [node("n1", cpu="8"), node("n2", cpu="8"), queue("qa"), queue("qg", guarantee=guarantee)]
        objs += job("a", ns="ns-a", queue="qa", size=16)
        return run(objs, conf=eviction_config())

    by_percent = scenario({"cpu": percent})
    by_amount = scenario({} if amount is None else {"cpu": amount})
    for q in ("qa", "qg"):
        for field in ("deserved", "guarantee", "realCapability"):
            assert by_percent["queues"][q][field] == by_amount["queues"][q][field], (q, field)
    assert by_percent["queues"]["qa"]["realCapability"]["cpu"] == 16 - float(amount or 0)


def test_a_percentage_guarantee_follows_the_cluster_size():
    objs = [node("n1", cpu="8"), queue("qg", guarantee={"cpu": "25%", "memory": "1Gi"})]
    assert run(objs)["queues"]["qg"]["guarantee"] == {"cpu": 2, "memory": 2**30}
    objs.append(node("n2", cpu="8"))
    assert run(objs)["queues"]["qg"]["guarantee"] == {"cpu": 4, "memory": 2**30}
    objs.append(node("n3", cpu="16", ready=False))  # not ready: not part of the cluster's capacity
    assert run(objs)["queues"]["qg"]["guarantee"] == {"cpu": 4, "memory": 2**30}


@pytest.mark.parametrize("bad", ["101%", "-5%", "%", "lots%", "nan%"])
def test_a_bad_percentage_guarantee_names_the_queue_and_field(bad):
    with pytest.raises(InputError) as err:
        run([node("n1"), queue("qg", guarantee={"cpu": bad})])
    assert "Queue qg: spec.guarantee.resource.cpu: expected a percentage from 0% to 100%" in str(err.value)
