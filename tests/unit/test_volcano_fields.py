"""The Volcano fields that were read by nothing: a PodGroup's ``minTaskMember`` (per-role minimums), a
Queue's ``priority`` and ``deserved``, and a pod's ``volcano.sh/preemptable``. Each is honoured with
Volcano's meaning, or (``deserved``) shown on the object as ignored, with why."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.builders import PRIORITIES, node, pod, podgroup, priority_class, queue, volcano
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cache.volcano import (
    DESERVED_IGNORED,
    NETWORK_TOPOLOGY_IGNORED,
    QUEUE_PODS_IGNORED,
    VOLCANO_PODGROUP,
    VOLCANO_QUEUE,
)
from volsched.framework.decisions import SessionResult
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.kube.status import podgroup_status, queue_status
from volsched.model.decode import build_podgroup, build_task
from volsched.model.errors import InputError

Obj = dict[str, Any]
TIERS = (Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
ROLE = "volcano.sh/task-spec"


def vc(obj: Obj) -> Obj:
    """``obj`` as Volcano writes it, under the kind the cache keeps Volcano's objects by."""
    out = volcano(obj)
    out["kind"] = VOLCANO_PODGROUP if obj["kind"] == "PodGroup" else VOLCANO_QUEUE
    return out


def _config(actions: str) -> Any:
    return load_config(text=re.sub(r"^actions: .*$", f'actions: "{actions}"', TIERS, flags=re.M))


def _session(objects: list[Obj], actions: str = "enqueue, allocate") -> SessionResult:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return run_session(state.snapshot(now=1.0), _config(actions))


# --- minTaskMember -------------------------------------------------------------------------------------


def _roles_group(roles: dict[str, int], *, min_member: int, phase: str = "Inqueue") -> Obj:
    group = vc(podgroup("mpi", ns="ns", queue="q", min_member=min_member, phase=phase))
    group["spec"]["minTaskMember"] = roles
    return group


def _member(name: str, role: str, *, cpu: str = "1", node: str | None = None) -> Obj:
    return pod(name, ns="ns", cpu=cpu, group="mpi", annotations={ROLE: role}, node=node)


