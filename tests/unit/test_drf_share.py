"""The dominant share (drf's job and namespace order, rescheduling's bigObjectFirst): the largest
fraction of the cluster an amount takes over the dimensions that count."""

from __future__ import annotations

import numpy as np
import pytest

from volsched.model.cluster import dominant_share
from volsched.plugins.drf import share_rows

CASES = [
    pytest.param([0.0, 0.0, 0.0], [16.0, 64.0, 110.0], [True, True, False], 0.0, id="nothing-held"),
    pytest.param([2.0, 8.0, 3.0], [16.0, 64.0, 110.0], [True, True, False], 0.125, id="cpu-and-memory-tie"),
    pytest.param([1.0, 48.0, 3.0], [16.0, 64.0, 110.0], [True, True, False], 0.75, id="memory-dominates"),
    pytest.param([1.0, 1.0, 100.0], [16.0, 64.0, 110.0], [True, True, False], 1 / 16, id="masked-dimension-ignored"),
    pytest.param([5.0, 1.0, 0.0], [0.0, 64.0, 110.0], [True, True, False], 1 / 64, id="empty-dimension-ignored"),
    pytest.param([3.0, 0.0, 0.0], [2.0, 64.0, 110.0], [True, True, True], 1.5, id="over-the-total"),
    pytest.param([1.0], [0.0], [False], 0.0, id="no-dimension-counts"),
]  # fmt: skip


@pytest.mark.parametrize(("amount", "total", "mask", "share"), CASES)
def test_the_dominant_share_is_the_largest_fraction_over_the_dimensions_that_count(
    amount: list[float], total: list[float], mask: list[bool], share: float
) -> None:
    assert dominant_share(np.array(total), np.array(mask))(np.array(amount)) == share


@pytest.mark.parametrize(("amount", "total", "mask", "share"), CASES)
def test_shares_of_many_amounts_at_once_are_each_ones_dominant_share(
    amount: list[float], total: list[float], mask: list[bool], share: float
) -> None:
    """drf's open sizes every namespace's next pod at once: the same value, to the bit, as one at a time."""
    rng = np.random.default_rng(len(amount))
    amounts = [np.array(amount), *(rng.random(len(amount)) * 10 for _ in range(20)), np.zeros(len(amount))]
    one = dominant_share(np.array(total), np.array(mask))
    assert share_rows(np.array(total), np.array(mask), amounts) == [one(a) for a in amounts]
    assert share_rows(np.array(total), np.array(mask), amounts)[0] == share


def test_a_gang_whose_placements_were_undone_sorts_as_one_that_never_held_anything() -> None:
    # drf's job key answers 0 for a job with no task allocated, bound or running without summing it:
    # what three placements undone leave in its holdings (float dust) must sort the same way.
    from tests.builders import node, pod, podgroup, queue
    from volsched.cache.state import ClusterState
    from volsched.framework.registry import load_config
    from volsched.framework.runner import open_session
    from volsched.framework.statement import Statement
    from volsched.plugins.drf import share_key

    state = ClusterState()
    objs = [node("n1", cpu="8", memory="16Gi"), queue("q"), podgroup("g", ns="ns", queue="q", min_member=3)]
    objs += [
        pod(f"g-{i}", ns="ns", cpu=c, memory="1Gi", group="g") for i, c in enumerate(["100m", "200m", "300m"])
    ]
    for obj in objs:
        state.apply(obj)
    session = open_session(state.snapshot(now=1.0), load_config())
    job = session.jobs["ns/g"]
    statement = Statement(session)
    for task in job.tasks.values():
        statement.allocate(task, 0)
    statement.discard()
    assert job.ready == 0
    held = session.state["drf.job_share"](job)
    assert share_key(held) == 0.0
    assert session.job_key()(job)[2] == 0.0 == share_key(held)
