"""Hierarchical, work-conserving queues through the whole engine: the batch-admission slides' story
(services and big data 1:1, Hadoop and Spark inside big data), idle capacity placed, and the water-fill
defects of issue 8 (6: a huge weight on an idle queue; 7: an impossible guarantee)."""

from __future__ import annotations

import pytest

from tests.builders import count_placed, node, podgroup, pods, queue, quota, run
from tests.sim._eviction_helpers import EXAMPLES, eviction_config, job
from volsched.model.errors import InputError
from volsched.simulate import Document, Simulator, load_documents, to_json

INT32_MAX = 2**31 - 1


def _busy(q: str, ns: str, count: int = 30) -> list[dict]:
    return [podgroup("job", ns=ns, queue=q, min_member=1), *pods("p", count, ns=ns, group="job", cpu="1")]


def _events(data: dict, obj: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in data["events"] if e["object"] == obj]


def test_three_equal_queues_on_ten_cpu_place_all_ten_and_stay():
    """Issue 13: each deserves 3.33 cpu; 1-cpu pods fill 3 each, and the tenth goes to one of them."""
    objs = [node("n1", cpu="10"), *(queue(q) for q in ("a", "b", "c"))]
    for q in ("a", "b", "c"):
        objs += _busy(q, f"ns-{q}", 7)
    sim = Simulator([Document(f"doc {i}", o) for i, o in enumerate(objs)], eviction_config())
    data = to_json(sim.run(50))
    held = {q: data["queues"][q]["allocated"]["cpu"] for q in ("a", "b", "c")}
    assert sum(held.values()) == 10
    assert sorted(held.values()) == [3, 3, 4]
    assert all(data["queues"][q]["deserved"]["cpu"] == 3.333333 for q in held)
    for _ in range(10):  # steady: nobody reclaims the tenth cpu back and forth
        step, changed = sim.step()
        assert not changed and not step.evictions


@pytest.mark.parametrize("weight", [1, 2, 100, 65536, 2**30, INT32_MAX])
def test_an_idle_queue_of_any_weight_does_not_stop_the_others(weight):
    """Issue 8, defect 6: an idle queue with weight 2**31-1 ended the water-fill after one round, so the
    busy queues deserved almost nothing and nothing was placed."""
    objs = [node("n1", cpu="16"), queue("idle", weight=weight), queue("a"), queue("b", weight=3)]
    objs += _busy("a", "ns-a") + _busy("b", "ns-b")
    data = run(objs)
    assert data["queues"]["a"]["allocated"]["cpu"] == 4
    assert data["queues"]["b"]["allocated"]["cpu"] == 12
    assert data["queues"]["idle"]["deserved"] == {}


def test_a_weight_past_int32_is_refused_naming_the_field():
    sim_input = [Document("q.yaml: document 1", queue("huge", weight=INT32_MAX + 1))]
    with pytest.raises(InputError, match=r"spec\.weight must be at most 2147483647"):
        Simulator(sim_input)


def test_a_guarantee_larger_than_the_cluster_leaves_the_others_working():
    """Issue 8, defect 7: a guarantee of 1000 cpu on a 16-cpu cluster drove the other queues'
    realCapability to 0, so nothing else ran, and nobody was told."""
    objs = [node("n1", cpu="8"), node("n2", cpu="8"), queue("greedy", guarantee={"cpu": "1000"})]
    objs += [queue("a"), queue("b"), *_busy("a", "ns-a"), *_busy("b", "ns-b")]
    data = run(objs)
    a, b = data["queues"]["a"], data["queues"]["b"]
    assert a["realCapability"]["cpu"] > 0 and b["realCapability"]["cpu"] > 0
    # greedy keeps min(guarantee, its weighted share among the four queues, default included) = 4 cpu
    # reserved; a and b share the rest.
    assert a["realCapability"]["cpu"] == b["realCapability"]["cpu"] == 12
    assert (a["allocated"]["cpu"], b["allocated"]["cpu"]) == (6, 6)
    events = _events(data, "Queue greedy")
    assert [r for r, _ in events] == ["GuaranteeNotMet"]
    assert "missing cpu 996" in events[0][1] and "the cluster has cpu 16" in events[0][1]
    for q in data["queues"].values():
        assert q["share"] is None or q["share"] <= 2


def test_guarantees_summing_past_the_cluster_are_cut_by_weight_and_reported():
    objs = [node("n1", cpu="16"), queue("g1", guarantee={"cpu": "12"}), queue("g2", guarantee={"cpu": "12"})]
    objs += [queue("a"), *_busy("a", "ns-a"), *_busy("g1", "ns-g1"), *_busy("g2", "ns-g2")]
    data = run(objs)
    placed = {q: data["queues"][q]["allocated"]["cpu"] for q in ("g1", "g2", "a")}
    assert sum(placed.values()) == 16 and placed["a"] >= 5
    for g in ("g1", "g2"):
        assert [r for r, _ in _events(data, f"Queue {g}")] == ["GuaranteeNotMet"]