ROLES = [
    pytest.param(
        # minMember 3 is met by the workers alone, but the master (4 cpu) fits nowhere: not ready
        [node("n1", cpu="3"), queue("q"), _roles_group({"master": 1, "worker": 2}, min_member=3),
         _member("m-0", "master", cpu="4"), *(_member(f"w-{i}", "worker") for i in range(3))],
        set(),
        id="a-role-short-of-its-minimum-keeps-the-gang-from-starting-though-min-member-is-met",
    ),
    pytest.param(
        [node("n1", cpu="4"), queue("q"), _roles_group({"master": 1, "worker": 2}, min_member=3),
         _member("m-0", "master", cpu="2"), *(_member(f"w-{i}", "worker") for i in range(3))],
        {"ns/m-0", "ns/w-0", "ns/w-1"},
        id="every-role-at-its-minimum-starts-the-gang",
    ),
    pytest.param(
        # Volcano skips the per-role check when minMember is below the roles' sum: minMember alone binds
        [node("n1", cpu="3"), queue("q"), _roles_group({"master": 1, "worker": 4}, min_member=3),
         *(_member(f"w-{i}", "worker") for i in range(3))],
        {"ns/w-0", "ns/w-1", "ns/w-2"},
        id="roles-summing-past-min-member-are-not-binding",
    ),
    pytest.param(
        [node("n1", cpu="8"), queue("q"), _roles_group({"master": 0, "worker": 2}, min_member=2),
         *(_member(f"w-{i}", "worker") for i in range(2))],
        {"ns/w-0", "ns/w-1"},
        id="a-role-of-minimum-zero-needs-no-pod",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("objects", "bound"), ROLES)
def test_a_gang_starts_only_with_every_roles_minimum(objects: list[Obj], bound: set[str]) -> None:
    result = _session(objects)
    assert {b.pod for b in result.binds} == bound


def test_a_gang_missing_the_pods_of_a_role_is_refused_naming_the_role() -> None:
    result = _session(
        [node("n1", cpu="8"), queue("q"), _roles_group({"master": 1, "worker": 2}, min_member=3),
         *(_member(f"w-{i}", "worker") for i in range(3))],
    )  # fmt: skip
    assert not result.binds
    assert "minTaskMember role master: 0 of 1" in (result.podgroups["ns/mpi"].unschedulable or "")


def test_preempt_takes_no_pod_of_a_role_at_its_minimum() -> None:
    """A running gang one pod above minMember: its master (the lowest priority, so the first victim by
    priority) is its role's last, so a worker goes instead."""
    low = [
        _roles_group({"master": 1, "worker": 1}, min_member=2, phase="Running"),
        pod(
            "m-0",
            ns="ns",
            cpu="1",
            group="mpi",
            annotations={ROLE: "master"},
            node="n1",
            priority_class="low",
        ),
        pod(
            "w-0",
            ns="ns",
            cpu="1",
            group="mpi",
            annotations={ROLE: "worker"},
            node="n1",
            priority_class="mid",
        ),
        pod(
            "w-1",
            ns="ns",
            cpu="1",
            group="mpi",
            annotations={ROLE: "worker"},
            node="n1",
            priority_class="mid",
        ),
    ]
    high = [podgroup("hi", ns="ns", queue="q", min_member=1, phase="Inqueue", priority_class="high"),
            pod("hi-0", ns="ns", cpu="1", group="hi", priority_class="high")]  # fmt: skip
    objects = [node("n1", cpu="3"), queue("q"), *PRIORITIES, priority_class("mid", 50), *low, *high]
    evicted = {e.pod for e in _session(objects, actions="preempt").evictions}
    assert len(evicted) == 1 and evicted <= {"ns/w-0", "ns/w-1"}, evicted


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("workers", "spec.minTaskMember must be a map"),
        ({"worker": -1}, "spec.minTaskMember.worker: expected an integer >= 0"),
        ({"worker": "two"}, "spec.minTaskMember.worker: expected an integer >= 0"),
    ],
)
def test_a_min_task_member_that_is_no_count_per_role_is_refused_naming_the_field(
    raw: Any, message: str
) -> None:
    group = volcano(podgroup("mpi", ns="ns", min_member=2))
    group["spec"]["minTaskMember"] = raw
    with pytest.raises(InputError, match=message):
        build_podgroup(group)


# --- Queue priority --------------------------------------------------------------------------------------


def _queues(lo: int, hi: int) -> list[Obj]:
    """Two queues with room for all, each asking 2 pods of 1 cpu; queue a holds 1 already (so by share b
    comes first), and ``lo``/``hi`` are a's and b's priorities."""
    qa, qb = vc(queue("qa")), vc(queue("qb"))
    qa["spec"]["priority"], qb["spec"]["priority"] = lo, hi
    return [
        node("n1", cpu="10"), qa, qb,
        podgroup("held", ns="ns", queue="qa", phase="Running"), pod("held-0", ns="ns", cpu="1", group="held", node="n1"),
        *(podgroup(f"a{i}", ns="ns", queue="qa", phase="Inqueue") for i in range(2)),
        *(pod(f"a{i}-0", ns="ns", cpu="1", group=f"a{i}") for i in range(2)),
        *(podgroup(f"b{i}", ns="ns", queue="qb", phase="Inqueue") for i in range(2)),
        *(pod(f"b{i}-0", ns="ns", cpu="1", group=f"b{i}") for i in range(2)),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("priorities", "first"),
    [
        pytest.param((0, 0), "ns/b0-0", id="equal-priorities-go-by-share"),
        pytest.param((5, 0), "ns/a0-0", id="the-higher-priority-queue-first-whatever-its-share"),
        pytest.param((-1, -2), "ns/a0-0", id="negative-priorities-order-too"),
    ],
)
def test_a_queue_of_higher_priority_is_served_first(priorities: tuple[int, int], first: str) -> None:
    result = _session(_queues(*priorities), actions="allocate")
    assert len(result.binds) == 4
    assert result.binds[0].pod == first


