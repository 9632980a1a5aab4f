"""Evicting a failed pod (removeFailedPods) deletes it and changes nothing else in the session: it held
no capacity on its node and no share of its job or queue, so nothing is released or given back."""

from __future__ import annotations

import numpy as np

from tests.builders import node, pod
from volsched.cache.state import ClusterState
from volsched.framework.decisions import EvictionReason
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.statement import Statement
from volsched.model.vocabulary import TaskStatus


def test_evicting_a_failed_pod_releases_nothing_and_discard_restores_it():
    state = ClusterState()
    state.apply(node("n1", cpu="4"))
    state.apply(pod("r", cpu="2", node="n1", owner="ReplicaSet/r"))
    failed = pod("f", cpu="2", node="n1", owner="ReplicaSet/f")
    failed["status"] = {"phase": "Failed", "reason": "Evicted"}
    state.apply(failed)
    session = open_session(state.snapshot(now=1.0), load_config(), may_evict=True)
    nodes = session.nodes
    before = (nodes.idle.copy(), nodes.incoming.copy(), nodes.incoming_tasks)
    task = session.jobs["default/replicaset-f"].tasks["default/f"]
    allocated = session.jobs["default/replicaset-f"].allocated.copy()
    statement = Statement(session)
    statement.evict(task, reason=EvictionReason(action="shuffle", detail="failed"))
    assert task.status is TaskStatus.RELEASING
    after = (nodes.idle, nodes.incoming, nodes.incoming_tasks)
    for b, a in zip(before[:2], after[:2], strict=True):
        np.testing.assert_array_equal(b, a)
    assert before[2] == after[2]
    np.testing.assert_array_equal(session.jobs["default/replicaset-f"].allocated, allocated)
    statement.discard()
    assert task.status is TaskStatus.FAILED
    np.testing.assert_array_equal(nodes.incoming, before[1])
