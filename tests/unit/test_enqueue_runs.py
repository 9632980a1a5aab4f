"""Enqueue admits runs of jobs at once where the plugins answer for runs (``add_jobs_enqueueable_fn``,
``add_jobs_enqueued_fn``), and decides exactly as job by job: the same admissions in the same order,
the same refusals with the same words, the same admitted sums to the last bit. Plugins that give no
run answer are asked job by job."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import pytest

from tests.builders import config, node, pod, podgroup, queue
from volsched.actions.enqueue import Enqueue
from volsched.cache.state import ClusterState
from volsched.framework.points import PointTables, Vote
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.model.cluster import Job, running_sums

Obj = dict[str, Any]


def _cpus(
    prefix: str, sizes: list[str], *, ns: Callable[[int], str], q: Callable[[int], str | None]
) -> list[Obj]:
    return [pod(f"{prefix}{i:04d}", ns=ns(i), cpu=cpu, queue=q(i)) for i, cpu in enumerate(sizes)]


def _one_queue(sizes: list[str], namespaces: int = 3) -> list[Obj]:
    return _cpus("p", sizes, ns=lambda i: f"ns{i % namespaces}", q=lambda i: None)


SCENARIOS: dict[str, list[Obj]] = {
    "all-fit": [node("n1", cpu="1000"), *_one_queue(["0.1"] * 300)],
    "cluster-room-runs-out-then-small-ones-fit": [
        node("n1", cpu="40"),
        *_one_queue(["0.7", "0.1", "0.3", "1.1"] * 60),
    ],
    "queue-capability-runs-out": [
        node("n1", cpu="1000"),
        queue("capped", capability={"cpu": "7.3"}),
        *_cpus("c", ["0.3", "0.1"] * 40, ns=lambda i: f"ns{i % 2}", q=lambda i: "capped"),
    ],
    "guaranteed-queue-past-the-room": [
        node("n1", cpu="5"),
        queue("held", guarantee={"cpu": "4"}),
        *_cpus("h", ["0.3"] * 30, ns=lambda i: "ns0", q=lambda i: "held"),
        *_one_queue(["0.2"] * 40),
    ],
    "several-queues-take-turns": [
        node("n1", cpu="30"),
        queue("a", weight=1),
        queue("b", weight=3),
        *_cpus("x", ["0.3", "0.6", "0.1"] * 40, ns=lambda i: f"ns{i % 3}", q=lambda i: "ab"[i % 2]),
    ],
    "invalid-gangs-among-them": [
        node("n1", cpu="20"),
        *[podgroup(f"g{i}", ns="ns0", min_member=3) for i in range(10)],
        *[pod(f"g{i}-0", ns="ns0", cpu="0.2", group=f"g{i}") for i in range(10)],
        *_one_queue(["0.3"] * 100, namespaces=1),
    ],
    "unknown-queue": [node("n1", cpu="20"), *_cpus("u", ["1"] * 5, ns=lambda i: "ns0", q=lambda i: "nope")],
    "overcommit-alone-room-runs-out": [node("n1", cpu="30"), *_one_queue(["0.7", "0.1", "0.3", "1.1"] * 40)],
    "overcommit-alone-guarantee-past-the-room": [
        node("n1", cpu="5"),
        queue("held", guarantee={"cpu": "4"}),
        *_cpus("h", ["0.3", "0.1"] * 20, ns=lambda i: "ns0", q=lambda i: "held"),
        *_one_queue(["0.2"] * 40),
    ],
}

#: Overcommit deciding alone (no proportion: its queue bounds would refuse first).
OVERCOMMIT_ALONE = """\
actions: enqueue
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
"""


def _enqueued(name: str, *, runs: bool) -> tuple[Session, list[str], list[tuple[str, str]]]:
    state = ClusterState()
    for obj in SCENARIOS[name]:
        state.apply(obj)
    conf = config(OVERCOMMIT_ALONE) if name.startswith("overcommit-alone") else load_config()
    session = open_session(state.snapshot(now=1.0), conf, may_evict=False)
    if not runs:  # the plugins' run answers taken away: every job is asked alone
        session._fns.pop("jobs_enqueueable", None)
        session._fns.pop("jobs_enqueued", None)
    Enqueue().execute(session)
    admits = [a.job for a in session.result.admits]
    refusals = [
        (key, " | ".join(s.render() for s in statuses)) for key, statuses in session.job_errors.items()
    ]
    return session, admits, refusals


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_runs_admit_and_refuse_exactly_as_job_by_job(name: str) -> None:
    alone, admits_alone, refusals_alone = _enqueued(name, runs=False)
    together, admits, refusals = _enqueued(name, runs=True)
    assert admits == admits_alone
    assert refusals == refusals_alone
    assert admits or refusals
    summed = {n: a.admitted for n, a in together.state.get("proportion.attrs", {}).items()}
    assert summed == {n: a.admitted for n, a in alone.state.get("proportion.attrs", {}).items()}  # to the bit


def test_the_scenarios_exercise_runs_and_refusals() -> None:
    """The table above holds what it is meant to: a room that runs out midway, and admissions after."""
    _, admits, refusals = _enqueued("cluster-room-runs-out-then-small-ones-fit", runs=True)
    assert 0 < len(admits) < 240
    first_refused = min(int(k.split("/p")[1]) for k, _ in refusals)
    assert any(int(k.split("/p")[1]) > first_refused for k in admits)
    _, admits, refusals = _enqueued("queue-capability-runs-out", runs=True)
    assert any("realCapability" in r or "deserved" in r for _, r in refusals)
    _, admits, refusals = _enqueued("overcommit-alone-room-runs-out", runs=True)
    assert admits and any("overcommit: minResources cpu" in r for _, r in refusals)
    _, admits, refusals = _enqueued("overcommit-alone-guarantee-past-the-room", runs=True)
    assert any(k.startswith("ns0/h") for k in admits) and refusals


def test_running_sums_are_the_loops_sums_to_the_last_bit() -> None:
    rng = random.Random(7)
    rows = np.array([[rng.choice([0.1, 0.2, 0.3, 1e-9, 7.7, 1e12]) for _ in range(4)] for _ in range(500)])
    start = [0.7, 0.0, 1e-3, 3.3]
    total, want = list(start), [list(start)]
    for row in rows.tolist():
        total = [t + r for t, r in zip(total, row, strict=True)]
        want.append(total)
    assert running_sums(start, rows).tolist() == want


def _tables(tiers: list[list[str]]) -> PointTables:
    text = "actions: enqueue\ntiers:\n" + "".join(
        "- plugins:\n" + "".join(f"  - name: {p}\n" for p in tier) for tier in tiers
    )
    return PointTables(config(text))


def _permits(upto: int) -> Callable[[Job], tuple[Vote, str]]:
    def vote(job: Job) -> tuple[Vote, str]:
        return (Vote.PERMIT, "") if cast(int, job) < upto else (Vote.REJECT, "no")

    return vote


@pytest.mark.parametrize(
    ("tiers", "runs", "want"),
    [
        pytest.param([["gang", "priority"]], {}, 10, id="nobody-votes-all-let-in"),
        pytest.param(
            [["overcommit", "proportion"]], {"overcommit": 7, "proportion": 4}, 4, id="least-of-the-tier"
        ),
        pytest.param([["overcommit", "proportion"]], {"overcommit": 7}, 0, id="one-without-a-run-answer"),
        pytest.param(
            [["overcommit"], ["proportion"]], {"overcommit": 6}, 6, id="the-first-voting-tier-settles"
        ),
        pytest.param([["overcommit"]], {"overcommit": 0}, 0, id="none-let-in"),
    ],
)
def test_a_run_is_let_in_as_far_as_every_plugin_of_the_deciding_tier_permits(
    tiers: list[list[str]], runs: dict[str, int], want: int
) -> None:
    tables = _tables(tiers)
    for name in ("overcommit", "proportion"):
        if any(name in tier for tier in tiers):
            tables.add_job_enqueueable_fn(name, _permits(runs.get(name, 0)))
    for name, upto in runs.items():
        tables.add_jobs_enqueueable_fn(name, lambda jobs, upto=upto: min(upto, len(jobs)))
    assert tables.jobs_enqueueable(cast(Sequence[Job], list(range(10)))) == want


def test_a_run_is_enqueued_plugin_by_plugin_in_job_order_and_job_by_job_without_a_run_answer() -> None:
    tables = _tables([["overcommit", "proportion"]])
    seen: list[tuple[str, Any]] = []
    tables.add_job_enqueued_fn("overcommit", lambda job: seen.append(("overcommit", job)))
    tables.add_job_enqueued_fn("proportion", lambda job: seen.append(("proportion", job)))
    tables.add_jobs_enqueued_fn("proportion", lambda jobs: seen.append(("proportion-run", list(jobs))))
    tables.jobs_enqueued(cast(Sequence[Job], [1, 2, 3]))
    assert seen == [("overcommit", 1), ("overcommit", 2), ("overcommit", 3), ("proportion-run", [1, 2, 3])]


@pytest.mark.parametrize(
    ("refusals", "want"),
    [
        pytest.param({}, [None] * 6, id="all-valid"),
        pytest.param({"gang": {1, 4}}, [None, "gang", None, None, "gang", None], id="one-plugin-refuses"),
        pytest.param(
            {"gang": {1}, "proportion": {1, 2, 5}},
            [None, "gang", "proportion", None, None, "proportion"],
            id="the-first-refusal-in-tier-order-wins",
        ),
    ],
)
def test_the_validity_of_a_run_is_each_jobs_validity_and_is_kept(
    refusals: dict[str, set[int]], want: list[str | None]
) -> None:
    class _Job:
        def __init__(self, n: int) -> None:
            self.n, self.key = n, f"ns/j{n}"

    tables = _tables([["gang"], ["proportion"]])
    asked: list[tuple[str, int]] = []
    for name in ("gang", "proportion"):

        def valid(job: Any, name: str = name) -> str | None:
            asked.append((name, job.n))
            return f"{name} says no" if job.n in refusals.get(name, set()) else None

        tables.add_job_valid_fn(name, valid)
    jobs = cast(Sequence[Job], [_Job(n) for n in range(6)])
    assert tables.job_valid(jobs[0]) is None  # one asked alone first: kept, not asked again
    got = tables.jobs_valid(jobs)
    assert [s.plugin if s else None for s in got] == want
    assert [tables.job_valid(job) for job in jobs] == got  # kept: the same answers, nobody asked again
    assert sorted(asked) == sorted(
        [("gang", n) for n in range(6)]
        + [("proportion", n) for n in range(6) if n not in refusals.get("gang", set())]
    )
    assert [s.render() for s in got if s] == [f"{p} says no" for p in want if p]


def test_the_plugins_voting_on_a_run_stack_its_rows_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """proportion and overcommit both answer for runs: a run's rows are built once for both votes and
    both sums (one RunRows per session), not once per plugin."""
    import volsched.model.cluster as cluster

    stacked: list[int] = []
    real = cluster.min_request_rows

    def counting(jobs: Sequence[Job]) -> Any:
        stacked.append(len(jobs))
        return real(jobs)

    monkeypatch.setattr(cluster, "min_request_rows", counting)
    asked: list[int] = []
    real_ask = Session.jobs_enqueueable

    def asking(self: Session, jobs: Sequence[Job]) -> int:
        asked.append(len(jobs))
        return real_ask(self, jobs)

    monkeypatch.setattr(Session, "jobs_enqueueable", asking)
    session, admits, _ = _enqueued("all-fit", runs=True)
    assert len(admits) == 300 and {"proportion", "overcommit"} <= set(session._fns["jobs_enqueueable"])
    assert stacked == asked and sum(stacked) == 300