# --- Queue deserved --------------------------------------------------------------------------------------


def test_a_volcano_queue_that_sets_deserved_says_on_itself_that_it_is_ignored_and_why() -> None:
    with_deserved = vc(queue("qa"))
    with_deserved["spec"]["deserved"] = {"cpu": "0"}  # 0 included: a share of nothing is still a share
    result = _session([node("n1", cpu="2"), with_deserved, vc(queue("qb"))], actions="enqueue")
    conditions = {c["type"]: c for c in queue_status(result.queues["qa"])["conditions"]}
    ignored = conditions["FieldsIgnored"]
    assert ignored["status"] == "True"
    assert ignored["message"] == f"spec.deserved is ignored: {DESERVED_IGNORED}"
    assert "FieldsIgnored" not in {c["type"] for c in queue_status(result.queues["qb"])["conditions"]}


@pytest.mark.parametrize("field", ["capability", "guarantee"])
def test_a_volcano_queue_that_caps_its_pods_says_on_itself_that_it_is_ignored_and_why(field: str) -> None:
    # The defect: a queue capped at 2 pods held 3, and its status said capability pods 2 beside
    # allocated pods 3. Volcano checks no pods in a queue's capability or guarantee either.
    capped = vc(queue("qa", **{field: {"cpu": "2", "pods": "2"}}))  # type: ignore[arg-type]
    result = _session(
        [node("n1", cpu="4"), capped, *(pod(f"p{i}", queue="qa", cpu="100m") for i in range(3))]
    )
    assert len(result.binds) == 3
    conditions = {c["type"]: c for c in queue_status(result.queues["qa"])["conditions"]}
    path = "spec.capability.pods" if field == "capability" else "spec.guarantee.resource.pods"
    assert conditions["FieldsIgnored"]["message"] == f"{path} is ignored: {QUEUE_PODS_IGNORED}"


# --- volcano.sh/preemptable ---------------------------------------------------------------------------