def test_a_guarantee_above_its_own_capability_is_reported_and_cut():
    objs = [node("n1", cpu="16"), queue("g", guarantee={"cpu": "8"}, capability={"cpu": "4"}), queue("a")]
    objs += _busy("a", "ns-a")
    data = run(objs)
    assert data["queues"]["a"]["realCapability"]["cpu"] == 12
    assert data["queues"]["a"]["allocated"]["cpu"] == 12
    ((reason, message),) = _events(data, "Queue g")
    assert reason == "GuaranteeAboveCapability" and "capability cpu 4" in message


def test_a_job_in_a_parent_queue_is_not_admitted_and_says_why():
    objs = [node("n1", cpu="8"), queue("area"), queue("team", parent="area")]
    objs += _busy("area", "ns-area", 2) + _busy("team", "ns-team", 2)
    data = run(objs)
    assert count_placed(data, "ns-area/") == 0 and count_placed(data, "ns-team/") == 2
    assert data["podgroups"]["ns-area/job"]["phase"] == "Pending"
    messages = [m for _, m in _events(data, "PodGroup ns-area/job")]
    assert any("queue area has child queues (team); jobs go only to leaf queues" in m for m in messages)
    assert data["queues"]["area"]["parent"] is None and data["queues"]["team"]["parent"] == "area"
    assert data["queues"]["area"]["allocated"]["cpu"] == 2  # a parent shows its subtree


def test_a_missing_parent_or_a_cycle_is_reported_and_the_queues_keep_working():
    objs = [
        node("n1", cpu="9"),
        queue("orphan", parent="gone"),
        queue("x", parent="y"),
        queue("y", parent="x"),
    ]
    objs += _busy("orphan", "ns-o", 3) + _busy("x", "ns-x", 3) + _busy("y", "ns-y", 3)
    data = run(objs)
    assert count_placed(data, "ns-o/") == count_placed(data, "ns-x/") == count_placed(data, "ns-y/") == 3
    assert [r for r, _ in _events(data, "Queue orphan")] == ["ParentNotFound"]
    assert [r for r, _ in _events(data, "Queue x")] == ["ParentCycle"]
    assert "x -> y -> x" in _events(data, "Queue y")[0][1]


# --- the slides' story ------------------------------------------------------------------------------


class Story:
    """A 32-cpu cluster; services and bigdata 1:1 under the root, hadoop and spark 1:1 under bigdata."""

    def __init__(self) -> None:
        docs = load_documents([EXAMPLES / "hierarchy-slides.yaml"])
        self.sim = Simulator(
            [d for d in docs if d.obj["kind"] in ("Node", "Queue", "Namespace")], eviction_config()
        )
        self.sim.run(5)

    def add(self, name: str, *, ns: str, queue: str, size: int) -> None:
        self.sim.add(
            [Document(f"{name} {i}", o) for i, o in enumerate(job(name, ns=ns, queue=queue, size=size))]
        )

    def stop(self, ns: str) -> None:
        """The team's work is done: its Job and pods go away."""
        for key in [k for k in self.sim.jobs if k.startswith(f"{ns}/")]:
            del self.sim.jobs[key]
        for key in [k for k in self.sim.state.raw_pods if k.startswith(f"{ns}/")]:
            self.sim.state.delete("Pod", *key.split("/", 1))

    def settle(self) -> dict[str, float]:
        result = self.sim.run(80)
        assert not result.last.changed, "did not settle"
        for _ in range(5):  # and stays: no eviction ping-pong
            step, changed = self.sim.step()
            assert not changed and not step.evictions
        data = to_json(result)
        return {q: (v["allocated"] or {}).get("cpu", 0) for q, v in data["queues"].items() if q != "default"}


def test_the_slides_story_one_area_idle_then_both_busy_then_a_cluster_idle():
    story = Story()
    # Big data alone: services is idle and lends everything; Hadoop and Spark share big data's 32.
    story.add("etl", ns="hadoop", queue="hadoop", size=40)
    story.add("ml", ns="spark", queue="spark", size=40)
    assert story.settle() == {"services": 0, "bigdata": 32, "hadoop": 16, "spark": 16}
    # Services get busy: they take their half back, from both clusters inside big data alike.
    story.add("web", ns="services", queue="services", size=40)
    assert story.settle() == {"services": 16, "bigdata": 16, "hadoop": 8, "spark": 8}
    # Spark finishes: Hadoop borrows Spark's part of big data (siblings first), services keep their half.
    story.stop("spark")
    assert story.settle() == {"services": 16, "bigdata": 16, "hadoop": 16, "spark": 0}
    # Services finish: big data (Hadoop alone) gets the whole cluster.
    story.stop("services")
    assert story.settle() == {"services": 0, "bigdata": 32, "hadoop": 32, "spark": 0}
    # Spark comes back: it takes back its half of big data from its sibling, nothing from elsewhere.
    story.add("ml2", ns="spark", queue="spark", size=40)
    assert story.settle() == {"services": 0, "bigdata": 32, "hadoop": 16, "spark": 16}


