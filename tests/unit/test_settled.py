"""The settled run (``volsched.framework.settled``): what the opens and the close sum over the jobs no
session changes, kept from one session to the next. A session that reuses the last one's run decides and
renders exactly what a session that sums every job from scratch does, to the last bit, while pods arrive,
are bound, finish and leave; and nothing a session adds to its sums reaches the next session's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod, podgroup, preempting_cluster, queue, quota, running_gangs, spread
from volsched.cache.state import ClusterState
from volsched.framework import settled
from volsched.framework.never import job_never, never_fits
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.framework.session import Session
from volsched.framework.settled import KEPT, Settled, fold
from volsched.model.cluster import any_held_host_ports, dominant_share, sum_rows, unmet_minimum
from volsched.model.resources import Vector
from volsched.model.vocabulary import PodGroupPhase, TaskStatus
from volsched.plugins.shared.constraint_state import constraint_state

#: Awkward amounts: their sums round differently in another order.
CPUS = ["0.1", "0.7", "333m", "1.3", "0.2", "17m", "2.9", "0.3"]
NAMESPACES = ["ns0", "ns1", "ns2"]


#: The example config with reclaim and preempt: its sessions take their own copies of every job first.
EVICTING_CONFIG = load_config(Path(__file__).parents[2] / "examples" / "reclaim-preempt-scheduler.yaml")


def _objects() -> list[dict[str, Any]]:
    """Two nodes, queues a and b, namespace weights, 40 bound pods standing alone across queues and
    namespaces, two admitted gangs short of their minimum (one holds a member), a pending pod."""
    objs: list[dict[str, Any]] = [
        node("n1", cpu="512"),
        node("n2", cpu="512"),
        queue("a"),
        queue("b", weight=2),
    ]
    objs.append(quota("ns1", 3))
    for i in range(40):
        objs.append(
            pod(
                f"p{i}",
                ns=NAMESPACES[i % 3],
                cpu=CPUS[i % len(CPUS)],
                queue="a" if i % 4 else "b",
                node="n1" if i % 2 else "n2",
            )
        )
    objs.append(podgroup("g0", queue="a", min_member=3, min_resources={"cpu": "2.5"}, phase="Inqueue"))
    objs.append(pod("g0-0", group="g0", cpu="0.7", node="n1"))
    objs.append(podgroup("g1", queue="b", min_member=2, min_resources={"cpu": "1.1"}, phase="Inqueue"))
    objs.append(pod("w0", ns="ns2", cpu="0.1", queue="b"))
    return objs


def _session(state: ClusterState, now: float, *, config: Any = None) -> tuple[dict[str, Any], Any]:
    """One session: what the opens summed (proportion's queues, drf's namespace shares) and the result
    (``config``: the default one when None)."""
    config = load_config(None) if config is None else config
    session = open_session(state.snapshot(now=now), config)
    attrs = session.state["proportion.attrs"]
    ns_share = session.state["drf.namespace_share"]
    opened = {
        "queues": {
            name: (a.allocated.tobytes(), a.request.tobytes(), a.admitted, a.deserved.tobytes())
            for name, a in attrs.items()
        },
        "namespaces": {ns: ns_share(ns) for ns in NAMESPACES},
    }
    walked = _walked(session)
    for q, held in walked["queues"].items():  # the same floats as a walk over every job
        assert attrs[q].allocated.tobytes() == held.tobytes(), q
        assert attrs[q].admitted == walked["inqueue"].get(q, np.zeros(len(session.space))).tolist(), q
    share = dominant_share(session.total, session.space.share_mask)
    for ns in NAMESPACES:
        held = walked["namespaces"].get(ns)
        want = 0.0 if held is None else share(held) / session.snapshot.namespace_weight(ns)
        assert ns_share(ns) == want, ns
    for action in make_actions(config):
        action.execute(session)
    result = close_session(session)
    # The status rendered at close: the same floats as a walk over every job after the actions.
    space = session.space
    walked = _walked(session)
    for q, status in result.queues.items():
        assert status.allocated == space.to_dict(walked["queues"].get(q, space.zeros())), q
        assert status.request == space.to_dict(walked["requests"].get(q, space.zeros())), q
    for ns, rendered in result.namespaces.items():
        assert rendered["allocated"] == space.to_dict(walked["every_namespace"].get(ns, space.zeros())), ns
    return opened, result


def _walked(session: Session) -> dict[str, dict[str, Vector]]:
    """What the jobs hold per queue (known) and per namespace (the ones that hold something), what they
    hold and ask per queue (a gang or a pod standing alone that can never run as it stands asks nothing), and what
    the admitted ones still claim per queue (but those that can never run as they stand): one job at a time, in order, from zero, as the opens summed
    before there was a settled run."""
    out: dict[str, dict[str, Vector]] = {
        "queues": {},
        "requests": {},
        "namespaces": {},
        "every_namespace": {},
        "inqueue": {},
    }
    zeros = np.zeros(len(session.space))
    pending = (TaskStatus.PENDING, TaskStatus.PIPELINED)
    for j in session.jobs.values():
        out["every_namespace"][j.namespace] = out["every_namespace"].get(j.namespace, zeros) + j.allocated
        if j.queue in session.queues:
            out["queues"][j.queue] = out["queues"].get(j.queue, zeros) + j.allocated
            asks = j.total_request() if any(j.status_count.get(s) for s in pending) else j.allocated
            if job_never(session, j):  # a gang short of minMember or a pod standing alone, pending
                asks = j.allocated  # (no share is its: a Queue's status does not show it asked)
            out["requests"][j.queue] = out["requests"].get(j.queue, zeros) + asks
            if j.phase is PodGroupPhase.INQUEUE and not (j.podgroup is not None and never_fits(session, j)):
                out["inqueue"][j.queue] = out["inqueue"].get(j.queue, zeros) + unmet_minimum(j)
        if not j.all_pending:
            out["namespaces"][j.namespace] = out["namespaces"].get(j.namespace, zeros) + j.allocated
    return out


def _rendered(result: Any) -> dict[str, Any]:
    return {
        "binds": [(b.pod, b.node) for b in result.binds],
        "queues": result.queues,
        "namespaces": result.namespaces,
        "podgroups": result.podgroups,
        "events": result.events,
        "waiting": result.waiting,
    }


def _session_walking_all(
    state: ClusterState, now: float, *, config: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], Any]:
    """:func:`_session` whose run ends at its first gap (no gap allowed): the opens and the close walk
    every job after it, as before there were gaps."""
    with monkeypatch.context() as m:
        m.setattr(settled, "MAX_GAPS", 0)
        m.setattr(settled, "STUCK", "(none: every gap counted)", raising=False)
        return _session(state, now, config=config)


def _churn(cycle: int, binds: list[tuple[str, str]]) -> list[tuple[str, Any]]:
    """What happens between sessions: the binds are confirmed (the pods run), pods arrive, and in some
    cycles a bound pod in the middle of the order finishes and leaves."""
    out: list[tuple[str, Any]] = []
    for key, on in binds:
        ns, _, name = key.partition("/")
        i = int(name.removeprefix("new").removeprefix("p").split("-")[0]) if name[0] in "pn" else 0
        if name.startswith("w"):
            out.append(("apply", pod(name, ns=ns, cpu="0.1", queue="b", node=on)))
        else:
            out.append(
                ("apply", pod(name, ns=ns, cpu=CPUS[i % len(CPUS)], queue="a" if i % 4 else "b", node=on))
            )
    for k in range(3):
        i = cycle * 3 + k
        out.append(
            (
                "apply",
                pod(f"new{i}", ns=NAMESPACES[i % 3], cpu=CPUS[i % len(CPUS)], queue="a" if i % 4 else "b"),
            )
        )
    if cycle in (2, 5):
        out.append(("delete", ("Pod", NAMESPACES[(cycle * 7) % 3], f"p{cycle * 7}")))
    return out


def _churned(cycle: int, result: Any, *states: ClusterState) -> None:
    """:func:`_churn` after a session whose ``result`` holds the binds, into each of ``states`` alike."""
    binds = [(b.pod, b.node) for b in result.binds]
    for state in states:
        for what, obj in _churn(cycle, binds):
            if what == "apply":
                state.apply(obj)
            else:
                state.delete(*obj)


def test_a_session_that_reuses_the_settled_run_decides_and_renders_what_one_from_scratch_does() -> None:
    kept, scratch = ClusterState(), ClusterState()
    for state in (kept, scratch):
        for obj in _objects():
            state.apply(obj)
    reused = 0
    for cycle in range(7):
        before = kept._builder.kept.get(KEPT)
        scratch._builder.kept.clear()  # every session sums every job
        opened_kept, result_kept = _session(kept, 10.0 + cycle)
        opened_scratch, result_scratch = _session(scratch, 10.0 + cycle)
        assert opened_kept == opened_scratch, cycle
        assert _rendered(result_kept) == _rendered(result_scratch), cycle
        after = kept._builder.kept[KEPT]
        if isinstance(before, Settled) and before.jobs and after.jobs[: len(before.jobs)] == before.jobs:
            reused += 1
        _churned(cycle, result_kept, kept, scratch)
    assert reused >= 3  # the run was reused, not found anew every session


def _stuck() -> list[dict[str, Any]]:
    """Pods no node will ever take (a nodeSelector no node has), first in the cache's order: a gang of
    two in a PodGroup (PodGroups come first), one admitted that claims its minimum, and two pods standing
    alone, in both queues."""
    nowhere = {"volsched.test/nowhere": "true"}
    return [
        podgroup("stuck-g", ns="ns1", queue="b", min_member=2),
        *(pod(f"stuck-g-{k}", ns="ns1", group="stuck-g", cpu="0.7", node_selector=nowhere) for k in range(2)),
        podgroup("stuck-h", ns="ns2", queue="a", min_member=2, min_resources={"cpu": "1.3"}, phase="Inqueue"),
        *(pod(f"stuck-h-{k}", ns="ns2", group="stuck-h", cpu="0.2", node_selector=nowhere) for k in range(2)),
        pod("stuck-a", ns="ns2", cpu="333m", queue="a", node_selector=nowhere),
        pod("stuck-b", ns="ns0", cpu="0.1", queue="b", node_selector=nowhere),
    ]


def _walked_run(session: Session) -> dict[str, dict[Any, bytes]]:
    """What the kept run's span asks per queue (what its jobs hold, what its gaps ask), and what its
    admitted jobs still claim, per queue and in all: one job at a time in order from zero, as the close
    and the opens walk every job."""
    run = session.snapshot.kept[KEPT]
    assert isinstance(run, Settled)
    asked: dict[str, Vector] = {}
    claims: dict[str, Vector] = {}
    zeros = np.zeros(len(session.space))
    claimed = zeros
    for j in list(session.jobs.values())[: run.span]:
        asks = j.total_request() if j.status_count.get(TaskStatus.PENDING) else j.allocated
        asked[j.queue] = asked.get(j.queue, zeros) + asks
        if j.phase is PodGroupPhase.INQUEUE and (j.min_request > j.allocated).any():
            claims[j.queue] = claims.get(j.queue, zeros) + unmet_minimum(j)
            claimed = claimed + unmet_minimum(j)
    return {
        "asked": {q: v.tobytes() for q, v in asked.items()},
        "claims": {q: v.tobytes() for q, v in claims.items()},
        "claimed": {None: claimed.tobytes()},
    }


@pytest.mark.parametrize("config", [None, EVICTING_CONFIG], ids=["default", "evicting"])
def test_the_run_goes_on_past_pods_pending_for_ever_and_decides_what_a_walk_over_every_job_does(
    config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pods pending for ever come first in the order (one admitted gang among them, its minimum claimed):
    # the run goes on past them (gaps), session after
    # session, while pods arrive, are bound, finish and leave. Each session opens on and renders the
    # very floats of a walk over every job (``_session`` checks them), and decides and renders what a
    # session whose run ends at the first of them does (no gap allowed: the opens and the close walk
    # every job after it, as before there were gaps).
    kept, walk = ClusterState(), ClusterState()
    for state in (kept, walk):
        for obj in [*_objects()[:5], *_stuck(), *_objects()[5:]]:
            state.apply(obj)
    for cycle in range(7):
        opened_kept, result_kept = _session(kept, 10.0 + cycle, config=config)
        opened_walk, result_walk = _session_walking_all(
            walk, 10.0 + cycle, config=config, monkeypatch=monkeypatch
        )
        assert [e.pod for e in result_kept.evictions] == [e.pod for e in result_walk.evictions], cycle
        assert opened_kept == opened_walk, cycle
        assert _rendered(result_kept) == _rendered(result_walk), cycle
        assert not result_kept.binds or all("stuck" not in b.pod for b in result_kept.binds)
        run = kept._builder.kept[KEPT]
        assert "ns0/p0" in {j.key for j in run.jobs}, cycle  # past the stuck pods: the bound ones
        assert {"ns1/stuck-g", "ns2/stuck-h", "ns2/stuck-a", "ns0/stuck-b"} <= {g.key for g in run.gaps}, (
            cycle
        )
        assert not walk._builder.kept[KEPT].jobs  # the walk's run ends at stuck-g, first in the order
        # its sums read-only, whether extended, or gone back to before a gap a session changed
        sums = [
            *run.queue.values(),
            *run.namespace.values(),
            *run.unmet_queue.values(),
            *run.request.values(),
        ]
        assert not any(v.flags.writeable for v in [*sums, run.unmet_all]), cycle
        # the close's requests per queue: the span's, each gap's ask in its place, to the last bit
        session = open_session(kept.snapshot(now=10.5 + cycle), load_config(None))
        run = session.snapshot.kept[KEPT]
        assert run.request  # (the gaps ask)
        assert {
            "asked": {q: v.tobytes() for q, v in {**run.queue, **run.request}.items()},
            "claims": {q: v.tobytes() for q, v in run.unmet_queue.items()},
            "claimed": {None: run.unmet_all.tobytes()},
        } == _walked_run(session)
        _churned(cycle, result_kept, kept, walk)


@pytest.mark.parametrize("config", [None, EVICTING_CONFIG], ids=["default", "evicting"])
def test_the_run_goes_on_past_more_pods_set_aside_than_the_gaps_it_may_have(
    config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cliff: past ``MAX_GAPS`` pods pending for ever first in the order, the run ended at the next
    one, and every session walked every job after them (a cluster's every bound pod: 5 ms of CPU a
    session at 64 such pods, 28 ms at 65, with 10,000 bound). Pods set aside (every session has them)
    are gaps the limit does not count: once the first session set them aside, the run goes on past
    them all, session after session, while pods arrive, are bound and leave, deciding and rendering
    what a walk over every job does, on its floats."""
    nowhere = {"volsched.test/nowhere": "true"}
    many = [
        pod(
            f"stuck{k:03d}",
            ns=NAMESPACES[k % 3],
            cpu=CPUS[k % len(CPUS)],
            queue="ab"[k % 2],
            node_selector=nowhere,
        )
        for k in range(settled.MAX_GAPS + 6)
    ]
    kept, walk = ClusterState(), ClusterState()
    for state in (kept, walk):
        for obj in [*_objects()[:5], *many, *_objects()[5:]]:
            state.apply(obj)
    for cycle in range(6):
        opened_kept, result_kept = _session(kept, 10.0 + cycle, config=config)
        opened_walk, result_walk = _session_walking_all(
            walk, 10.0 + cycle, config=config, monkeypatch=monkeypatch
        )
        assert opened_kept == opened_walk, cycle
        assert _rendered(result_kept) == _rendered(result_walk), cycle
        run = kept._builder.kept[KEPT]
        if cycle:  # (the first session sets them aside)
            assert "ns0/p0" in {j.key for j in run.jobs}, cycle  # past them all: the bound ones
            assert {f"{m['metadata']['namespace']}/{m['metadata']['name']}" for m in many} <= {
                g.key for g in run.gaps
            }, cycle
        assert not any("stuck" in b.pod for b in result_kept.binds)
        _churned(cycle, result_kept, kept, walk)


