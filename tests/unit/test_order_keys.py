"""Orders given as sort keys (priority, gang, drf) put jobs, tasks and namespaces where the comparator
chains they replace put them: tier by tier, the first plugin that tells two apart wins, disabled
switches are skipped, ties go by creation time, then name. The reference here is the comparators as
they were, registered under the same plugin names (the framework then orders by the comparator chain);
allocate run both ways decides the same binds in the same order, drf namespace shares changing as it
goes."""

from __future__ import annotations

from collections.abc import Callable
from functools import cmp_to_key
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, quota
from volsched.actions.allocate import Allocate
from volsched.actions.enqueue import Enqueue
from volsched.actions.util import TaskQueue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.model.cluster import Job
from volsched.model.vocabulary import Task

_TOL = 1e-9
T = ["2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"]


def _shares(left: float, right: float) -> int:
    if abs(left - right) <= _TOL:
        return 0
    return -1 if left < right else 1


def _desc(left: int, right: int) -> int:
    return -1 if left > right else (1 if left < right else 0)


def _gang(left: Job, right: Job) -> int:
    lr, rr = left.ready_count >= left.min_member, right.ready_count >= right.min_member
    if lr != rr:
        return 1 if lr else -1
    if lr:
        return 0
    lh, rh = left.ready_count > 0, right.ready_count > 0
    if lh == rh:
        return 0
    return -1 if lh else 1


def with_comparators(session: Session) -> Session:
    """The session ordering by the comparators the keys replaced (same plugin names: same tiers and
    switches)."""
    names = {opt.name for opt in session.config.plugin_options()}
    if "priority" in names:
        session.add_job_order_fn("priority", lambda a, b: _desc(a.priority, b.priority))
        session.add_task_order_fn("priority", lambda a, b: _desc(a.priority, b.priority))
    if "gang" in names:
        session.add_job_order_fn("gang", _gang)
    if "drf" in names:
        job_share: Callable[[Job], float] = session.state["drf.job_share"]
        after: Callable[[str], float] = session.state["drf.namespace_share_after_next"]
        weight = session.snapshot.namespace_weight

        def drf_ns(left: str, right: str) -> int:
            c = _shares(after(left), after(right))
            return c or _shares(-weight(left), -weight(right))

        session.add_job_order_fn("drf", lambda a, b: _shares(job_share(a), job_share(b)))
        session.add_namespace_order_fn("drf", drf_ns)
    return session


def conf(tiers: list[list[str]], *, off: dict[str, str] | None = None) -> str:
    lines = ['actions: "enqueue, allocate"', "tiers:"]
    for tier in tiers:
        lines.append("- plugins:")
        for name in tier:
            lines.append(f"  - name: {name}")
            if off and name in off:
                lines.append(f"    {off[name]}: false")
    return "\n".join(lines) + "\n"


DEFAULT = [
    ["priority", "gang", "conformance"],
    ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
]


def world() -> list[dict[str, Any]]:
    """Jobs that the orders tell apart at every level: priorities, gangs half-bound and ready, drf
    shares (running pods), equal everything but creation, equal everything but name; namespaces with
    weights and with running pods."""
    objs: list[dict[str, Any]] = [node("n1", cpu="40"), quota("heavy", 3), quota("light", 1)]
    objs += [priority_class("high", 100), priority_class("low", 1)]
    for ns in ("heavy", "light", "plain"):
        objs.append(podgroup("ready", ns=ns, min_member=1))
        objs += [pod(f"ready-r{i}", ns=ns, group="ready", node="n1") for i in range(2)]
        objs += [pod(f"ready-p{i}", ns=ns, group="ready") for i in range(2)]
        objs.append(podgroup("half", ns=ns, min_member=3))
        objs += [pod("half-r0", ns=ns, group="half", node="n1")]
        objs += [pod(f"half-p{i}", ns=ns, group="half") for i in range(3)]
        objs.append(podgroup("gang", ns=ns, min_member=2))
        objs += [pod(f"gang-p{i}", ns=ns, group="gang", cpu="2") for i in range(2)]
        objs.append(podgroup("vip", ns=ns, min_member=1, priority_class="high"))
        objs += [pod("vip-p0", ns=ns, group="vip", priority_class="high")]
        objs.append(podgroup("meh", ns=ns, min_member=1, priority_class="low"))
        objs += [pod("meh-p0", ns=ns, group="meh", priority_class="low")]
        for i, created in enumerate([T[2], T[0], T[1], T[1]]):
            objs += [pod(f"solo-{'badc'[i]}", ns=ns, created=created)]
    return objs


