"""Pods that fit on no node as the nodes stand (a nodeSelector no node has, a request past every node's
allocatable, a gang whose minMember pods the nodes could not hold even empty) are set aside once a session
tried them: later sessions do not try them again (kube-scheduler's unschedulable queue) until something
that could make them fit happens — a node joins or changes (its allocatable, labels, readiness), the gang
itself changes (a pod, its PodGroup), its queue changes, the config is reloaded — or five minutes pass.
Set aside, they are still told why they wait (what their last try found); as they can never run as the
nodes stand, they ask their queue no share (a gang's or a pod's standing alone, as the proportion plugin
and the Queue's status count), and every session decides what it did when it tried them (``bench/replay_digest.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import Obj, node, pod, podgroup, queue
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.actions.allocate import Allocate
from volsched.cache.feeder import Feeder
from volsched.cycle import BOUND, CycleReport, run_cycle
from volsched.framework.decisions import render
from volsched.framework.never import ASIDE_FOR
from volsched.framework.registry import load_config
from volsched.model.cluster import Job
from volsched.model.vocabulary import TaskStatus

#: The stuck ones: a pod that selects a label no node has, a pod bigger than any node, a gang of three
#: pods that select the one node that could hold only one of them even empty.
STUCK = {"default/sel", "default/big", "default/g-0", "default/g-1", "default/g-2"}


Q_GUARANTEE = {"cpu": "14"}


def _objects() -> list[Obj]:
    return [
        node("n1", cpu="4", labels={"zone": "y"}),
        *(node(f"n{i}", cpu="4") for i in range(2, 6)),
        # (a guarantee: the stuck pods standing alone ask q no share, and a queue holding its deserved
        # share would refuse them before any node is tried; with room under it, they are tried on the nodes)
        queue("q", guarantee=Q_GUARANTEE),
        queue("r"),
        pod("busy", cpu="2", node="n2", queue="q"),
        pod("sel", cpu="1", queue="q", node_selector={"disk": "x"}),
        pod("big", cpu="6", queue="q"),
        podgroup("g", queue="r", min_member=3, phase="Inqueue"),  # admitted before the nodes changed
        *(pod(f"g-{i}", group="g", cpu="3", queue="r", node_selector={"zone": "y"}) for i in range(3)),
    ]


class Tried:
    """The pods whose job allocate took a turn for (``Allocate._place``), cycle by cycle."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pods: set[str] = set()
        place = Allocate._place

        def spy(session: Any, queue: Any, job: Job, *args: Any) -> Any:
            self.pods.update(job.tasks)
            return place(session, queue, job, *args)

        monkeypatch.setattr(Allocate, "_place", staticmethod(spy))

    def cycle(self, feeder: Feeder, now: float, config: Any = CONFIG) -> tuple[CycleReport, set[str]]:
        self.pods = set()
        report = run_cycle(feeder, config, FakePort(), now=now)
        return report, self.pods


_rv = iter(range(100, 10_000))


def _apply(feeder: Feeder, obj: Obj) -> None:
    obj["metadata"].update(resourceVersion=str(next(_rv)), uid=f"uid-{obj['metadata']['name']}")
    assert feeder.apply(obj["kind"], obj)


def _said(report: CycleReport) -> dict[str, Any]:
    r = report.result
    return {
        "rejections": r.rejections,
        "events": sorted((e.kind, e.name, e.message) for e in r.events),
        "request": r.queues["q"].request,
    }


def _bound(report: CycleReport) -> set[str]:
    return {b.bind.pod for b in report.binds if b.result == BOUND}


def test_what_fits_on_no_node_is_set_aside_and_still_says_why_and_still_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    feeder = cache(*_objects())
    tried = Tried(monkeypatch)
    first, asked = tried.cycle(feeder, 5000.0)
    assert asked == STUCK  # every pod tried once
    assert not _bound(first)
    for i in range(3):  # a pod arrives and is bound, session after session: the stuck ones are not tried
        _apply(feeder, pod(f"a{i}", cpu="100m", queue="q"))
        report, asked = tried.cycle(feeder, 5001.0 + i)
        assert _bound(report) == {f"default/a{i}"}
        assert asked == {f"default/a{i}"}, asked
        # told what their last try found, as before; counted in the queue's demand
        said, then = _said(report), _said(first)
        assert said["rejections"] == then["rejections"]
        assert said["events"] == then["events"]
        assert report.result.queues["q"].request["cpu"] == first.result.queues["q"].request["cpu"] + 0.1 * (
            i + 1
        )