def _victim(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> list[Obj]:
    """A running job of low priority, two pods of 1 cpu (minMember 1: one may go), both marked alike."""
    return [
        podgroup("lo", ns="ns", queue="q", phase="Running", priority_class="low"),
        *(pod(f"lo-{i}", ns="ns", cpu="1", group="lo", node="n1", priority_class="low",
              annotations=annotations, labels=labels) for i in range(2)),
    ]  # fmt: skip


def _allowing(name: str) -> Obj:
    """A queue whose pods may declare themselves not preemptable (docs/tenancy.md)."""
    out = queue(name)
    out["spec"]["allowNotPreemptable"] = True
    return out


PREEMPTABLE = [
    pytest.param({}, {}, True, id="unset-may-go"),
    pytest.param({"volcano.sh/preemptable": "false"}, {}, False, id="annotation-false-stays"),
    pytest.param({}, {"volcano.sh/preemptable": "false"}, False, id="label-false-stays"),
    pytest.param({"volcano.sh/preemptable": "true"}, {}, True, id="annotation-true-may-go"),
    pytest.param({"volcano.sh/preemptable": "maybe"}, {}, False, id="a-value-volcano-cannot-read-stays"),
    pytest.param({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}, True,
                 id="the-annotation-wins-over-the-label"),
    pytest.param({"scheduling.volsched.io/preemptable": "true", "volcano.sh/preemptable": "false"}, {}, True,
                 id="volscheds-annotation-wins-over-volcanos"),
]  # fmt: skip


@pytest.mark.parametrize(("annotations", "labels", "evicted"), PREEMPTABLE)
def test_volcanos_preemptable_keeps_a_pod_from_preempt(
    annotations: dict[str, str], labels: dict[str, str], evicted: bool
) -> None:
    hi = [podgroup("hi", ns="ns", queue="q", phase="Inqueue", priority_class="high"),
          pod("hi-0", ns="ns", cpu="1", group="hi", priority_class="high")]  # fmt: skip
    objects = [node("n1", cpu="2"), _allowing("q"), *PRIORITIES, *_victim(annotations, labels), *hi]
    assert len(_session(objects, "preempt").evictions) == (1 if evicted else 0)
    # The same rule as volsched's own annotation: in a queue that does not allow it, it protects nothing.
    objects[1] = queue("q")
    assert len(_session(objects, "preempt").evictions) == 1


@pytest.mark.parametrize(("annotations", "labels", "evicted"), PREEMPTABLE[:3])
def test_volcanos_preemptable_keeps_a_pod_from_reclaim(
    annotations: dict[str, str], labels: dict[str, str], evicted: bool
) -> None:
    lender = _victim(annotations, labels)
    lender[0]["spec"]["queue"] = "qa"
    taker = [podgroup("b", ns="ns", queue="qb", phase="Inqueue"), pod("b-0", ns="ns", cpu="1", group="b")]
    result = _session(
        [node("n1", cpu="2"), _allowing("qa"), queue("qb"), *PRIORITIES, *lender, *taker], "reclaim"
    )
    assert len(result.evictions) == (1 if evicted else 0)


def test_the_task_reads_volcanos_preemptable_as_volcano_does() -> None:
    def task(annotations: dict[str, str], labels: dict[str, str] | None = None) -> bool | None:
        return build_task(pod("p", annotations=annotations, labels=labels), priority_classes={}).preemptable

    assert task({}) is None
    assert task({"volcano.sh/preemptable": "1"}) is True
    assert task({"volcano.sh/preemptable": "F"}) is False
    assert task({}, {"volcano.sh/preemptable": "True"}) is True


# --- networkTopology ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topology",
    [{"mode": "hard", "highestTierAllowed": 1}, {"highestTierAllowed": 2}],
    ids=["hard", "mode-left-to-volcanos-default"],
)
def test_a_volcano_gang_that_requires_a_network_tier_is_refused_saying_why(topology: Obj) -> None:
    """Volcano keeps such a gang within a tier of its HyperNodes, which volsched does not read: before,
    volsched placed the gang as if the field were not there, across any nodes. Now the PodGroup is
    refused, saying why, and its pods wait, told so."""
    group = vc(podgroup("mpi", ns="ns", queue="q", min_member=2, phase="Inqueue"))
    group["spec"]["networkTopology"] = topology
    members = [pod(f"w-{i}", ns="ns", group="mpi") for i in range(2)]
    state = ClusterState()
    feeder = Feeder(state)
    for obj in [node("n1", cpu="8"), queue("q"), *members]:
        assert feeder.apply(obj["kind"], obj, strict=True)
    assert not feeder.apply(VOLCANO_PODGROUP, group)
    assert "ns/mpi" not in state.podgroups
    assert "HyperNodes" in state.refused["PodGroup ns/mpi"]
    result = run_session(state.snapshot(now=1.0), _config("enqueue, allocate"))
    assert not result.binds
    told = " ".join(str(v) for v in result.unschedulable.values()) if result.unschedulable else ""
    assert "pod group mpi was rejected by volsched" in told and "networkTopology" in told, told


def test_a_volcano_gang_that_prefers_a_network_tier_is_placed() -> None:
    group = vc(podgroup("mpi", ns="ns", queue="q", min_member=2, phase="Inqueue"))
    group["spec"]["networkTopology"] = {"mode": "soft", "highestTierAllowed": 1}
    result = _session(
        [node("n1", cpu="8"), queue("q"), group, *(pod(f"w-{i}", ns="ns", group="mpi") for i in range(2))]
    )
    assert {b.pod for b in result.binds} == {"ns/w-0", "ns/w-1"}
    # The preference is not read, and the PodGroup says so (before, nothing did).
    conditions = {c["type"]: c for c in podgroup_status(result.podgroups["ns/mpi"])["conditions"]}
    assert conditions["FieldsIgnored"]["status"] == "True"
    assert (
        conditions["FieldsIgnored"]["message"]
        == f"spec.networkTopology is ignored: {NETWORK_TOPOLOGY_IGNORED}"
    )


