"""Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1, the Workload API) in the cache: read as gangs, a
field volsched does not honour refuses the group with the reason, pods join by spec.schedulingGroup."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import pod, podgroup
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_PODGROUP, build_workload_podgroup
from volsched.framework.decisions import PodGroupStatus
from volsched.kube import status as render
from volsched.kube.prune import prune_pod
from volsched.model.decode import build_task, named_group
from volsched.model.errors import InputError
from volsched.model.vocabulary import API_GROUP, PodGroupPhase


def k8s_podgroup(
    name: str = "pg", *, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    spec.setdefault("schedulingPolicy", {"gang": {"minCount": 3}})
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": WORKLOAD_PODGROUP,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": annotations or {},
        },
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("obj", "field", "expected"),
    [
        (k8s_podgroup(), "min_member", 3),
        (k8s_podgroup(schedulingPolicy={"basic": {}}), "min_member", 1),
        (k8s_podgroup(priorityClassName="high", priority=1000), "priority_class_name", "high"),
        (k8s_podgroup(priority=1000), "priority", 1000),
        (k8s_podgroup(), "queue", "default"),
        (k8s_podgroup(annotations={"scheduling.volsched.io/queue-name": "team-a"}), "queue", "team-a"),
        (k8s_podgroup(annotations={"scheduling.volcano.sh/queue-name": "team-b"}), "queue", "team-b"),
        (k8s_podgroup(disruptionMode={"single": {}}), "min_member", 3),  # the default: what volsched does
        (k8s_podgroup(preemptionPolicy="PreemptLowerPriority"), "min_member", 3),
        (k8s_podgroup(workloadRef={"workloadName": "w", "templateName": "t"}), "min_member", 3),
        (k8s_podgroup(), "phase", PodGroupPhase.PENDING),
        (k8s_podgroup(), "api_group", WORKLOAD_GROUP),
    ],
)
def test_a_kubernetes_podgroup_field_means_a_gang(obj: dict[str, Any], field: str, expected: Any) -> None:
    state = ClusterState()
    state.apply(obj)
    assert getattr(state.podgroups["default/pg"], field) == expected


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (
            {"schedulingConstraints": {"topology": [{"key": "rack"}]}},
            "spec.schedulingConstraints is not honoured",
        ),
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
            "spec.resourceClaims is not honoured",
        ),
        ({"parentCompositePodGroupName": "top"}, "composite pod groups"),
        ({"disruptionMode": {"all": {}}}, "spec.disruptionMode is not honoured"),
        ({"preemptionPolicy": "Never"}, "spec.preemptionPolicy is not honoured"),
        ({"somethingNew": 1}, "spec.somethingNew is not a field volsched knows"),
        ({"schedulingPolicy": {}}, "exactly one of gang and basic"),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "minCount must be a whole number >= 1"),
        ({"schedulingPolicy": {"gang": {"minCount": 2}, "basic": {}}}, "exactly one of gang and basic"),
        ({"priority": "high"}, "spec.priority must be a whole number"),
    ],
)
def test_a_field_volsched_does_not_honour_refuses_the_podgroup_with_the_reason(
    spec: dict[str, Any], said: str
) -> None:
    with pytest.raises(InputError, match=said.replace(".", r"\.")):
        build_workload_podgroup(k8s_podgroup(**spec))
    # Through the feeder: not held, refused, and the event goes to the API's PodGroup kind.
    state = ClusterState()
    feeder = Feeder(state)
    assert not feeder.apply(WORKLOAD_PODGROUP, k8s_podgroup(**spec))
    assert "default/pg" not in state.podgroups
    assert said in state.refused["PodGroup default/pg"]
    rejection = feeder.rejected[f"{WORKLOAD_PODGROUP} default/pg"]
    assert (rejection.kind, rejection.api_version) == ("PodGroup", "scheduling.k8s.io/v1beta1")


def _with_group(obj: dict[str, Any], group: str) -> dict[str, Any]:
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def test_a_pod_joins_the_podgroup_its_scheduling_group_names_and_the_cache_keeps_the_field() -> None:
    raw = _with_group(pod("p0"), "pg")
    task = build_task(raw, priority_classes={})
    assert task.job_key == "default/pg"
    assert named_group(raw) == "default/pg"
    assert prune_pod(raw)["spec"]["schedulingGroup"] == {"podGroupName": "pg"}
    # A group annotation, when a pod has both, wins.
    both = _with_group(pod("p1", group="other"), "pg")
    assert build_task(both, priority_classes={}).job_key == "default/other"


def test_the_phase_a_session_gave_survives_the_objects_next_event() -> None:
    state = ClusterState()
    state.apply(k8s_podgroup())
    state.set_podgroup_phase("default/pg", PodGroupPhase.INQUEUE)
    state.apply(k8s_podgroup(schedulingPolicy={"gang": {"minCount": 2}}))  # its status written, say
    pg = state.podgroups["default/pg"]
    assert (pg.phase, pg.min_member) == (PodGroupPhase.INQUEUE, 2)
    state.delete(WORKLOAD_PODGROUP, "default", "pg")
    assert "default/pg" not in state.podgroups


def test_ours_wins_a_name_clash_and_the_kubernetes_podgroup_is_reported_until_ours_goes() -> None:
    state = ClusterState()
    state.apply(k8s_podgroup())
    state.apply(podgroup("pg", min_member=2))
    assert state.podgroups["default/pg"].api_group == API_GROUP
    assert "ignored" in state.conflicts[(WORKLOAD_PODGROUP, "default/pg")]
    state.delete("PodGroup", "default", "pg")
    assert state.podgroups["default/pg"].api_group == WORKLOAD_GROUP
    assert not state.conflicts


@pytest.mark.parametrize(
    ("scheduled", "phase", "status", "reason"),
    [
        (0, "Inqueue", "False", "Unschedulable"),
        (3, "Running", "True", "Scheduled"),
        (0, "Completed", "True", "Scheduled"),
    ],
)
def test_the_status_written_is_kube_schedulers_condition(
    scheduled: int, phase: str, status: str, reason: str
) -> None:
    st = PodGroupStatus(
        phase=phase,
        queue="default",
        min_member=3,
        running=0,
        succeeded=0,
        failed=0,
        pending=3,
        scheduled=scheduled,
    )
    (cond,) = render.workload_podgroup_status(st)["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodGroupInitiallyScheduled", status, reason)


class _Posts:
    """A writer that keeps the events posted."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def post_event(self, body: dict[str, Any]) -> None:
        self.bodies.append(body)


def test_a_shadowed_kubernetes_podgroup_gets_its_event_as_a_scheduling_k8s_io_podgroup() -> None:
    from volsched.kube.podgroups import ConflictReporter

    state = ClusterState()
    state.apply(k8s_podgroup())
    state.apply(podgroup("pg", min_member=2))
    posts = _Posts()
    assert ConflictReporter(posts).report(dict(state.conflicts), dict(state.volcano_uids)) == []  # type: ignore[arg-type]
    (body,) = posts.bodies
    involved = body["involvedObject"]
    assert (involved["kind"], involved["apiVersion"], involved["uid"]) == (
        "PodGroup",
        "scheduling.k8s.io/v1beta1",
        "uid-pg",
    )
    assert "scheduling.volsched.io" in body["message"]