def test_fragments_a_queue_cannot_use_go_to_a_queue_whose_pods_fit_and_stay():
    """Work conservation: big's 1-cpu pods leave half a cpu on each 1.5-cpu node, which big can never
    use; small (almost no share by weight) has 0.5-cpu pods that fit there, so they run, and stay."""
    objs = [node("n1", cpu="1.5"), node("n2", cpu="1.5"), queue("big", weight=INT32_MAX), queue("small")]
    objs += _busy("big", "ns-big", 6)
    objs += [
        podgroup("job", ns="ns-small", queue="small"),
        *pods("p", 6, ns="ns-small", group="job", cpu="500m"),
    ]
    sim = Simulator([Document(f"doc {i}", o) for i, o in enumerate(objs)], eviction_config())
    data = to_json(sim.run(50))
    assert data["queues"]["big"]["allocated"]["cpu"] == 2
    assert data["queues"]["small"]["allocated"]["cpu"] == 1
    for _ in range(5):
        step, changed = sim.step()
        assert not changed and not step.evictions


def test_a_small_share_goes_to_the_heavier_namespace_first():
    """Inside a queue, namespaces share by weight down to the last pod: with room for two 1-cpu pods
    and weights 1, 1 and 6, the weight-6 namespace (fluid 1.5 cpu) is not left out by name order."""
    objs = [node("n1", cpu="2"), queue("q"), quota("a-light", 1), quota("b-light", 1), quota("heavy", 6)]
    for ns in ("a-light", "b-light", "heavy"):
        objs += _busy("q", ns, 4)
    data = run(objs)
    assert count_placed(data, "heavy/") >= 1
    assert count_placed(data, "a-light/") + count_placed(data, "b-light/") + count_placed(data, "heavy/") == 2


def test_reclaim_takes_from_siblings_before_cousins():
    """Spark arrives when both its sibling Hadoop and its cousin services hold beyond their shares:
    Hadoop gives first (wherever its pods run), then services, and then nothing moves any more."""
    story = Story()
    story.add("web", ns="services", queue="services", size=40)
    assert story.settle() == {"services": 32, "bigdata": 0, "hadoop": 0, "spark": 0}
    story.add("etl", ns="hadoop", queue="hadoop", size=12)  # big data asks for 12 only: it gets them
    assert story.settle() == {"services": 20, "bigdata": 12, "hadoop": 12, "spark": 0}
    story.add("ml", ns="spark", queue="spark", size=40)
    result = story.sim.run(80)
    evicted = [e.pod.split("/", 1)[0] for e in result.evictions]
    assert evicted == ["hadoop"] * 4 + ["services"] * 4, evicted
    assert story.settle() == {"services": 16, "bigdata": 16, "hadoop": 8, "spark": 8}


def test_reclaim_names_no_cousin_while_a_sibling_elsewhere_holds_beyond_its_share():
    """services (cousin) and hadoop (sibling) both hold 2 cpu beyond their shares; on n1 only services'
    pods run. Reclaim for spark must not name them there: hadoop's pods on n2 go first."""
    from volsched.framework.runner import open_session

    objs = [node("n1", cpu="8"), node("n2", cpu="8"), queue("services"), queue("bigdata")]
    objs += [queue("hadoop", parent="bigdata"), queue("spark", parent="bigdata")]
    objs += [podgroup("web", ns="services", queue="services", phase="Running")]
    objs += pods("web-a", 8, ns="services", group="web", node="n1") + pods(
        "web-b", 2, ns="services", group="web", node="n2"
    )
    objs += [podgroup("etl", ns="hadoop", queue="hadoop", phase="Running")]
    objs += pods("etl", 6, ns="hadoop", group="etl", node="n2")
    objs += [
        podgroup("ml", ns="spark", queue="spark", phase="Inqueue"),
        *pods("ml", 8, ns="spark", group="ml"),
    ]
    sim = Simulator([Document(f"doc {i}", o) for i, o in enumerate(objs)], eviction_config())
    session = open_session(sim.state.snapshot(now=sim.clock), eviction_config())
    spark = session.jobs["spark/ml"]
    task = next(iter(spark.tasks.values()))

    def on(node_name: str) -> list:
        return [t for t in session.nodes.tasks[session.nodes.index[node_name]].values()]

    assert session.reclaimable(task, on("n1")) == []
    named = session.reclaimable(task, on("n2"))
    assert named and {t.namespace for t in named} == {"hadoop"}