def _relabel(feeder: Feeder) -> None:
    _apply(feeder, node("n2", cpu="4", labels={"disk": "x"}))


#: (a change after the stuck pods were set aside; the pods the next session tries of them; those it binds)
WAKES: list[tuple[str, Callable[[Feeder], object], set[str], set[str]]] = [
    ("nothing", lambda f: None, set(), set()),
    ("a pod arrives", lambda f: _apply(f, pod("a", cpu="100m", queue="q")), set(), {"default/a"}),
    ("a bound pod leaves", lambda f: f.delete("Pod", {"metadata": {"namespace": "default", "name": "busy"}}),
     set(), set()),
    ("a node joins that fits them", lambda f: _apply(f, node("n6", cpu="20", labels={"disk": "x", "zone": "y"})),
     STUCK, STUCK),
    ("a node is labelled as the pod selects", _relabel, STUCK, {"default/sel"}),
    ("a node's allocatable grows", lambda f: _apply(f, node("n3", cpu="8")), STUCK, {"default/big"}),
    ("a node not ready", lambda f: _apply(f, node("n3", cpu="4", ready=False)), STUCK, set()),
    ("the pod is edited", lambda f: _apply(f, pod("big", cpu="3", queue="q")), {"default/big"},
     {"default/big"}),
    ("the PodGroup changes", lambda f: _apply(f, podgroup("g", queue="r", min_member=1, phase="Inqueue")),
     {"default/g-0", "default/g-1", "default/g-2"}, {"default/g-0"}),
    ("its queue changes", lambda f: _apply(f, queue("q", weight=2, guarantee=Q_GUARANTEE)), STUCK, set()),
]  # fmt: skip