def test_a_run_extended_past_the_same_gaps_keeps_what_was_made_of_them() -> None:
    """What follows from a run's gaps alone (their blocks, ``gap_blocks``, and each block as compared,
    ``blocks``) is handed to the run a session extends past the same gaps (a pod arriving each cycle,
    bound, then settled after them), not made again for the pods set aside every session; a run whose
    gaps differ makes its own, and each is what its gaps give. The pods set aside, lent again as the
    very jobs whose asks matched the block's, are not added up again."""
    nowhere = {"volsched.test/nowhere": "true"}
    state = ClusterState()
    for obj in [
        node("n1", cpu="512"),
        node("n2", cpu="512"),
        queue("a"),
        queue("b", weight=2),
        *(
            pod(
                f"stuck{k:02d}",
                ns=NAMESPACES[k % 3],
                cpu=CPUS[k % len(CPUS)],
                queue="ab"[k % 2],
                node_selector=nowhere,
            )
            for k in range(12)
        ),
        *(
            pod(f"p{i}", ns=NAMESPACES[i % 3], cpu=CPUS[i % len(CPUS)], queue="ab"[i % 2], node="n1")
            for i in range(10)
        ),
    ]:
        state.apply(obj)
    before: Settled | None = None
    before_matched: list[Any] = []
    binds: list[Any] = []
    handed = again = 0
    for cycle in range(6):
        for bind in binds:  # confirmed: the pod runs
            ns, _, name = bind.pod.partition("/")
            state.apply(pod(name, ns=ns, cpu="0.3", queue="a", node=bind.node))
        state.apply(pod(f"new{cycle}", ns="ns0", cpu="0.3", queue="a"))
        _, result = _session(state, 10.0 + cycle)
        binds = result.binds
        assert [b.pod for b in binds] == [f"ns0/new{cycle}"]
        run = state._builder.kept[KEPT]
        assert isinstance(run, Settled)
        assert len(run.gaps) == 12
        assert run.gap_blocks == settled._gap_blocks(run.gaps), cycle
        matched = [b.matched[0] for b in run.blocks.values()]  # (the first session checks no gap)
        assert [[j.key for j in m] for m in matched] == ([[g.key for g in run.gaps]] if cycle else []), cycle
        if before is not None and run is not before and run.gaps is before.gaps:
            assert run.gap_blocks is before.gap_blocks, cycle
            assert run.blocks is before.blocks and run.blocks, cycle
            # (the very jobs whose asks matched, lent again as they were lent: not added up again)
            if before_matched:
                assert matched[0] is before_matched[0], cycle
                again += 1
            handed += 1
        elif before is not None and run.gaps is not before.gaps:
            assert run.blocks is not before.blocks, cycle
        before, before_matched = run, matched
    assert handed >= 4  # (each session after the first extends the run by the pod bound before)
    assert again >= 3


