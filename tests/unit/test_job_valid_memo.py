"""A job's validity is asked of the plugins once and kept (enqueue and allocate both ask it of every
pending job), until a task of that job changes status: a gang that loses a member to an eviction is no
longer valid, and one whose member is given back is valid again, in the same session."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import EvictionReason
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.statement import Statement


def test_a_gang_that_loses_a_member_is_invalid_at_once_and_valid_again_when_it_is_given_back() -> None:
    state = ClusterState()
    objs = [node("n1", cpu="8"), queue("q"), podgroup("g", ns="ns", queue="q", min_member=2, phase="Running")]
    objs += [pod(f"g-{i}", ns="ns", cpu="1", group="g", node="n1", phase="Running") for i in range(2)]
    for obj in objs:
        state.apply(obj)
    session = open_session(state.snapshot(now=1.0), load_config(), may_evict=True)
    job = session.jobs["ns/g"]
    assert session.job_valid(job) is None
    assert session.job_valid(job) is None  # asked again: the same answer, kept
    statement = Statement(session)
    statement.evict(job.tasks["ns/g-0"], reason=EvictionReason(action="preempt"))
    refused = session.job_valid(job)
    assert refused is not None
    assert refused.plugin == "gang"
    assert "1 pod(s) exist, minMember is 2" in refused.render()
    statement.discard()
    assert session.job_valid(job) is None