@pytest.mark.parametrize(("what", "change", "tried", "bound"), WAKES, ids=[w[0] for w in WAKES])
def test_a_pod_set_aside_is_tried_again_in_the_session_after_what_may_make_it_fit(
    what: str,
    change: Callable[[Feeder], object],
    tried: set[str],
    bound: set[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    feeder = cache(*_objects())
    spy = Tried(monkeypatch)
    spy.cycle(feeder, 5000.0)
    _, asked = spy.cycle(feeder, 5001.0)  # set aside: not tried
    assert not asked & STUCK
    change(feeder)
    report, asked = spy.cycle(feeder, 5002.0)
    assert asked & STUCK == tried
    assert _bound(report) == bound


def test_another_config_tries_them_again(monkeypatch: pytest.MonkeyPatch) -> None:
    feeder = cache(*_objects())
    spy = Tried(monkeypatch)
    spy.cycle(feeder, 5000.0)
    _, asked = spy.cycle(feeder, 5001.0, load_config(None))
    assert asked & STUCK == STUCK


def test_five_minutes_after_their_last_try_they_are_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    feeder = cache(*_objects())
    spy = Tried(monkeypatch)
    spy.cycle(feeder, 5000.0)
    _, asked = spy.cycle(feeder, 5000.0 + ASIDE_FOR - 1)
    assert not asked & STUCK
    _, asked = spy.cycle(feeder, 5000.0 + ASIDE_FOR)
    assert asked & STUCK == STUCK
    _, asked = spy.cycle(feeder, 5000.0 + ASIDE_FOR + 1)  # and set aside again
    assert not asked & STUCK


def _why(report: CycleReport, pod_key: str) -> str:
    return render(report.result.rejections[f"Pod {pod_key}"])


def test_a_pod_set_aside_says_its_figures_are_those_of_its_last_try_from_that_try_on() -> None:
    """Its figures ("most idle") are not worked out again while it is set aside: it says so, and when it
    is tried again, the same words from the session that set it aside on (no second condition written
    for the note alone); a pod that waits for room (tried every session) says nothing of the kind."""
    feeder = cache(*_objects())
    first = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    big = _why(first, "default/big")
    never = "can never run as it stands: none of the 5 ready node(s) could hold it, even were they empty (it asks cpu 6); "
    assert big.startswith(f"{never}0/5 nodes fit: 5 insufficient cpu (needs 6, most idle 4); set aside, "), (
        big
    )
    assert big.endswith(
        "tried again once a node joins, leaves or changes, the pod or its queue changes, or in 5m; "
        "the figures here are those of its last try"
    ), big
    gang = render(first.result.rejections["PodGroup default/g"])
    assert "the gang or its queue changes" in gang, gang
    assert "the figures here are those of its last try" in _why(first, "default/g-1")
    # every node's idle cpu falls below 4: a try now would say "most idle 2"; set aside, it keeps its words
    for i in range(1, 6):
        _apply(feeder, pod(f"fill{i}", cpu="2", queue="r", node=f"n{i}"))
    later = run_cycle(feeder, CONFIG, FakePort(), now=5001.0)
    assert _why(later, "default/big") == big
    # a node grows, still too small for it: tried again, its figures are now's
    _apply(feeder, node("n4", cpu="5"))
    woken = run_cycle(feeder, CONFIG, FakePort(), now=5002.0)
    assert _why(woken, "default/big").startswith(
        f"{never}0/5 nodes fit: 5 insufficient cpu (needs 6, most idle 3); set aside"
    )


def test_a_pod_waiting_for_room_is_not_said_to_be_set_aside() -> None:
    feeder = cache(
        *(node(f"n{i}", cpu="4") for i in (1, 2)),
        queue("q"),
        *(pod(f"busy{i}", cpu="3", node=f"n{i}", queue="q") for i in (1, 2)),
        pod("w", cpu="2", queue="q"),
    )
    for now in (5000.0, 5001.0):
        report = run_cycle(feeder, CONFIG, FakePort(), now=now)
        why = _why(report, "default/w")
        assert why == "0/2 nodes fit: 2 insufficient cpu (needs 2, most idle 1)", why


def test_what_the_close_says_of_pods_set_aside_is_what_it_would_say_from_scratch() -> None:
    """The close takes again what it said of a pod standing alone set aside (its refusal and event, from
    the same refusal objects): the result is the one a close that kept nothing renders (the same cache
    fed the same objects, what was said dropped before each session), session after session, as pods
    arrive and are bound, and once they are tried again."""
    from volsched.framework.runner import SAID

    stuck = [pod(f"sel{i}", cpu="1", queue="q", node_selector={"disk": "x"}) for i in range(3)]
    kept_said, scratch = cache(*_objects(), *stuck), cache(*_objects(), *stuck)
    changes: list[Callable[[Feeder], object]] = [
        lambda f: None,
        lambda f: None,
        lambda f: _apply(f, pod("a0", cpu="100m", queue="q")),
        lambda f: None,
        _relabel,  # tried again: the selector's pods are bound, big is told anew
        lambda f: None,
        lambda f: _apply(f, pod("a1", cpu="100m", queue="q")),
    ]
    taken = 0
    for i, change in enumerate(changes):
        change(kept_said)
        change(scratch)
        scratch.state._builder.kept.pop(SAID, None)
        taken += len(kept_said.state._builder.kept.get(SAID) or {})
        said = run_cycle(kept_said, CONFIG, FakePort(), now=5000.0 + i).result
        fresh = run_cycle(scratch, CONFIG, FakePort(), now=5000.0 + i).result
        assert said.rejections == fresh.rejections
        assert said.events == fresh.events
        assert list(said.rejections) == list(fresh.rejections)
    assert taken  # there was something said to take again


#: Sessions' cluster changes, one a session: nothing, a pod arriving and one leaving, another node (another
#: node table: summed again, then kept), a pod that can never run.
_ARRIVE_LEAVE_GROW: tuple[Callable[[Feeder], object], ...] = (
    lambda f: None,
    lambda f: None,
    lambda f: _apply(f, pod("a0", cpu="100m", queue="q")),
    lambda f: None,
    lambda f: f.delete("Pod", {"metadata": {"namespace": "default", "name": "sel4"}}),
    lambda f: None,
    lambda f: _apply(f, node("n3", cpu="5")),
    lambda f: None,
    lambda f: _apply(f, pod("sel9", cpu="300m", queue="q", node_selector={"disk": "x"})),
    lambda f: None,
    lambda f: None,
)


def test_nothing_set_aside_or_told_has_a_best_effort_task_so_backfill_still_tries_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Backfill does not ask the pods standing alone that allocate told what their last try found
    (``TOLD``) whether they have a best-effort task pending (98884ba): it relies on allocate never
    setting aside (nor telling) a job with no task it places, even one that fits on no node (a
    best-effort pod or gang selecting a label no node has). Such pods are tried by backfill every
    session, told the same, and bound once a node carries the label."""
    import volsched.actions.allocate as allocate
    from volsched.framework.never import KEPT_ASIDE, Aside

    config = load_config(
        text='actions: "enqueue, allocate, backfill"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
        "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    )
    best_effort = {"default/be-sel", "default/be-g-0", "default/be-g-1"}
    feeder = cache(
        *_objects(),
        pod("be-sel", cpu=None, queue="q", node_selector={"disk": "x"}),
        podgroup("be-g", queue="r", min_member=2, phase="Inqueue"),
        *(pod(f"be-g-{i}", cpu=None, group="be-g", queue="r", node_selector={"disk": "x"}) for i in range(2)),
    )
    told: list[set[str]] = []
    aside: list[dict[str, Job]] = []
    leave = allocate.leave_aside

    def spy(session: Any, tried: list[Job], kept: Any) -> None:
        told.append(set(kept))
        leave(session, tried, kept)
        left = session.snapshot.kept.get(KEPT_ASIDE)
        aside.append({k: session.jobs[k] for k in left.jobs} if isinstance(left, Aside) else {})

    monkeypatch.setattr(allocate, "leave_aside", spy)
    first = run_cycle(feeder, config, FakePort(), now=5000.0)
    said = {k: _why(first, k) for k in ("default/be-sel",)}
    said["default/be-g"] = render(first.result.rejections["PodGroup default/be-g"])
    for i in range(3):  # a pod arrives and is bound, session after session
        _apply(feeder, pod(f"a{i}", cpu="100m", queue="q"))
        report = run_cycle(feeder, config, FakePort(), now=5001.0 + i)
        assert _bound(report) == {f"default/a{i}"}
        assert _why(report, "default/be-sel") == said["default/be-sel"]
        assert render(report.result.rejections["PodGroup default/be-g"]) == said["default/be-g"]
    jobs_aside = {"default/sel", "default/big", "default/g"}  # (the stuck pods' jobs: not vacuous)
    assert told == [set(), *[jobs_aside] * 3], told
    for kept in aside:
        assert set(kept) == jobs_aside
        for job in kept.values():  # each has a pending task allocate places
            assert any(t.status is TaskStatus.PENDING and not t.best_effort for t in job.tasks.values())
    assert not {t for jobs in aside for j in jobs.values() for t in j.tasks} & best_effort
    _relabel(feeder)  # a node carries the label: backfill binds them
    report = run_cycle(feeder, config, FakePort(), now=5010.0)
    assert best_effort <= _bound(report)


def test_what_pods_set_aside_ask_is_summed_once_and_is_a_walk_of_every_asking_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The close's sums of what the jobs that can never run ask (``never_asks``, taken out of a Queue's
    shown request) over the leading pods set aside are kept with the node table and taken again by the
    next session whose asking jobs begin with those very pods: the same floats as a walk over every
    asking job (fractions of a cpu, whose sums' last bits follow the order), session after session, as
    pods arrive, are bound, leave, and the nodes change; and the later sessions walk none of them."""
    import volsched.framework.never as never
    import volsched.framework.runner as runner

    stuck = [
        pod(f"sel{i}", cpu=f"{(i % 7 + 1) * 100}m", queue="q", node_selector={"disk": "x"}) for i in range(9)
    ]
    feeder = cache(*_objects(), *stuck)
    walked: list[int] = []
    asking: list[int] = []
    add, asks = never._add_never, never.never_asks

    def counting(session: Any, jobs: Any, out: Any) -> None:
        walked[-1] += len(jobs)
        add(session, jobs, out)

    def spy(session: Any) -> Any:
        walked.append(0)
        out = asks(session)
        every = session.ledger.asking_jobs()
        asking.append(len(every))
        scratch: dict[str, Any] = {}
        add(session, every, scratch)
        assert {q: v.tobytes() for q, v in out.items()} == {q: v.tobytes() for q, v in scratch.items()}
        return out

    monkeypatch.setattr(never, "_add_never", counting)
    monkeypatch.setattr(runner, "never_asks", spy)
    changes = list(_ARRIVE_LEAVE_GROW)
    for i, change in enumerate(changes):
        change(feeder)
        run_cycle(feeder, CONFIG, FakePort(), now=5000.0 + i)
    assert len(walked) == len(changes)
    # (the first two sessions try the pods, then each walks all but those it takes again)
    assert walked[3] < asking[3] - 5 and walked[-1] < asking[-1] - 5, (walked, asking)


def test_proportion_passes_over_the_pods_set_aside_that_lead_and_asks_what_a_walk_of_every_job_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Proportion's open passes over the pods set aside that lead the asking jobs (``never_lead``: the
    very jobs the last session's close found could never run, their verdicts kept with the node table),
    as its walk passes over each such pod: each queue's allocated, request, inqueue and unit are the
    floats a walk asking every job gives, and the cycle decides and says what it does, session after
    session, as pods arrive, leave and the nodes change; the later sessions pass over them all."""
    import volsched.plugins.proportion as proportion

    stuck = [
        pod(f"sel{i}", cpu=f"{(i % 7 + 1) * 100}m", queue="q", node_selector={"disk": "x"}) for i in range(9)
    ]
    kept, walk = cache(*_objects(), *stuck), cache(*_objects(), *stuck)
    opened: list[list[bytes]] = []
    passed: list[int] = []
    pending_requests, lead = proportion._pending_requests, proportion.never_lead

    def spy(session: Any, row: Any, n: int) -> Any:
        out = pending_requests(session, row, n)
        opened.append([v.tobytes() for v in out])
        return out

    def counted(session: Any, jobs: Any) -> int:
        passed.append(lead(session, jobs))
        return passed[-1]

    monkeypatch.setattr(proportion, "_pending_requests", spy)
    changes = [
        *_ARRIVE_LEAVE_GROW,
        lambda f: _apply(f, queue("q", capability={"cpu": "50m"})),  # other verdicts: past its capability
        lambda f: None,
        lambda f: None,
        lambda f: _apply(f, pod("sel1", cpu="200m", queue="r")),  # a pod of the run changed: it may run
        lambda f: None,
        lambda f: None,
        _relabel,  # another node table: they may run (and are tried)
        lambda f: None,
    ]
    for i, change in enumerate(changes):
        change(kept)
        change(walk)
        with monkeypatch.context() as m:
            m.setattr(proportion, "never_lead", counted)
            report = run_cycle(kept, CONFIG, FakePort(), now=5000.0 + i)
        with monkeypatch.context() as m:
            m.setattr(proportion, "never_lead", lambda session, jobs: 0)
            walked = run_cycle(walk, CONFIG, FakePort(), now=5000.0 + i)
        assert opened[-2] == opened[-1], i
        assert _said(report) == _said(walked), i
        assert _bound(report) == _bound(walked), i
    # (the first sessions try them; from then on each passes over all the pods set aside that lead)
    assert passed[3] >= len(stuck) and passed[10] >= len(stuck) and passed[13] >= len(stuck), passed
    assert not passed[11] and passed[14] < passed[13] and passed[17] < passed[16], passed  # (changed)
