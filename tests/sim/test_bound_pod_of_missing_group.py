"""A pod already on a node whose PodGroup does not exist (deleted while it ran, or never made) is in no
job, but it still takes its room on the node: volsched placed a second pod where the first already held
3 of 4 cpu, putting the node past its allocatable. So with a group annotation no PodGroup can answer
(a name with a slash or capitals) and with the name of a pod standing alone."""

from __future__ import annotations

import pytest

from tests.builders import node, pod, run


@pytest.mark.parametrize("group", ["gone", "a/b", "Upper Case", "alone"])
@pytest.mark.parametrize("phase", ["Running", "Pending"])
def test_a_bound_pod_whose_group_is_gone_still_holds_its_node(phase: str, group: str) -> None:
    data = run(
        [
            node("n1", cpu="4"),
            pod("alone", cpu="0"),
            pod("running-0", cpu="3", group=group, node="n1", phase=phase),
            pod("new-0", cpu="3"),
        ]
    )
    assert data["pods"]["default/running-0"]["node"] == "n1"
    assert data["pods"]["default/new-0"]["node"] is None
