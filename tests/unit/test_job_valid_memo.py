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


def test_the_validity_of_a_list_of_jobs_is_each_jobs_own_with_or_without_the_plugins_list_answers() -> None:
    """``jobs_valid`` asks plugins over a list (gang and proportion answer for lists): the same refusal
    for each job, from the same plugin, as ``job_valid`` asked job by job with no list answers."""
    state = ClusterState()
    objs = [node("n1", cpu="8"), queue("parent"), queue("leaf", parent="parent")]
    objs += [podgroup("short", ns="ns", min_member=3), pod("short-0", ns="ns", group="short")]
    objs += [podgroup("failed", ns="ns", min_member=2), pod("failed-0", ns="ns", group="failed")]
    objs += [pod("failed-1", ns="ns", group="failed", phase="Failed")]
    objs += [
        podgroup("whole", ns="ns", min_member=2),
        *[pod(f"whole-{i}", ns="ns", group="whole") for i in range(2)],
    ]
    objs += [podgroup("half", ns="ns", min_member=2), pod("half-0", ns="ns", group="half", node="n1")]
    objs += [pod("half-1", ns="ns", group="half")]
    objs += [podgroup("inner", ns="ns", queue="parent", min_member=1), pod("inner-0", ns="ns", group="inner")]
    objs += [pod(f"lone-{i}", ns="ns", queue=q) for i, q in enumerate(["leaf", "parent", None])]
    for obj in objs:
        state.apply(obj)
    snap = state.snapshot(now=1.0)
    by_list = open_session(snap, load_config(), may_evict=False)
    jobs = list(by_list.jobs.values())
    answers = by_list.jobs_valid(jobs)
    one_by_one = open_session(snap, load_config(), may_evict=False)
    assert answers == [one_by_one.job_valid(j) for j in jobs]
    # a list asked of a fresh session without the list answers (each plugin's job_valid mapped over
    # the list): asked of ``one_by_one`` it would only read back the answers kept just above
    no_lists = open_session(snap, load_config(), may_evict=False)
    no_lists._fns.pop("jobs_valid", None)
    assert answers == no_lists.jobs_valid(jobs)
    refused = {j.key: a.plugin for j, a in zip(jobs, answers, strict=True) if a is not None}
    assert refused == {
        "ns/short": "gang",
        "ns/failed": "gang",
        "ns/inner": "proportion",
        "ns/lone-1": "proportion",
    }