def test_what_a_session_adds_to_its_sums_does_not_reach_the_next_sessions() -> None:
    state = ClusterState()
    for obj in _objects():
        state.apply(obj)
    _session(state, 10.0)  # the run is found and kept
    run = state._builder.kept[KEPT]
    kept_bytes = {
        name: {k: v.tobytes() for k, v in getattr(run, name).items()}
        for name in ("queue", "namespace", "unmet_queue")
    }
    for i in range(6):  # pods that drf and proportion add to their sums as they are placed
        state.apply(pod(f"more{i}", ns=NAMESPACES[i % 3], cpu="0.7", queue="a" if i % 2 else "b"))
    _opened, result = _session(state, 11.0)
    assert result.binds  # placed: drf and proportion added them to their sums
    assert state._builder.kept[KEPT].jobs[: len(run.jobs)] == run.jobs  # the same run, reused
    for name, sums in kept_bytes.items():
        assert {k: v.tobytes() for k, v in getattr(run, name).items()} == sums, name
    # and the next session (the binds not confirmed yet) opens on the same sums as one from scratch
    scratch = ClusterState()
    for obj in _objects():
        scratch.apply(obj)
    for i in range(6):
        scratch.apply(pod(f"more{i}", ns=NAMESPACES[i % 3], cpu="0.7", queue="a" if i % 2 else "b"))
    assert _session(state, 12.0)[0] == _session(scratch, 12.0)[0]


