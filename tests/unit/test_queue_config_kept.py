"""The queues' configuration (effective guarantees) is kept from one session to the next while the
queues, the resource space and the cluster's total are the same, and made anew when one changes: then
the same as a cluster that had the change from the start makes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import Obj, node, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.session import Session
from volsched.plugins.shared.queue_config import QueueConfig, queue_config

START = [node("n1", cpu="64"), queue("a", guarantee={"cpu": "40"}), queue("b", guarantee={"cpu": "40"})]


def _state(objects: list[Obj]) -> ClusterState:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return state


def _config(state: ClusterState, now: float) -> QueueConfig:
    return queue_config(Session(state.snapshot(now=now), load_config(None), []))


def test_the_next_session_uses_the_same_configuration_when_nothing_changed() -> None:
    state = _state(START)
    first = _config(state, 1.0)
    assert _config(state, 2.0) is first


@pytest.mark.parametrize(
    "change",
    [
        queue("a", weight=3, guarantee={"cpu": "40"}),  # a queue's weight: the cut guarantees move
        queue("b", guarantee={"cpu": "10"}),  # another queue's guarantee: a's is met in full
        node("n2", cpu="64"),  # the cluster's total: nothing cut
    ],
)
def test_a_change_of_queues_or_cluster_makes_it_anew(change: Obj) -> None:
    state = _state(START)
    first = _config(state, 1.0)
    state.apply(change)
    second = _config(state, 2.0)
    fresh = _config(_state([*START, change]), 2.0)
    assert second is not first
    assert not np.array_equal(second.effective_guarantee, first.effective_guarantee)
    np.testing.assert_array_equal(second.effective_guarantee, fresh.effective_guarantee)
    np.testing.assert_array_equal(second.weight, fresh.weight)
    np.testing.assert_array_equal(second.total, fresh.total)


def test_its_matrices_are_read_only() -> None:
    config = _config(_state(START), 1.0)
    for matrix in (config.effective_guarantee, config.real_capability, config.guarantee, config.total):
        with pytest.raises(ValueError, match="read-only"):
            matrix += 1