def session_of(text: str, *, comparators: bool) -> Session:
    state = ClusterState()
    for obj in world():
        state.apply(obj)
    session = open_session(state.snapshot(now=1.0), load_config(text=text))
    return with_comparators(session) if comparators else session


CONFIGS = [
    pytest.param(conf(DEFAULT), id="default-tiers"),
    pytest.param(conf([["drf"], ["priority", "gang"]]), id="drf-first"),
    pytest.param(conf([["gang"], ["drf", "priority"]]), id="gang-then-drf-before-priority"),
    pytest.param(conf(DEFAULT, off={"priority": "enableJobOrder"}), id="priority-job-order-off"),
    pytest.param(conf(DEFAULT, off={"drf": "enableNamespaceOrder"}), id="drf-namespace-order-off"),
    pytest.param(conf([["priority", "gang", "drf"]], off={"gang": "enableJobOrder"}), id="one-tier-gang-off"),
    pytest.param(conf([["predicates", "proportion"]]), id="no-order-plugin"),
]


def job_order(session: Session) -> list[str]:
    return [j.key for j in sorted(session.jobs.values(), key=session.job_key())]


@pytest.mark.parametrize("text", CONFIGS)
def test_jobs_sorted_by_keys_come_in_the_comparator_chains_order(text: str) -> None:
    by_keys = session_of(text, comparators=False)
    by_comparators = session_of(text, comparators=True)
    if "priority" in text:  # really the chain
        assert isinstance(by_comparators.job_key(), type(cmp_to_key(lambda a, b: 0)))
    assert job_order(by_keys) == job_order(by_comparators)
    old = cmp_to_key(lambda a, b: -1 if by_comparators.job_less(a, b) else int(by_comparators.job_less(b, a)))
    assert job_order(by_keys) == [j.key for j in sorted(by_comparators.jobs.values(), key=old)]


@pytest.mark.parametrize("text", CONFIGS)
def test_namespaces_and_tasks_by_keys_come_in_the_comparator_chains_order(text: str) -> None:
    by_keys = session_of(text, comparators=False)
    by_comparators = session_of(text, comparators=True)
    namespaces = ["plain", "light", "heavy"]
    assert sorted(namespaces, key=by_keys.namespace_key) == sorted(
        namespaces, key=by_comparators.namespace_key
    )
    tasks: list[Task] = [t for j in by_keys.jobs.values() for t in j.pending_tasks()]
    twins: list[Task] = [t for j in by_comparators.jobs.values() for t in j.pending_tasks()]
    q1, q2 = TaskQueue(by_keys, tasks), TaskQueue(by_comparators, twins)
    assert [q1.pop().key for _ in tasks] == [q2.pop().key for _ in twins]


@pytest.mark.parametrize("text", CONFIGS)
def test_allocate_by_keys_decides_the_binds_the_comparators_decided(text: str) -> None:
    # drf's namespace shares grow with every pod placed: each turn re-ranks the namespaces.
    results = []
    for comparators in (False, True):
        session = session_of(text, comparators=comparators)
        Enqueue().execute(session)
        Allocate().execute(session)
        results.append([(b.pod, b.node) for b in session.result.binds])
    assert results[0] == results[1]
    assert len(results[0]) > 10


def test_a_namespace_key_is_computed_again_once_its_tasks_take_resources() -> None:
    session = session_of(conf(DEFAULT), comparators=False)
    before = session.namespace_key("light")
    assert session.namespace_key("light") is before  # kept while nothing changed
    job = session.jobs["light/solo-a"]
    [task] = job.pending_tasks()
    session.do_allocate(task, 0)
    after = session.namespace_key("light")
    assert after > before  # the share went up: light goes later now
    session.undo_allocate(task, 0)
    assert session.namespace_key("light") == before


@pytest.mark.parametrize("text", CONFIGS)
@pytest.mark.parametrize("comparators", [False, True], ids=["keys", "comparators"])
def test_the_keys_of_a_list_of_jobs_are_each_jobs_key(text: str, comparators: bool) -> None:
    """JobQueue sorts by ``job_keys`` (each plugin's key over the whole list) and pushes by ``job_key``:
    both must make the very same keys, or a pushed job would land elsewhere than a sorted one."""
    session = session_of(text, comparators=comparators)
    jobs = list(session.jobs.values())
    one = session.job_key()
    many = session.job_keys()(jobs)
    if comparators and "priority" in text:  # the chain wrapped as a key: compare the orders it gives
        assert [j.key for _, j in sorted(zip(many, jobs, strict=True), key=lambda p: p[0])] == job_order(
            session
        )
    else:
        assert many == [one(j) for j in jobs]