def _crowded() -> list[dict[str, Any]]:
    """One node full of queue a's running gangs of two pods past their minMember of one (the settled
    run), queue b's pods pending: reclaim evicts some of a's for b (a holds past its deserved share)."""
    objs: list[dict[str, Any]] = [node("n1", cpu="8"), queue("a"), queue("b")]
    for g in range(4):
        objs.append(podgroup(f"g{g}", ns=NAMESPACES[g % 3], queue="a", min_member=1, phase="Running"))
        objs += [pod(f"g{g}-{i}", ns=NAMESPACES[g % 3], group=f"g{g}", cpu="1", node="n1") for i in range(2)]
    objs += [pod(f"w{i}", ns="ns2", cpu="1", queue="b") for i in range(3)]
    return objs


def test_an_evicting_session_reuses_the_settled_run_and_renders_what_one_from_scratch_does() -> None:
    """A session that may evict works on copies of the shared jobs: its run is the last session's
    all the same, and a job of the run it evicts from leaves the run before the close sums it."""
    kept, scratch = ClusterState(), ClusterState()
    for state in (kept, scratch):
        for obj in _crowded():
            state.apply(obj)
    session = open_session(kept.snapshot(now=9.0), EVICTING_CONFIG)
    run = session.ledger.settled()
    assert [j.key for j in run.jobs] == ["ns0/g0", "ns1/g1", "ns2/g2", "ns0/g3"]  # every gang of a
    assert all(session.jobs[j.key] is not j for j in run.jobs)  # though the session has copies
    again = open_session(kept.snapshot(now=9.5), EVICTING_CONFIG)
    assert again.ledger.settled().jobs is run.jobs  # reused: a copy stands for its shared job
    scratch._builder.kept.clear()
    opened_kept, result_kept = _session(kept, 10.0, config=EVICTING_CONFIG)
    opened_scratch, result_scratch = _session(scratch, 10.0, config=EVICTING_CONFIG)
    assert result_kept.evictions  # reclaim evicted pods of the run
    assert opened_kept == opened_scratch
    assert _rendered(result_kept) == _rendered(result_scratch)
    assert [e.pod for e in result_kept.evictions] == [e.pod for e in result_scratch.evictions]
    evicted = {e.pod.rsplit("-", 1)[0] for e in result_kept.evictions}  # their gangs
    assert not evicted & {j.key for j in kept._builder.kept[KEPT].jobs}  # left the run


def test_an_evicting_session_changes_no_job_or_task_the_cache_shares() -> None:
    state = ClusterState()
    for obj in _crowded():
        state.apply(obj)
    _session(state, 9.0, config=EVICTING_CONFIG)
    snapshot = state.snapshot(now=10.0)
    shared_jobs = [j for j in snapshot.jobs.values() if j.shared]
    shared_tasks = [t for j in shared_jobs for t in j.tasks.values()]
    assert len(shared_jobs) == 4 and all(t.shared for t in shared_tasks)
    node_tasks = [dict(held) for held in snapshot.nodes.tasks]

    def seen() -> list[Any]:
        return [
            [
                (j.key, j.phase, j.ready, dict(j.status_count), j.allocated.tobytes(), j.origin)
                for j in shared_jobs
            ],
            [(t.key, t.status, t.node_name, t.shared) for t in shared_tasks],
        ]

    before = seen()
    _opened, result = _session(state, 10.0, config=EVICTING_CONFIG)
    assert result.evictions
    assert seen() == before
    # what the cache holds is what it held: the next snapshot has the same shared objects, unchanged
    again = state.snapshot(now=11.0)
    assert [j for j in again.jobs.values() if j.shared] == shared_jobs
    assert [dict(held) for held in again.nodes.tasks] == node_tasks
    assert seen() == before


