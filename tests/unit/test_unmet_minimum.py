"""What admitted jobs may still claim toward their minimum, summed per queue (``unmet_minimum_rows``,
what proportion and overcommit add up every session): the very sums a loop over ``unmet_minimum`` makes,
to the last bit, whatever the jobs hold."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import node, pod, podgroup, queue, spread
from volsched.cache.state import ClusterState
from volsched.framework import settled
from volsched.framework.registry import load_config
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import (
    Job,
    any_constrained,
    any_held_host_ports,
    holdings,
    minimum_met,
    sum_rows,
    unmet_minimum,
    unmet_minimum_floats,
    unmet_minimum_rows,
)
from volsched.model.resources import stack_rows


def _jobs(cpus: list[tuple[str, str, str | None]]) -> list[Job]:
    """One Inqueue job a pod, asking minResources cpu ``min`` and holding ``cpu`` (on a node, if ``node``)."""
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a"), queue("b")]:
        state.apply(obj)
    for i, (min_cpu, cpu, on) in enumerate(cpus):
        q = "a" if i % 2 else "b"
        state.apply(podgroup(f"g{i}", queue=q, min_resources={"cpu": min_cpu}, phase="Inqueue"))
        state.apply(pod(f"p{i}", group=f"g{i}", cpu=cpu, node=on))
    return list(state.snapshot(now=5.0).jobs.values())


#: (cpu, minimum cpu, node or None) per one-pod gang: none, one pending, held and not, many fractions
#: (sums whose bits depend on the order they are added in).
CPUS = pytest.mark.parametrize(
    "cpus",
    [
        [],
        [("0.3", "0.1", None)],
        [("0.1", "0.1", "n1"), ("0.7", "0.2", "n1"), ("0.3", "0.3", None), ("1.1", "0.1", "n1")],
        [(f"{0.1 * (i % 7) + 0.1:.1f}", "0.1", "n1" if i % 3 else None) for i in range(40)],
    ],
    ids=["none", "one-pending", "held-and-not", "many-fractions"],
)


@CPUS
def test_held_rows_and_unmet_floats_sum_as_a_loop_over_the_jobs_arrays_does(
    cpus: list[tuple[str, str, str | None]],
) -> None:
    # holdings leaves out the jobs whose pods are all pending, and proportion and overcommit add
    # unmet minimums as plain floats: the same sums to the last bit as the arrays' loop.
    jobs = _jobs(cpus)
    rows = [0 if job.queue == "a" else 1 for job in jobs]
    width = len(jobs[0].allocated) if jobs else 1
    held, unmet = np.zeros((2, width)), np.zeros((2, width))
    for job, row in zip(jobs, rows, strict=True):
        held[row] += job.allocated
        unmet[row] += unmet_minimum(job)
    held_jobs = holdings(jobs, width)
    summed = sum_rows(held_jobs.matrix, np.asarray([0 if j.queue == "a" else 1 for j in held_jobs.jobs]), 2)
    assert summed.tobytes() == held.tobytes()
    floats = [[0.0] * width, [0.0] * width]
    for job, row in zip(jobs, rows, strict=True):
        floats[row] = [q + u for q, u in zip(floats[row], unmet_minimum_floats(job), strict=True)]
    assert np.asarray(floats).tobytes() == unmet.tobytes()
    if any(on for _, _, on in cpus):
        assert summed.any()  # something is held: the sums are not trivially zero


@CPUS
def test_unmet_minimum_rows_sums_as_a_loop_over_the_jobs_does(
    cpus: list[tuple[str, str, str | None]],
) -> None:
    jobs = _jobs(cpus)
    rows = [0 if job.queue == "a" else 1 for job in jobs]
    width = len(jobs[0].allocated) if jobs else 1
    looped = np.zeros((2, width))
    for job, row in zip(jobs, rows, strict=True):
        looped[row] += unmet_minimum(job)
    summed = np.zeros((2, width))
    unmet_minimum_rows(jobs, rows, summed)
    assert summed.tobytes() == looped.tobytes()
    if jobs:
        assert summed.any()  # something is unmet: the sums are not trivially zero


def test_unmet_minimum_rows_leaves_out_shared_jobs_holding_their_minimum_and_sums_alike() -> None:
    # The steady state: most admitted jobs are bound, shared and hold their minimum. They are left out
    # (known from the memo the next time), and the sums are still the loop's, to the last bit.
    cpus: list[tuple[str, str, str | None]] = [
        ("0.1", "0.1", "n1") if i % 4 else (f"0.{i % 9 + 1}", "0.1", None) for i in range(40)
    ]
    jobs = _jobs(cpus)
    met = [job for job in jobs if job.shared and minimum_met(job)]
    assert len(met) == 30  # the bound ones
    assert all(job.memo["minimum_met"] for job in met)
    assert not any(minimum_met(job) for job in jobs if job not in met)
    rows = [0 if job.queue == "a" else 1 for job in jobs]
    width = len(jobs[0].allocated)
    looped = np.zeros((2, width))
    for job, row in zip(jobs, rows, strict=True):
        looped[row] += unmet_minimum(job)
    for _ in range(2):  # the second time from the memo
        summed = np.zeros((2, width))
        unmet_minimum_rows(jobs, rows, summed)
        assert summed.tobytes() == looped.tobytes()
    assert looped.any()


@pytest.mark.parametrize("n_rows, n_bins, seed", [(0, 3, 0), (1, 1, 1), (50, 2, 2), (10_000, 7, 3)])
def test_sum_rows_adds_as_add_at_into_zeros_does_to_the_last_bit(n_rows: int, n_bins: int, seed: int) -> None:
    # proportion and drf sum what jobs hold with bincount: the very sums np.add.at (a loop) makes, with
    # values whose sums round differently in another order.
    rng = np.random.default_rng(seed)
    matrix = rng.random((n_rows, 3)) * 10.0 ** rng.integers(-3, 10, size=(n_rows, 3))
    rows = rng.integers(0, n_bins, size=n_rows).astype(np.intp)
    looped = np.zeros((n_bins, 3))
    np.add.at(looped, rows, matrix)
    assert sum_rows(matrix, rows, n_bins).tobytes() == looped.tobytes()
    reordered = np.zeros((n_bins, 3))
    np.add.at(reordered, rows[::-1], matrix[::-1])
    if n_rows > 1000:  # the order matters to these sums, so the test could tell another order
        assert reordered.tobytes() != looped.tobytes()


@pytest.mark.parametrize("gaps", [0, settled.MAX_GAPS], ids=["run-ends-at-g1", "run-goes-past-g1"])
def test_a_sessions_holdings_are_the_jobs_after_the_settled_run_that_hold_something_and_follow_a_status_change(
    gaps: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settled, "MAX_GAPS", gaps)
    cpus: list[tuple[str, str, str | None]] = [
        ("0.1", "0.1", "n1"),
        ("0.7", "0.2", None),
        ("0.3", "0.3", "n1"),
    ]
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a"), queue("b")]:
        state.apply(obj)
    for i, (min_cpu, cpu, on) in enumerate(cpus):
        state.apply(podgroup(f"g{i}", queue="a", min_resources={"cpu": min_cpu}, phase="Inqueue"))
        state.apply(pod(f"p{i}", group=f"g{i}", cpu=cpu, node=on))
    snapshot = state.snapshot(now=5.0)
    session = Session(snapshot, load_config(None), [])
    # g0 and g2 are bound and shared: the settled run, summed apart; g1 (pending) ends the run, or is a
    # gap of it (it holds nothing) when the run may go past it.
    assert [j.name for j in session.ledger.settled().jobs] == (["g0", "g2"] if gaps else ["g0"])
    held = session.ledger.holdings()
    assert [j.name for j in held.jobs] == ([] if gaps else ["g2"])
    assert (
        held.matrix.tobytes() == stack_rows([j.allocated for j in held.jobs], len(snapshot.space)).tobytes()
    )
    assert session.ledger.holdings() is held  # stacked once
    pending = snapshot.jobs["default/g1"]
    task = next(iter(pending.tasks.values()))
    Statement(session).allocate(task, 0)
    assert [j.name for j in session.ledger.holdings().jobs] == ["g1", "g2"]
    # the same from open to close, but for a gap the session changed: the run then ends before it
    assert [j.name for j in session.ledger.settled().jobs] == ["g0"]


@pytest.mark.parametrize(
    "ports_on, spread_on, want_ports, want_constrained",
    [
        (None, None, False, False),
        ("bound", None, True, False),
        ("pending", None, False, False),  # a pending pod of the session's own holds no port on a node
        (None, "bound", False, True),
        (None, "pending", False, True),
    ],
)
def test_any_host_ports_and_constraints_answer_alike_from_the_memo_of_shared_jobs(
    ports_on: str | None, spread_on: str | None, want_ports: bool, want_constrained: bool
) -> None:
    # Many shared bound jobs with neither, and one pod (bound or pending) with host ports or a spread:
    # the first answer fills the shared jobs' memos, the second reads them; both the same.
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a")]:
        state.apply(obj)
    for i in range(20):
        state.apply(pod(f"p{i}", cpu="0.1", node="n1"))
    for kind, on in (("ports", ports_on), ("spread", spread_on)):
        if on is not None:
            extra: dict[str, object] = (
                {"host_ports": [8080]} if kind == "ports" else {"spread": [spread("zone", match={"a": "b"})]}
            )
            state.apply(pod(f"x-{kind}", cpu="0.1", node="n1" if on == "bound" else None, **extra))  # type: ignore[arg-type]
    jobs = list(state.snapshot(now=5.0).jobs.values())
    assert sum(j.shared for j in jobs) >= 20
    for _ in range(2):
        assert any_held_host_ports(jobs) is want_ports
        assert any_constrained(jobs) is want_constrained


@pytest.mark.parametrize("seed", range(4))
def test_unmet_minimum_rows_of_a_few_jobs_row_by_row_gives_the_stacked_floats(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Up to _FEW_UNMET jobs are added one row at a time (an arriving pod's session has one or two): the
    # very floats the stacked path gives, special values too (NaN, infinities, negative zeros).
    from types import SimpleNamespace
    from typing import Any, cast

    from volsched.model import cluster

    rng = np.random.default_rng(seed)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 0.1, 3.0])
    for _ in range(300):
        n = int(rng.integers(1, cluster._FEW_UNMET + 1))
        values = rng.random((2, n, 3)) * 10.0 ** rng.integers(-3, 10, size=(2, n, 3))
        values = np.where(rng.random((2, n, 3)) < 0.2, rng.choice(special, size=(2, n, 3)), values)
        jobs = cast(
            list[Job],
            [
                SimpleNamespace(min_request=values[0, k], allocated=values[1, k], shared=False)
                for k in range(n)
            ],
        )
        rows = [int(r) for r in rng.integers(0, 2, size=n)]
        start = np.where(rng.random((2, 3)) < 0.3, -0.0, rng.random((2, 3)))
        few, stacked = start.copy(), start.copy()
        with np.errstate(invalid="ignore"), monkeypatch.context() as m:  # (inf - inf)
            unmet_minimum_rows(jobs, rows, few)
            m.setattr(cluster, "_FEW_UNMET", 0)
            unmet_minimum_rows(cast(Any, jobs), rows, stacked)
        assert few.tobytes() == stacked.tobytes()
