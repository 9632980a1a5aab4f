"""The record a bind writes (``scheduling.volsched.io/bound-under``), laid over its assumed bind (note17
Found 2). Between the bind and its echo the cache had the pod on its node without the record the bind
wrote, so what reads the record read a pod bound by no one: a PodGroup older than a pod standing alone,
taken in during those milliseconds (mended, or its event late), counted the running pod as its member; a
gang's pod whose PodGroup was deleted then was a stray, not an orphan. The cache now shows the record with
the node from the assumption on, and takes it off with the node when the bind is forgotten."""

from __future__ import annotations

from tests.builders import Obj, node, pod, podgroup, queue
from tests.unit._cycle_harness import CONFIG, Clock, FakePort, bound_event, cache
from volsched.cache.feeder import Feeder
from volsched.cycle import BOUND, FAILED, UNKNOWN, run_cycle
from volsched.model.admitted import BOUND_UNDER, STANDING_ALONE, read_bound

#: PodGroup x was made at 00:00:01, pod x (standing alone) at 00:00:05: by the creation times alone the
#: PodGroup came first, and x is its member (tests/unit/test_podgroup_name_taken.py).
_PODGROUP_MADE, _POD_MADE = "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z"


def _x_pending(clock: Clock | None = None) -> tuple[Feeder, Obj]:
    """Pod x, standing alone, waits; PodGroup x (older, minMember 2) is not in force yet (its event late,
    or refused as invalid and mended later): returned, to be taken in later."""
    feeder = cache(
        node("n1", cpu="4"), queue("q"), pod("x", cpu="1", queue="q", created=_POD_MADE), clock=clock
    )
    group = podgroup("x", queue="q", min_member=2, created=_PODGROUP_MADE)
    group["metadata"].update(resourceVersion="50", uid="uid-pg-x")
    return feeder, group


def _record(feeder: Feeder, key: str) -> tuple[str | None, str | None]:
    """The record on the cached pod ``key``: its task's, and its raw pod's."""
    raw = feeder.state.raw_pods[key]["metadata"].get("annotations") or {}
    return feeder.state.tasks[key].annotations.get(BOUND_UNDER), raw.get(BOUND_UNDER)


def _member(feeder: Feeder) -> bool:
    """Whether the next snapshot counts pod x as a member of PodGroup x (else x keeps its name, and the
    PodGroup is told so)."""
    snap = feeder.state.snapshot(now=2.0)
    job = snap.jobs["default/x"]
    told = {obj: reason for obj, reason, _ in snap.problems}
    if job.podgroup is None:
        assert list(job.tasks) == ["default/x"] and told["PodGroup default/x"] == "PodGroupNameTaken"
        return False
    assert "PodGroup default/x" not in told
    return True


def test_a_podgroup_taken_in_between_the_bind_and_its_echo_does_not_wrap_the_pod_bound_standing_alone() -> (
    None
):
    feeder, group = _x_pending()
    port = FakePort()
    report = run_cycle(feeder, CONFIG, port, now=5000.0)
    assert [(o.bind.pod, o.bind.bound_under, o.result) for o in report.binds] == [
        ("default/x", STANDING_ALONE, BOUND)
    ]
    assert _record(feeder, "default/x") == (STANDING_ALONE, STANDING_ALONE)  # before: (None, None)
    feeder.apply("PodGroup", group)  # (mended, or its event late) before the bind's echo
    assert not _member(feeder)  # before: x, running, PodGroup x's member (a gang of 2 below its minimum)
    feeder.apply("Pod", bound_event(feeder, "default/x", "n1", rv=60))  # the echo: the record with the node
    assert _record(feeder, "default/x") == (STANDING_ALONE, STANDING_ALONE)
    assert not _member(feeder)


def test_the_record_laid_over_a_bind_goes_with_it_when_the_bind_fails() -> None:
    feeder, group = _x_pending()
    report = run_cycle(feeder, CONFIG, FakePort({"default/x": [FAILED]}), now=5000.0)
    assert [o.result for o in report.binds] == [FAILED]
    assert feeder.state.tasks["default/x"].node_name is None
    assert _record(feeder, "default/x") == (None, None)
    feeder.apply("PodGroup", group)
    assert _member(feeder)  # pending, never bound: made after the PodGroup, its member


def test_the_record_laid_over_a_bind_of_unknown_outcome_goes_with_it_when_its_time_to_live_ends() -> None:
    clock = Clock()
    feeder, _ = _x_pending(clock)
    report = run_cycle(feeder, CONFIG, FakePort({"default/x": [UNKNOWN]}), now=5000.0)
    assert [o.result for o in report.binds] == [UNKNOWN]
    assert _record(feeder, "default/x") == (STANDING_ALONE, STANDING_ALONE)
    clock.now += 31
    assert feeder.expire() == 1
    assert feeder.state.tasks["default/x"].node_name is None
    assert _record(feeder, "default/x") == (None, None)


def test_a_pods_own_annotation_under_the_record_laid_over_is_the_apis_again_once_the_bind_is_forgotten() -> (
    None
):
    """The API's pod carries some text under the record's key before its bind (a tenant's, where no policy
    keeps it off): the bind's record is laid over it while assumed, events meanwhile included, and the
    API's text (as the last event showed it) is back once the bind is forgotten."""
    feeder = cache(
        node("n1", cpu="4"), queue("q"), pod("x", cpu="1", queue="q", annotations={BOUND_UNDER: "a"})
    )
    assert feeder.assume("default/x", "uid-x", "n1", record=STANDING_ALONE)
    assert _record(feeder, "default/x") == (STANDING_ALONE, STANDING_ALONE)
    raw = feeder.state.raw_pods["default/x"]
    meanwhile = {
        **raw,
        "metadata": {**raw["metadata"], "resourceVersion": "60", "annotations": {BOUND_UNDER: "b"}},
    }
    meanwhile["spec"] = {
        k: v for k, v in raw["spec"].items() if k != "nodeName"
    }  # (unbound, as the API has it)
    feeder.apply("Pod", meanwhile)
    assert feeder.state.tasks["default/x"].node_name == "n1"
    assert _record(feeder, "default/x") == (STANDING_ALONE, STANDING_ALONE)
    feeder.forget("default/x")
    assert feeder.state.tasks["default/x"].node_name is None
    assert _record(feeder, "default/x")[1] == "b"


def test_a_gangs_pod_whose_podgroup_goes_between_the_bind_and_its_echo_is_an_orphan_not_a_stray() -> None:
    """The same window for a gang's record: PodGroup lo deleted after its one pod's bind, before the echo.
    With the record its bind wrote, the pod is an orphan (a job of its own in the queue it was bound
    under), as it is once the echo comes; before, a stray that no queue counts."""
    group = podgroup("lo", queue="q", min_member=1, phase="Inqueue")
    feeder = cache(node("n1", cpu="4"), queue("q"), group, pod("lo-0", cpu="1", group="lo"))
    report = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    assert [o.bind.pod for o in report.binds] == ["default/lo-0"]
    record = report.binds[0].bind.bound_under
    assert read_bound(record) is not None
    assert _record(feeder, "default/lo-0") == (record, record)
    feeder.delete("PodGroup", {**group, "metadata": {**group["metadata"], "resourceVersion": "60"}})
    snap = feeder.state.snapshot(now=2.0)
    assert [t.key for t in snap.foreign_tasks] == []  # before: ["default/lo-0"]
    assert snap.jobs["default/lo-0"].queue == "q"