def test_a_volcano_podgroup_field_volsched_does_not_know_is_named_on_it() -> None:
    group = vc(podgroup("mpi", ns="ns", queue="q", min_member=2, phase="Inqueue"))
    group["spec"]["elasticMembers"] = 4  # a field of a later Volcano, say
    group["spec"]["other"] = {}  # empty: says nothing
    result = _session(
        [node("n1", cpu="8"), queue("q"), group, *(pod(f"w-{i}", ns="ns", group="mpi") for i in range(2))]
    )
    assert len(result.binds) == 2
    conditions = {c["type"]: c for c in podgroup_status(result.podgroups["ns/mpi"])["conditions"]}
    assert conditions["FieldsIgnored"]["message"] == (
        "spec.elasticMembers is ignored: not a field of a Volcano PodGroup that volsched knows"
    )


def test_a_volcano_gang_without_a_network_tier_has_no_fields_ignored() -> None:
    group = vc(podgroup("mpi", ns="ns", queue="q", min_member=2, phase="Inqueue"))
    result = _session(
        [node("n1", cpu="8"), queue("q"), group, *(pod(f"w-{i}", ns="ns", group="mpi") for i in range(2))]
    )
    assert "FieldsIgnored" not in {
        c["type"] for c in podgroup_status(result.podgroups["ns/mpi"])["conditions"]
    }


def test_a_volcano_gang_of_subgroups_is_refused_saying_why() -> None:
    """Volcano starts such a gang only with minSubGroups subgroups of subGroupSize pods each (in one
    network tier): before, volsched placed the pods as one gang of minMember, unsaid."""
    group = vc(podgroup("mpi", ns="ns", queue="q", min_member=2, phase="Inqueue"))
    group["spec"]["subGroupPolicy"] = [{"name": "w", "subGroupSize": 2, "minSubGroups": 2}]
    state = ClusterState()
    feeder = Feeder(state)
    assert not feeder.apply(VOLCANO_PODGROUP, group)
    assert "spec.subGroupPolicy" in state.refused["PodGroup ns/mpi"]


# --- Queue affinity and the fields not read ----------------------------------------------------------------


@pytest.mark.parametrize("part", ["nodeGroupAffinity", "nodeGroupAntiAffinity"])
def test_a_volcano_queue_that_requires_or_forbids_node_groups_is_refused_and_its_jobs_wait(part: str) -> None:
    """Before, the queue's jobs went to any node, the node groups its owner required or forbade unsaid."""
    ruled = vc(queue("qa"))
    ruled["spec"]["affinity"] = {part: {"requiredDuringSchedulingIgnoredDuringExecution": ["gpu-pool"]}}
    state = ClusterState()
    feeder = Feeder(state)
    for obj in [node("n1", cpu="4"), pod("p", queue="qa")]:
        assert feeder.apply(obj["kind"], obj, strict=True)
    assert not feeder.apply(VOLCANO_QUEUE, ruled)
    assert "requires or forbids node groups" in state.refused["Queue qa"]
    result = run_session(state.snapshot(now=1.0), _config("enqueue, allocate"))
    assert not result.binds
    assert "queue qa was rejected by volsched" in " ".join(result.unschedulable.values())


def test_a_volcano_queue_says_on_itself_which_of_its_fields_volsched_does_not_read() -> None:
    q = vc(queue("qa"))
    q["spec"]["affinity"] = {"nodeGroupAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": ["a"]}}
    q["spec"]["extendClusters"] = [{"name": "other", "weight": 1}]
    q["spec"]["somethingNew"] = 1
    q["spec"]["type"] = ""  # empty: says nothing
    result = _session([node("n1", cpu="2"), q, pod("p", queue="qa")])
    assert len(result.binds) == 1  # a preference not read keeps nothing from running
    message = {c["type"]: c for c in queue_status(result.queues["qa"])["conditions"]}["FieldsIgnored"][
        "message"
    ]
    assert message.startswith("spec.affinity is ignored: preferred node groups"), message
    assert (
        "spec.extendClusters is ignored" in message and "spec.somethingNew is ignored: not a field" in message
    )
    assert "spec.type" not in message