@pytest.mark.parametrize("split", [0, 1, 17, 250, 999, 1000])
@pytest.mark.parametrize("seed", [0, 1])
def test_fold_continues_a_sum_as_a_walk_over_every_row_in_order_does(split: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.random((1000, 3)) * 10.0 ** rng.integers(-3, 10, size=(1000, 3))
    keys = [f"k{k}" for k in rng.integers(0, 7, size=1000)]
    names = sorted(set(keys))
    rows = np.asarray([names.index(k) for k in keys], np.intp)
    walked = sum_rows(matrix, rows, len(names))
    head = fold({}, keys[:split], list(matrix[:split]), 3)
    whole = fold(head, keys[split:], matrix[split:], 3)
    assert {k: v.tobytes() for k, v in whole.items()} == {k: walked[names.index(k)].tobytes() for k in whole}
    assert set(whole) == set(keys)


@pytest.mark.parametrize("gaps", [0, settled.MAX_GAPS], ids=["run-ends-at-w", "run-goes-past-w"])
@pytest.mark.parametrize(
    "extra, on, want_ports, want_constrained",
    [
        (None, None, False, False),
        ("ports", "first", True, False),  # held by a job of the run
        ("ports", "last", True, False),  # held by a job after the run, or past the gap w
        ("ports", "pending", False, False),  # a pending pod holds no port on a node
        ("spread", "first", False, True),
        ("spread", "last", False, True),
        ("spread", "pending", False, True),
    ],
)
def test_host_ports_and_constraints_are_seen_in_the_run_and_after_it_session_after_session(
    extra: str | None,
    on: str | None,
    want_ports: bool,
    want_constrained: bool,
    gaps: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Bound pods standing alone, one with host ports or a spread: first in the order (in the run), or
    # bound after a pod pending for ever (after the run when the run may not go past it, else in the
    # run past that gap), or pending. Asked in three sessions, the run kept.
    monkeypatch.setattr(settled, "MAX_GAPS", gaps)
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a")]:
        state.apply(obj)
    kwargs: dict[str, Any] = {}
    if extra == "ports":
        kwargs["host_ports"] = [8080]
    elif extra == "spread":
        kwargs["spread"] = [spread("zone", match={"a": "b"})]
    if on == "first":
        state.apply(pod("a-x", cpu="0.1", node="n1", **kwargs))
    for i in range(10):
        state.apply(pod(f"p{i}", cpu="0.1", node="n1"))
    state.apply(pod("w", cpu="100"))  # pending for ever (no node has room): a gap, or the run ends here
    if on in ("last", "pending"):
        state.apply(pod("z-x", cpu="0.1", node="n1" if on == "last" else None, **kwargs))
    for _ in range(3):
        session = open_session(state.snapshot(now=5.0), load_config(None))
        assert len(session.ledger.settled().jobs) == 10 + (on == "first") + bool(gaps and on == "last")
        assert (
            session.ledger.settled().host_ports or any_held_host_ports(session.ledger.unsettled())
        ) is want_ports
        assert (constraint_state(session) is not None) is want_constrained


#: The example config with reclaim and preempt: its sessions take their own copies of every job first.
EVICTING = (Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()


@pytest.mark.parametrize("text", [None, EVICTING], ids=["default", "evicting"])
def test_a_session_that_evicts_renders_what_its_jobs_hold_after_the_evictions(text: str | None) -> None:
    # A running gang first in the order (where the run would be) fills n1; a higher-priority gang waits.
    # Under the evicting config, preempt evicts two of the running gang's pods: the status rendered at
    # close is what the jobs hold after that, not what they held when the session opened, in this
    # session and the next (which finds the last one's run kept).
    state = preempting_cluster()  # four low-priority pods fill n1; a high-priority pod waits
    config = load_config(text=text)
    for _ in range(2):
        session = open_session(state.snapshot(now=5.0), config)
        for action in make_actions(config):
            action.execute(session)
        result = close_session(session)
        assert bool(result.evictions) is (text is not None)
        walked = _walked(session)
        space = session.space
        assert result.queues["q"].allocated == space.to_dict(walked["queues"]["q"])
        assert result.queues["q"].request == space.to_dict(walked["requests"]["q"])
        assert result.namespaces["ns"]["allocated"] == space.to_dict(walked["every_namespace"]["ns"])


@pytest.mark.parametrize("gaps", [0, settled.MAX_GAPS], ids=["run-ends-at-w", "run-goes-past-w"])
@pytest.mark.parametrize("holder", [None, "first", "last"], ids=["none", "in-the-run", "after-the-run"])
def test_a_pod_is_not_placed_on_a_node_whose_pod_in_or_after_the_run_holds_its_host_port(
    holder: str | None, gaps: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One node; bound pods standing alone, one of them holding host port 8080: first in the order (in
    # the settled run) or bound after a pod pending for ever (after the run when the run may not go
    # past it, else in the run past that gap). A pod asking for 8080 has no node to go to while the
    # holder is there, in this session and the next (the run kept).
    monkeypatch.setattr(settled, "MAX_GAPS", gaps)
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a")]:
        state.apply(obj)
    if holder == "first":
        state.apply(pod("a-x", cpu="0.1", node="n1", host_ports=[8080]))
    for i in range(10):
        state.apply(pod(f"p{i}", cpu="0.1", node="n1"))
    state.apply(pod("w", cpu="100"))  # pending for ever (no node has room): a gap, or the run ends here
    if holder == "last":
        state.apply(pod("z-x", cpu="0.1", node="n1", host_ports=[8080]))
    state.apply(pod("y", cpu="0.1", host_ports=[8080]))
    config = load_config(None)
    for k in range(2):
        session = open_session(state.snapshot(now=5.0), config)
        # (w, set aside by the first session, is a gap the limit does not count in the second)
        assert len(session.ledger.settled().jobs) == 10 + (holder == "first") + bool(
            (gaps or k) and holder == "last"
        )
        for action in make_actions(config):
            action.execute(session)
        binds = [(b.pod, b.node) for b in close_session(session).binds]
        assert binds == ([] if holder else [("default/y", "n1")])


#: Only overcommit votes on admission (proportion would refuse the same job for its own reasons).
OVERCOMMIT_ONLY = """
actions: "enqueue"
tiers:
- plugins:
  - name: gang
  - name: overcommit
"""


@pytest.mark.parametrize("claims, phase", [("10", "Pending"), ("1", "Inqueue")])
def test_overcommit_keeps_the_room_an_admitted_gang_in_the_run_still_claims(claims: str, phase: str) -> None:
    # An admitted gang first in the order, one member bound (1 cpu of a 10-cpu node): shared, nothing
    # pending, in the settled run; its minimum (``claims`` cpu) is reserved. A 5-cpu gang waits: the room
    # is 12 (10 x 1.2) - 1 used - what the first still claims (9, or 0), in this session and the next.
    state = ClusterState()
    for obj in [
        node("n1", cpu="10"),
        queue("a"),
        podgroup("g", queue="a", min_member=2, min_resources={"cpu": claims}, phase="Inqueue"),
        pod("g-0", group="g", cpu="1", node="n1"),
        podgroup("h", queue="a", min_resources={"cpu": "5"}),
        pod("h-0", group="h", cpu="5"),
    ]:
        state.apply(obj)
    config = load_config(text=OVERCOMMIT_ONLY)
    for _ in range(2):
        session = open_session(state.snapshot(now=5.0), config)
        assert [j.name for j in session.ledger.settled().jobs] == ["g"]
        for action in make_actions(config):
            action.execute(session)
        assert close_session(session).podgroups["default/h"].phase == phase


def test_the_kept_runs_sums_refuse_to_be_added_to() -> None:
    # Whoever reads the run's sums must copy them to add to them: one added to in place would carry
    # this session's placements into every later session's sums, silently. Read-only, it raises.
    state = ClusterState()
    for obj in _objects():
        state.apply(obj)
    for _ in range(2):
        _session(state, 10.0)
        run = state._builder.kept[KEPT]
        assert run.jobs
        vectors = [*run.queue.values(), *run.namespace.values(), *run.unmet_queue.values(), run.unmet_all]
        for v in vectors:
            with pytest.raises(ValueError, match="read-only"):
                v += 1.0


def test_overcommit_counts_once_what_an_admitted_gang_pending_for_ever_before_the_run_claims() -> None:
    # An admitted gang no node will take (its minimum, 5 cpu, claimed), first in the order: a gap of the
    # run, which goes on past it to a bound pod (1 cpu of a 10-cpu node). A 5-cpu gang waits: the room is
    # 12 (10 x 1.2) - 1 used - 5 claimed = 6, so it is admitted, in this session and the next (the run
    # kept, the claim in its sums once, not again with the jobs after the run).
    state = ClusterState()
    for obj in [
        node("n1", cpu="10"),
        queue("a"),
        podgroup("g", queue="a", min_member=2, min_resources={"cpu": "5"}, phase="Inqueue"),
        *(
            pod(f"g-{k}", group="g", cpu="2.5", node_selector={"volsched.test/nowhere": "true"})
            for k in range(2)
        ),
        podgroup("h", queue="a", min_resources={"cpu": "5"}),
        pod("h-0", group="h", cpu="5"),
        pod("p", cpu="1", node="n1"),
    ]:
        state.apply(obj)
    config = load_config(text=OVERCOMMIT_ONLY)
    for _ in range(2):
        session = open_session(state.snapshot(now=5.0), config)
        assert [j.name for j in session.ledger.settled().jobs] == ["p"]
        assert [g.key for g in session.ledger.settled().gaps] == ["default/g", "default/h"]
        for action in make_actions(config):
            action.execute(session)
        assert close_session(session).podgroups["default/h"].phase == "Inqueue"


def test_a_run_past_a_gap_is_not_reused_for_jobs_that_end_before_the_gap() -> None:
    # Bound pods, a pod pending for ever (a gap), more bound pods: the run goes past the gap. Then the
    # gap and every pod from the sixth on leave: the jobs left are the run's first five, which must not
    # be taken for the run up to the gap (ten jobs, five of them gone).
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a")]:
        state.apply(obj)
    for i in range(10):
        state.apply(pod(f"p{i}", cpu=CPUS[i % len(CPUS)], node="n1"))
    state.apply(pod("w", cpu="100"))  # pending for ever (no node has room): a gap
    for i in range(10, 20):
        state.apply(pod(f"p{i}", cpu=CPUS[i % len(CPUS)], node="n1"))
    _session(state, 5.0)
    assert [g.key for g in state._builder.kept[KEPT].gaps] == ["default/w"]
    for name in ["w", *(f"p{i}" for i in range(5, 20))]:
        state.delete("Pod", "default", name)
    _session(state, 6.0)  # opens and closes on what a walk over every job sums (``_session`` checks)
    assert [j.name for j in state._builder.kept[KEPT].jobs] == [f"p{i}" for i in range(5)]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_runs_past_gaps_that_come_and_go_open_and_close_on_a_walks_floats_and_decide_as_one(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seeded churn: pods arrive (some no node will take, some in gangs admitted or not, which grow and
    # are admitted later), binds are confirmed, bound and stuck pods leave, anywhere in the order. Every
    # session opens and closes on the floats of a walk over every job (``_session`` checks), and decides
    # and renders what a session whose run ends at the first job not shared does.
    rng = np.random.default_rng(seed)
    nowhere = {"volsched.test/nowhere": "true"}
    kept, walk = ClusterState(), ClusterState()
    specs = {"ns2/w0": ("0.1", "b")}  # pod key -> (cpu, queue) of the pods that may be bound
    alive: list[tuple[str, str]] = []  # (namespace, pod name) of the pods that may leave
    gangs: list[tuple[str, str]] = []  # (namespace, name) of the gangs no node will take

    def apply(obj: dict[str, Any]) -> None:
        for state in (kept, walk):
            state.apply(obj)

    for obj in _objects():
        apply(obj)
    past_gaps = 0
    for cycle in range(8):
        opened_kept, result_kept = _session(kept, 10.0 + cycle)
        with monkeypatch.context() as m:
            m.setattr(settled, "MAX_GAPS", 0)
            opened_walk, result_walk = _session(walk, 10.0 + cycle)
        assert opened_kept == opened_walk, cycle
        assert _rendered(result_kept) == _rendered(result_walk), cycle
        run = kept._builder.kept[KEPT]
        past_gaps += bool(run.gaps)  # (a gap is followed by a job of the run)
        for b in result_kept.binds:  # confirmed: the pod runs where it was bound
            ns, _, name = b.pod.partition("/")
            cpu, q = specs[b.pod]
            apply(pod(name, ns=ns, cpu=cpu, queue=q, node=b.node))
        for _ in range(int(rng.integers(2, 6))):
            ns = NAMESPACES[int(rng.integers(0, 3))]
            kind = int(rng.integers(0, 4))
            name = f"x{len(specs)}"
            if kind == 0 and gangs and rng.integers(0, 3) == 0:  # a gang admitted since (its phase written)
                ns, gang = gangs[int(rng.integers(0, len(gangs)))]
                apply(
                    podgroup(
                        gang, ns=ns, queue="a", min_member=2, min_resources={"cpu": "0.7"}, phase="Inqueue"
                    )
                )
                continue
            if kind == 0 and gangs and rng.integers(0, 2):  # a gang gets one more member: it asks more
                ns, gang = gangs[int(rng.integers(0, len(gangs)))]
                apply(pod(name, ns=ns, group=gang, cpu="0.3", node_selector=nowhere))
                specs[f"{ns}/{name}"] = ("0.3", "a")
                continue
            if kind == 0:  # a gang, admitted or not, that no node will take
                phase = "Inqueue" if rng.integers(0, 2) else None
                apply(
                    podgroup(name, ns=ns, queue="a", min_member=2, min_resources={"cpu": "0.7"}, phase=phase)
                )
                apply(pod(f"{name}-0", ns=ns, group=name, cpu="0.2", node_selector=nowhere))
                specs[f"{ns}/{name}-0"] = ("0.2", "a")
                gangs.append((ns, name))
                continue
            cpu, q = CPUS[len(specs) % len(CPUS)], "a" if len(specs) % 2 else "b"
            specs[f"{ns}/{name}"] = (cpu, q)
            apply(pod(name, ns=ns, cpu=cpu, queue=q, node_selector=nowhere if kind == 1 else None))
            alive.append((ns, name))
        if alive and rng.integers(0, 2):  # one leaves, bound or stuck, from anywhere in the order
            ns, name = alive.pop(int(rng.integers(0, len(alive))))
            for state in (kept, walk):
                state.delete("Pod", ns, name)
    assert past_gaps >= 3  # the run went on past gaps, not only ended at the first


def test_a_gap_that_moves_to_another_queue_is_asked_of_that_queue_in_the_next_session() -> None:
    # Bound pods of queues a and b, a pod of queue a pending for ever (a gap: the run goes past it),
    # more bound pods. Between sessions the pending pod moves to queue b, asking the very same: the
    # next session's close asks it of b, not of a, as a walk over every job does (``_session`` checks).
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a"), queue("b")]:
        state.apply(obj)
    for i in range(6):
        state.apply(pod(f"p{i}", cpu=CPUS[i], queue="a" if i % 2 else "b", node="n1"))
    # pending for ever (the node has no room while the others run; it could hold it empty: it asks a
    # share, unlike a pod no node could ever hold): a gap
    state.apply(pod("w", cpu="60", queue="a"))
    for i in range(6, 12):
        state.apply(pod(f"p{i}", cpu=CPUS[i % len(CPUS)], queue="a" if i % 2 else "b", node="n1"))
    _session(state, 5.0)
    assert [(g.key, g.queue) for g in state._builder.kept[KEPT].gaps] == [("default/w", "a")]
    state.apply(pod("w", cpu="60", queue="b"))
    _, result = _session(state, 6.0)
    assert result.queues["b"].request["cpu"] > 60 > result.queues["a"].request["cpu"]
    assert [(g.key, g.queue) for g in state._builder.kept[KEPT].gaps] == [("default/w", "b")]


def test_a_gap_replaced_in_its_place_by_another_job_asking_the_same_is_not_taken_for_it() -> None:
    # A bound gang, a gang pending for ever (a gap: the run goes past it), bound pods. Between sessions
    # the stuck gang leaves and a new one, asking the very same of the same queue but placeable, takes
    # its place in the order. The next session places it: it is not the old gap (whose change would
    # drop the run), so the close asks it of the queue once, as a walk over every job does.
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a")]:
        state.apply(obj)
    state.apply(podgroup("g0", queue="a"))
    state.apply(pod("g0-0", group="g0", cpu="0.7", node="n1"))
    state.apply(podgroup("g1", queue="a"))
    state.apply(pod("g1-0", group="g1", cpu="0.3", node_selector={"volsched.test/nowhere": "true"}))
    for i in range(6):
        state.apply(pod(f"p{i}", cpu=CPUS[i], node="n1"))
    _session(state, 5.0)
    assert [g.key for g in state._builder.kept[KEPT].gaps] == ["default/g1"]
    state.delete("Pod", "default", "g1-0")
    state.delete("PodGroup", "default", "g1")
    state.apply(podgroup("g2", queue="a"))
    state.apply(pod("g2-0", group="g2", cpu="0.3"))
    _, result = _session(state, 6.0)  # (``_session`` checks the close's requests against a walk)
    assert [b.pod for b in result.binds] == ["default/g2-0"]


def _gangs(cpus: list[str]) -> list[dict[str, Any]]:
    """Two nodes, queues a and b, 30 running gangs of two pods (a PodGroup each) across queues and
    namespaces, the pods asking ``cpus`` in turn, and memory in bytes."""
    return running_gangs(30, node_cpu="512", cpus=cpus, memory=True)


#: Amounts whose sums are exact in any order (halves, quarters, whole cores), and the awkward ones.
EXACT_CPUS = ["0.5", "1", "2", "250m", "1.5", "3", "0.75"]


@pytest.mark.parametrize(("cpus", "exact"), [(EXACT_CPUS, True), (CPUS, False)], ids=["exact", "awkward"])
@pytest.mark.parametrize("config", [None, EVICTING_CONFIG], ids=["default", "evicting"])
def test_a_run_whose_jobs_finish_and_leave_keeps_the_rest_when_its_sums_are_exact(
    cpus: list[str], exact: bool, config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Gangs in the middle of the order finish and leave while others arrive and are bound: with amounts
    # whose sums are exact, the next session keeps the run less what left (one subtraction a job), else
    # it sums the run anew; either way every session opens, decides and renders (PodGroup statuses, kept
    # from the last session too) what a session summing every job from scratch does, to the last bit.
    kept, scratch = ClusterState(), ClusterState()
    for state in (kept, scratch):
        for obj in _gangs(cpus):
            state.apply(obj)
    trimmed: list[int] = []
    without_gone = settled._without_gone

    def counting(jobs: Any, base: Settled, present: Any) -> Settled:
        out = without_gone(jobs, base, present)
        trimmed.append(out.span)
        return out

    monkeypatch.setattr(settled, "_without_gone", counting)
    cpu_of: dict[str, str] = {}
    for cycle in range(6):
        scratch._builder.kept.clear()  # every session sums and renders every job
        opened_kept, result_kept = _session(kept, 10.0 + cycle, config=config)
        opened_scratch, result_scratch = _session(scratch, 10.0 + cycle, config=config)
        assert opened_kept == opened_scratch, cycle
        assert _rendered(result_kept) == _rendered(result_scratch), cycle
        run = kept._builder.kept[KEPT]
        assert isinstance(run, Settled) and run.exact is exact
        arrivals = [f"new{cycle}-{k}" for k in range(2)]
        cpu_of.update({name: cpus[(cycle + k) % len(cpus)] for k, name in enumerate(arrivals)})
        for state in (kept, scratch):
            for b in result_kept.binds:  # the binds confirmed: the pods run
                ns, _, name = b.pod.partition("/")
                state.apply(pod(name, ns=ns, cpu=cpu_of[name], queue="b", node=b.node))
            for i in (cycle * 4 + 1, cycle * 4 + 3):  # two gangs in the middle finish
                for k in range(2):
                    state.delete("Pod", NAMESPACES[i % 3], f"g{i}-{k}")
                state.delete("PodGroup", NAMESPACES[i % 3], f"g{i}")
            for name in arrivals:  # pods arrive
                state.apply(pod(name, cpu=cpu_of[name], queue="b"))
    if exact:
        assert len(trimmed) >= 5 and min(trimmed) > 0  # kept less what left, session after session
    else:
        assert not trimmed  # sums that may round differently are never subtracted from


@pytest.mark.parametrize(
    ("rows", "exact"),
    [
        ([[0.5, 2.0**40], [0.25, 3.0]], True),  # fractions of a core, whole bytes
        ([[0.1, 1.0]], False),  # a tenth has no exact float
        ([[2.0**41 + 0.5, 0.0], [2.0**41, 0.0]], False),  # fractions summing past FRACTION_BOUND
        ([[2.0**51, 0.0], [2.0**50, 0.0]], True),  # whole amounts under WHOLE_BOUND
        ([[2.0**51, 0.0], [2.0**51, 0.0]], False),  # whole amounts reaching it
        ([[-1.0, 0.0]], False),  # (none is negative; were one, the largest sum would not bound the rest)
    ],
)
def test_a_runs_sums_are_exact_only_for_multiples_of_the_grain_well_under_the_floats_range(
    rows: list[list[float]], exact: bool
) -> None:
    m = np.array(rows)
    sums = {"q": m.sum(axis=0)}
    _, _, got = settled._exactness(settled.empty(2), [m], [sums], 2)
    assert got is exact
    _, _, few = settled._exactness_few(settled.empty(2), [list(m)], [sums], 2)
    assert few is exact


@pytest.mark.parametrize("names", [3, 12], ids=["few-names", "many-names"])
def test_the_names_of_the_jobs_left_come_in_the_order_first_seen_as_a_walk_gives_them(names: int) -> None:
    # What a run less the jobs that left sums per queue and per namespace is keyed in the order the
    # jobs left first name them, and its namespaces holding something are those of its jobs with tasks:
    # looked for name by name (few names) or walked (many), the same as a walk over every job.
    rng = np.random.default_rng(names)

    class _Job:
        def __init__(self, queue: str, namespace: str, tasks: dict[str, object]) -> None:
            self.queue, self.namespace, self.tasks = queue, namespace, tasks

    queues = [f"q{i}" for i in range(names)]
    spaces = [f"ns{i}" for i in range(names)]
    for _ in range(300):
        jobs: list[Any] = [
            _Job(
                str(rng.choice(queues)),
                str(rng.choice(spaces)),
                {"t": object()} if rng.random() < 0.8 else {},
            )
            for _ in range(int(rng.integers(0, 40)))
        ]
        assert list(settled._first_seen(jobs, settled._QUEUE, queues)) == list(
            dict.fromkeys(j.queue for j in jobs)
        )
        assert list(settled._first_seen(jobs, settled._NAMESPACE, spaces)) == list(
            dict.fromkeys(j.namespace for j in jobs)
        )
        assert settled._holding(jobs, frozenset(spaces)) == frozenset(j.namespace for j in jobs if j.tasks)
