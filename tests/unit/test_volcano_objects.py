"""Volcano's PodGroups and Queues in the cache: the same meaning as ours; ours win a name clash."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue, volcano
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.model.vocabulary import API_GROUP, QueueState


def _as_volcano(obj: dict[str, Any]) -> dict[str, Any]:
    v = volcano(obj)
    return {**v, "kind": VOLCANO_PODGROUP if obj["kind"] == "PodGroup" else VOLCANO_QUEUE}


@pytest.mark.parametrize(
    ("obj", "field", "expected"),
    [
        (podgroup("pg", min_member=3), "min_member", 3),
        (podgroup("pg", queue="team-a"), "queue", "team-a"),
        (podgroup("pg", priority_class="high"), "priority_class_name", "high"),
        (podgroup("pg", min_resources={"cpu": "4"}), "min_resources", {"cpu": 4.0}),
        (podgroup("pg", phase="Inqueue"), "phase", "Inqueue"),
        (podgroup("pg", min_member=0), "min_member", 1),  # Volcano's "no gang"
    ],
)
def test_a_volcano_podgroup_field_means_what_ours_means(
    obj: dict[str, Any], field: str, expected: Any
) -> None:
    state = ClusterState()
    state.apply(_as_volcano(obj))
    pg = state.podgroups["default/pg"]
    assert getattr(pg, field) == expected
    assert pg.api_group == VOLCANO_GROUP


@pytest.mark.parametrize(
    ("obj", "field", "expected"),
    [
        (queue("q", weight=3), "weight", 3),
        (queue("q", capability={"cpu": "8"}), "capability", {"cpu": 8.0}),
        (queue("q", reclaimable=False), "reclaimable", False),
        (queue("q", guarantee={"cpu": "2"}), "guarantee", {"cpu": 2.0}),
        (queue("q", parent="org"), "parent", "org"),
        (queue("q", state="Closed"), "state", QueueState.CLOSED),
        (queue("q", state="Closing"), "state", QueueState.CLOSED),
        (queue("q", state="Unknown"), "state", QueueState.OPEN),
        (queue("q"), "state", QueueState.OPEN),
    ],
)
def test_a_volcano_queue_field_means_what_ours_means(obj: dict[str, Any], field: str, expected: Any) -> None:
    state = ClusterState()
    state.apply(_as_volcano(obj))
    assert getattr(state.queues["q"], field) == expected


def test_ours_wins_a_name_clash_and_the_volcano_object_is_reported_until_ours_goes() -> None:
    state = ClusterState()
    state.apply(_as_volcano(podgroup("pg", min_member=5)))
    assert state.podgroups["default/pg"].min_member == 5 and not state.conflicts
    state.apply(podgroup("pg", min_member=2))
    assert state.podgroups["default/pg"].min_member == 2
    assert state.podgroups["default/pg"].api_group == API_GROUP
    assert "ignored" in state.conflicts[("PodGroup", "default/pg")]
    state.delete("PodGroup", "default", "pg")
    assert state.podgroups["default/pg"].min_member == 5 and not state.conflicts
    state.delete(VOLCANO_PODGROUP, "default", "pg")
    assert "default/pg" not in state.podgroups


def test_a_queue_name_clash_is_won_by_ours_whichever_arrives_first() -> None:
    state = ClusterState()
    state.apply(queue("q", weight=2))
    state.apply(_as_volcano(queue("q", weight=7)))
    assert state.queues["q"].weight == 2
    assert ("Queue", "q") in state.conflicts


@pytest.mark.parametrize(
    ("scheduler", "names", "ours"),
    [
        ("volsched", None, True),
        ("volcano", None, False),
        ("volcano", {"volsched", "volcano"}, True),
        ("default-scheduler", {"volsched", "volcano"}, False),
    ],
)
def test_the_scheduler_names_decide_which_pods_are_ours(
    scheduler: str, names: set[str] | None, ours: bool
) -> None:
    state = ClusterState() if names is None else ClusterState(scheduler_names=names)
    state.apply(node("n1", cpu="4"))
    state.apply(pod("p", scheduler=scheduler))
    snap = state.snapshot()
    assert ("default/p" in snap.jobs) is ours
    assert state.tasks["default/p"].schedulable_by_us is ours


def test_a_pod_joins_a_volcano_group_by_either_annotation_spelling() -> None:
    state = ClusterState()
    state.apply(_as_volcano(podgroup("pg", min_member=2)))
    state.apply(pod("a", group="pg"))
    state.apply(pod("b", annotations={"scheduling.volcano.sh/group-name": "pg"}))
    snap = state.snapshot()
    assert set(snap.jobs["default/pg"].tasks) == {"default/a", "default/b"}


def test_volcanos_queue_annotation_puts_a_lone_pod_in_that_queue() -> None:
    state = ClusterState()
    state.apply(pod("p", annotations={"scheduling.volcano.sh/queue-name": "team-b"}))
    assert state.snapshot().jobs["default/p"].queue == "team-b"


def test_events_about_a_queue_go_to_the_object_in_force_under_its_name() -> None:
    state = ClusterState()
    vq = _as_volcano(queue("q"))
    vq["metadata"] = {"name": "q", "uid": "volcano-uid"}
    state.apply(vq)
    assert state.queue_uid("q") == "volcano-uid"
    state.apply({**queue("q"), "metadata": {"name": "q", "uid": "our-uid"}})
    assert state.queue_uid("q") == "our-uid"
    state.delete("Queue", None, "q")
    assert state.queue_uid("q") == "volcano-uid"
    state.delete(VOLCANO_QUEUE, None, "q")
    assert state.queue_uid("q") is None
