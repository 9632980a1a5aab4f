"""A gang left half-bound (the operator died between the binds of one gang, so some members carry
spec.nodeName while the PodGroup still says Pending) is believed admitted, counts its bound members once,
and is completed first as soon as room exists."""

from __future__ import annotations

import pytest

from tests.builders import node, placed, pod, podgroup, queue, simulate_objects, to_json

Obj = dict


def _half_bound(
    *,
    bound: int = 2,
    size: int = 4,
    queue_name: str | None = None,
    min_resources: dict | None = None,
    phase: str = "Pending",
) -> list[Obj]:
    group = podgroup("g", min_member=size, queue=queue_name, min_resources=min_resources, phase=phase)
    members = [
        pod(f"g-{i}", group="g", node="n1" if i < bound else None, created=f"2026-01-01T00:00:0{i}Z")
        for i in range(size)
    ]
    return [group, *members]


@pytest.mark.parametrize(
    ("extra", "gang_kwargs"),
    [
        pytest.param([], {}, id="default-queue"),
        pytest.param([], {"min_resources": {"cpu": "4"}}, id="min-resources-counted-once"),
        pytest.param([queue("q", capability={"cpu": "4"})], {"queue_name": "q"}, id="queue-capability-4"),
        pytest.param([], {"bound": 3}, id="one-member-left"),
    ],
)
def test_a_half_bound_gang_is_completed_when_room_exists(extra, gang_kwargs):
    objs = [node("n1", cpu="4"), *extra, *_half_bound(**gang_kwargs)]
    result = simulate_objects(objs, sessions=10)
    data = to_json(result)
    assert placed(data) == {f"default/g-{i}": "n1" for i in range(4)}
    assert data["podgroups"]["default/g"]["phase"] == "Running"
    first = result.history[0]
    assert first.podgroups["default/g"].phase == "Running"  # completed in the first session


@pytest.mark.parametrize(
    "other_phase",
    [
        pytest.param(None, id="other-not-yet-admitted"),  # admission reserves the gang's unmet minimum
        pytest.param("Inqueue", id="other-admitted-too"),  # job order: the gang holding members first
    ],
)
def test_a_half_bound_gang_is_completed_before_an_older_job_that_wants_the_same_room(other_phase):
    # "other" is older and holds less (first in job order otherwise) and would fit the 2 idle cpu.
    other = [
        podgroup("other", min_member=2, phase=other_phase),
        *[pod(f"other-{i}", group="other", created="2025-01-01T00:00:00Z") for i in range(2)],
    ]
    objs = [node("n1", cpu="4"), *other, *_half_bound()]
    data = to_json(simulate_objects(objs, sessions=10))
    assert placed(data) == {f"default/g-{i}": "n1" for i in range(4)}
    assert data["podgroups"]["default/other"]["phase"] == (other_phase or "Pending")


def test_a_half_bound_gang_without_room_keeps_its_members_and_is_believed_admitted():
    # A running job holds the other 2 cpu: the gang waits (Inqueue), nothing is unbound or bound twice.
    objs = [
        node("n1", cpu="4"),
        podgroup("busy", min_member=2, phase="Running"),
        *[pod(f"busy-{i}", group="busy", node="n1") for i in range(2)],
        *_half_bound(),
    ]
    data = to_json(simulate_objects(objs, sessions=10))
    assert placed(data, "default/g-") == {"default/g-0": "n1", "default/g-1": "n1"}
    assert data["podgroups"]["default/g"]["phase"] == "Inqueue"
    [event] = [e for e in data["events"] if e["object"] == "PodGroup default/g"]
    assert "queue default would exceed realCapability cpu 4 (allocated 4 + request 1)" in event["message"]


@pytest.mark.parametrize(
    ("bound", "phase", "capability", "expect_gang"),
    [
        # qb now claims half the cluster, so qa deserves 2 of the 4 its gang needs: the gang is
        # completed anyway (what it holds is idle until then), and qb's job waits for the room.
        pytest.param(2, "Pending", None, 4, id="half-bound-completed-past-deserved"),
        # the same for a gang admitted earlier that holds nothing yet: its minimum was reserved at
        # admission (so qb's job is held back by it) and must not be stranded by the shrunken share.
        pytest.param(0, "Inqueue", None, 4, id="admitted-gang-completed-past-deserved"),
        # realCapability is a hard limit: the gang waits, holding what it has, and says why.
        pytest.param(2, "Pending", {"cpu": "3"}, 2, id="half-bound-never-past-capability"),
        pytest.param(0, "Inqueue", {"cpu": "3"}, 0, id="admitted-gang-never-past-capability"),
    ],
)
def test_an_admitted_gang_is_completed_past_its_queues_deserved_share_but_not_its_capability(
    bound, phase, capability, expect_gang
):
    objs = [node("n1", cpu="4"), queue("qa", capability=capability), queue("qb")]
    objs += [*_half_bound(queue_name="qa", bound=bound, phase=phase), podgroup("other", queue="qb")]
    objs += [pod(f"other-{i}", group="other", created="2025-01-01T00:00:00Z") for i in range(2)]
    data = to_json(simulate_objects(objs, sessions=10))
    assert len(placed(data, "default/g-")) == expect_gang
    assert data["podgroups"]["default/g"]["phase"] == ("Running" if expect_gang == 4 else "Inqueue")
    if expect_gang < 4:
        [event] = [e for e in data["events"] if e["object"] == "PodGroup default/g"]
        # (as past its queue's realCapability, or as a gang that can never run: capability cpu 3)
        assert "capability cpu 3" in event["message"]
