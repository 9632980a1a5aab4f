"""allocate: a gang's turn goes on past a task that fits nowhere while minMember can still be reached."""

from __future__ import annotations

import pytest

from tests.builders import config, node, placed, pod, podgroup, run

NOWHERE = {"zone": "mars"}  # no node carries this label


@pytest.mark.parametrize(
    ("min_member", "unplaceable", "expect_placed", "expect_phase"),
    [
        pytest.param(2, ["g-0"], {"g-1", "g-2"}, "Running", id="first-task-fits-nowhere-others-reach-min"),
        pytest.param(2, ["g-1"], {"g-0", "g-2"}, "Running", id="middle-task-fits-nowhere"),
        pytest.param(1, ["g-0", "g-1"], {"g-2"}, "Running", id="only-the-last-task-fits"),
        pytest.param(3, ["g-0"], set(), "Inqueue", id="min-member-unreachable-places-nothing"),
        pytest.param(2, ["g-0", "g-1"], set(), "Inqueue", id="two-unplaceable-min-unreachable"),
    ],
)
def test_allocate_continues_past_an_unplaceable_task_while_min_member_is_reachable(
    min_member, unplaceable, expect_placed, expect_phase
):
    objs = [node("n1", cpu="8"), podgroup("g", min_member=min_member)]
    for i in range(3):
        name = f"g-{i}"
        objs.append(
            pod(
                name,
                group="g",
                created=f"2026-01-01T00:00:0{i}Z",  # task order: g-0, g-1, g-2
                node_selector=NOWHERE if name in unplaceable else None,
            )
        )
    data = run(objs, sessions=5)
    assert {k.split("/", 1)[1] for k in placed(data)} == expect_placed
    assert data["podgroups"]["default/g"]["phase"] == expect_phase
    why = {e["object"]: e["message"] for e in data["events"] if e["reason"] == "FailedScheduling"}
    for name in unplaceable:  # the pod that fits nowhere says why, in numbers
        assert "0/1 nodes fit" in why[f"Pod default/{name}"]


def test_every_task_left_over_says_why_when_identical_tasks_run_out_of_room():
    objs = [
        node("n1", cpu="8"),
        podgroup("g", min_member=1),
        *[pod(f"g-{i}", group="g", cpu="3") for i in range(4)],
    ]
    conf = config("actions: enqueue, allocate\ntiers:\n- plugins: [{name: gang}, {name: predicates}]\n")
    data = run(objs, conf=conf, sessions=3)
    assert len(placed(data)) == 2
    why = {e["object"]: e["message"] for e in data["events"] if e["reason"] == "FailedScheduling"}
    assert len(why) == 2
    assert all("insufficient cpu (needs 3, most idle 2)" in m for m in why.values())
