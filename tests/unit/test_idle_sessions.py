"""Sessions that would decide nothing new are skipped (``IdleSkip``): the cache's change counter moves on
every change a session reads and not on what only confirms an assumed bind; a skipped cycle runs
again after a change, a forget, an expired assumption, a new config or the safety interval."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from tests.builders import Obj, gang, node, pdb, pod, queue, resched_config
from tests.unit._cycle_harness import CONFIG, Clock, FakePort, bound_event, cache
from volsched.cycle import BOUND, FAILED, BindOutcome, CycleReport, IdleSkip, run_cycle
from volsched.framework.decisions import Bind, SessionResult
from volsched.framework.registry import load_config
from volsched.model.admitted import BOUND_UNDER
from volsched.model.usage import NodeUsage

MAX_IDLE = 10.0


class HeldPort(FakePort):
    """Holds every bind's outcome until ``release`` (an asynchronous writer still sending)."""

    def __init__(self, script: Mapping[str, Sequence[str]] = {}) -> None:
        super().__init__(script, late=True)
        self.held: list[BindOutcome] = []

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
    ) -> list[BindOutcome]:
        super().bind(binds, pods, lone=lone)
        self.held.extend(self.pending)
        self.pending = []
        return []

    def release(self) -> None:
        self.pending, self.held = self.held, []


def revisited(feeder: Any, key: str, *, rv: int) -> Obj:
    """The cached pod ``key`` again, with only another resourceVersion."""
    raw = feeder.state.raw_pods[key]
    return {**raw, "metadata": {**raw["metadata"], "resourceVersion": str(rv)}}


def a_notes(event: Obj) -> dict[str, str]:
    return dict(event["metadata"].get("annotations") or {})


def new_pod(feeder: Any) -> object:
    b = pod("b")
    b["metadata"].update(resourceVersion="60", uid="uid-b")
    return feeder.apply("Pod", b)


#: (what happens, the event, whether pod a's bind to n1 is assumed before it, whether it is a change)
CHANGES: list[tuple[str, Callable[[Any], object], bool, bool]] = [
    ("a new pod", new_pod, False, True),
    ("a node updated", lambda f: f.apply("Node", {**node("n1", cpu="8"), "kind": "Node"}), False, True),
    (
        "a pod deleted",
        lambda f: f.delete("Pod", {"metadata": {"namespace": "default", "name": "a"}}),
        False,
        True,
    ),
    ("a bind assumed", lambda f: f.assume("default/a", "uid-a", "n1"), False, True),
    ("a bind forgotten", lambda f: f.forget("default/a"), True, True),
    ("a bind finished", lambda f: f.finish("default/a"), True, False),
    (
        "the watch confirming the assumed bind",
        lambda f: f.apply("Pod", bound_event(f, "default/a", "n1", rv=50)),
        True,
        False,
    ),
    (
        # (the bind's bound-under record, which the apiserver copies from the Binding: here not laid
        # over the assumed bind, assumed without one, or laid over in another text, as a signed one is;
        # no news to a session)
        "the watch confirming the assumed bind with the record it wrote",
        lambda f: f.apply(
            "Pod",
            (
                lambda e: {
                    **e,
                    "metadata": {**e["metadata"], "annotations": {**a_notes(e), BOUND_UNDER: "{}"}},
                }
            )(bound_event(f, "default/a", "n1", rv=50)),
        ),
        True,
        False,
    ),
    (
        "the watch confirming the bind of a pod that already succeeded",
        lambda f: f.apply(
            "Pod", {**bound_event(f, "default/a", "n1", rv=50), "status": {"phase": "Succeeded"}}
        ),
        True,
        True,
    ),
    (
        "the watch confirming the bind of a pod being deleted",
        lambda f: f.apply(
            "Pod",
            (lambda e: {**e, "metadata": {**e["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}})(
                bound_event(f, "default/a", "n1", rv=50)
            ),
        ),
        True,
        True,
    ),
    (
        "the watch binding it elsewhere",
        lambda f: f.apply("Pod", bound_event(f, "default/a", "n2", rv=50)),
        True,
        True,
    ),
    (
        "the watch binding it unassumed",
        lambda f: f.apply("Pod", bound_event(f, "default/a", "n1", rv=50)),
        False,
        True,
    ),
    ("a stale event", lambda f: f.apply("Pod", {**f.state.raw_pods["default/a"]}), True, False),
    ("a node's heartbeat", lambda f: f.apply("Node", {**node("n1", cpu="4"), "kind": "Node"}), False, False),
    (
        "a pod's new resourceVersion only",
        lambda f: f.apply("Pod", revisited(f, "default/a", rv=70)),
        False,
        False,
    ),
    ("new usage figures", lambda f: f.state.set_usage({"n1": NodeUsage(90.0, 50.0, 4990.0)}), False, True),
    ("the same (no) usage figures", lambda f: f.state.set_usage({}), False, False),
]


@pytest.mark.parametrize(("what", "event", "in_flight", "counts"), CHANGES, ids=[c[0] for c in CHANGES])
def test_the_change_counter_moves_on_what_a_session_reads_only(
    what: str, event: Callable[[Any], object], in_flight: bool, counts: bool
) -> None:
    feeder = cache(node("n1", cpu="4"), node("n2", cpu="4"), pod("a"))
    if in_flight:
        feeder.assume("default/a", "uid-a", "n1")
    before = feeder.state.changes
    event(feeder)
    assert (feeder.state.changes != before) is counts


#: (the namespace of a budget in the cache or None, what else the pod's status shows, whether it counts)
READINESS: list[tuple[str | None, dict[str, str], bool]] = [
    (None, {}, False),
    ("other", {}, False),
    ("default", {}, True),
    (None, {"phase": "Failed"}, True),
]


@pytest.mark.parametrize(("budget_ns", "more", "counts"), READINESS)
def test_a_pods_readiness_is_a_change_only_where_a_disruption_budget_may_read_it(
    budget_ns: str | None, more: dict[str, str], counts: bool
) -> None:
    objects = [node("n1", cpu="4"), pod("a", node="n1")]
    if budget_ns is not None:
        objects.append(pdb("keep", {"matchLabels": {"app": "x"}}, ns=budget_ns, minAvailable=1))
    feeder = cache(*objects)
    before = feeder.state.changes
    raw = feeder.state.raw_pods["default/a"]
    status = {**raw["status"], **more, "conditions": [{"type": "Ready", "status": "False"}]}
    feeder.apply("Pod", {**revisited(feeder, "default/a", rv=70), "status": status})
    assert feeder.state.tasks["default/a"].runtime.unready  # the task takes it either way
    assert (feeder.state.changes != before) is counts


def queue_q() -> Obj:
    return queue("q", weight=1)


class World:
    """A cache, a port and an IdleSkip on clocks the test moves."""

    def __init__(self, *objects: Obj, port: FakePort | None = None) -> None:
        self.feeder_clock, self.idle_clock = Clock(), Clock()
        self.feeder = cache(*objects, clock=self.feeder_clock)
        self.port = port or FakePort()
        self.idle = IdleSkip(max_idle=MAX_IDLE, clock=self.idle_clock)
        self.config = CONFIG

    def cycle(self) -> CycleReport:
        return run_cycle(self.feeder, self.config, self.port, now=5000.0, idle=self.idle)

    def settle_idle(self) -> None:
        """Cycles until one is skipped (a session that decides something is followed by one that runs)."""
        for _ in range(4):
            if self.cycle().skipped:
                return
        raise AssertionError("never idle")


def test_a_session_that_placed_every_pending_pod_is_not_followed_by_another_while_nothing_changes() -> None:
    w = World(node("n1", cpu="4"), pod("a"))
    first = w.cycle()
    assert not first.skipped and [b.pod for b in first.result.binds] == ["default/a"]
    assert first.result.waiting == 0
    # No pod of ours is pending: allocate and enqueue have nothing to decide, and the bind the session
    # assumed is its own change.
    skipped = w.cycle()
    assert skipped.skipped and w.idle.skipped == 1
    assert skipped.result == SessionResult()  # (what the operator reads of a skipped cycle: nothing)
    # The API confirms the bind: still nothing new.
    w.feeder.apply("Pod", bound_event(w.feeder, "default/a", "n1", rv=50))
    assert w.cycle().skipped


def test_a_gang_placed_whole_is_not_followed_by_a_session_for_the_phase_its_session_gave_it() -> None:
    w = World(node("n1", cpu="4"), queue_q(), *gang("g", size=2, phase="Pending"))
    first = w.cycle()
    assert sorted(b.pod for b in first.result.binds) == ["ns/g-0", "ns/g-1"]
    assert w.feeder.state.podgroups["ns/g"].phase.value == "Running"  # written back: the session's own
    assert w.cycle().skipped


def test_a_session_that_left_pods_waiting_is_followed_by_one_that_runs() -> None:
    w = World(node("n1", cpu="4"), pod("a", cpu="2"), pod("big", cpu="8"))
    first = w.cycle()
    assert [b.pod for b in first.result.binds] == ["default/a"] and first.result.waiting == 1
    second = w.cycle()  # the first decided a bind and left a pod pending: this one runs
    assert not second.skipped and second.result.binds == []
    assert w.cycle().skipped


def test_a_new_pod_makes_the_next_session_run() -> None:
    w = World(node("n1", cpu="4"), pod("a"))
    w.settle_idle()
    b = pod("b")
    b["metadata"].update(resourceVersion="60", uid="uid-b")
    w.feeder.apply("Pod", b)
    report = w.cycle()
    assert not report.skipped and [x.pod for x in report.result.binds] == ["default/b"]


def test_a_failed_bind_settled_while_idle_makes_the_session_run_and_bind_again() -> None:
    w = World(node("n1", cpu="4"), pod("a"), port=HeldPort({"default/a": [FAILED]}))
    assert [b.pod for b in w.cycle().result.binds] == ["default/a"]
    w.settle_idle()  # the bind is still in flight: nothing new to decide
    w.port.release()  # ... and it failed: the pod is forgotten, pending again
    report = w.cycle()
    assert not report.skipped
    assert [o.result for o in report.binds] == [FAILED]
    assert [b.pod for b in report.result.binds] == ["default/a"]


def test_a_completed_bind_is_no_change_but_its_expiry_is() -> None:
    w = World(node("n1", cpu="4"), pod("a"), port=HeldPort())
    w.cycle()
    w.settle_idle()
    w.port.release()
    report = w.cycle()  # settles the bind as completed: its assumption's time to live starts
    assert report.skipped and [o.result for o in report.binds] == [BOUND]
    w.feeder_clock.now += 31  # the assume_ttl (30 s) is over and the watch never confirmed it
    assert not w.cycle().skipped
    assert w.cycle().skipped


#: CONFIG with load-aware placement: the age of usage figures decides whether they count.
USAGE_CONFIG = load_config(
    text='actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}, {name: usage}]\n"
)


def test_while_pods_wait_a_session_runs_after_the_safety_interval_when_a_plugin_reads_the_clock() -> None:
    w = World(node("n1", cpu="4"), pod("a", cpu="2"), pod("big", cpu="8"))
    w.config = USAGE_CONFIG
    w.settle_idle()
    w.idle_clock.now += MAX_IDLE - 0.5
    assert w.cycle().skipped
    w.idle_clock.now += 0.5
    assert not w.cycle().skipped
    assert w.cycle().skipped  # and the interval counts from that session


def test_while_pods_wait_no_session_runs_for_time_alone_when_no_plugin_reads_the_clock() -> None:
    w = World(node("n1", cpu="4"), pod("a", cpu="2"), pod("big", cpu="8"))
    owed = [False]
    w.idle.owed = lambda: owed[0]
    w.settle_idle()
    w.idle_clock.now += 5 * MAX_IDLE
    assert w.cycle().skipped  # the same cache, config and carryover: the same (empty) decision
    owed[0] = True  # ... but a status write to retry
    assert not w.cycle().skipped


def test_with_nothing_pending_the_safety_interval_runs_a_session_only_while_the_port_owes_a_retry() -> None:
    w = World(node("n1", cpu="4"), pod("a"))
    owed = [False]
    w.idle.owed = lambda: owed[0]
    w.settle_idle()
    w.idle_clock.now += 5 * MAX_IDLE
    assert w.cycle().skipped  # nothing pending, nothing owed: no time-based input can decide anything
    owed[0] = True  # a status write failed: a session's status writes retry it
    assert not w.cycle().skipped
    assert w.cycle().skipped  # retried at most once every max_idle
    w.idle_clock.now += MAX_IDLE
    assert not w.cycle().skipped


def test_with_an_action_that_moves_running_pods_a_session_still_follows_and_the_interval_holds() -> None:
    w = World(node("n1", cpu="4"), pod("a"))
    w.config = resched_config()
    assert [b.pod for b in w.cycle().result.binds] == ["default/a"]
    assert not w.cycle().skipped  # shuffle may move a running pod: the binds are news to it
    assert w.cycle().skipped
    w.idle_clock.now += MAX_IDLE
    assert not w.cycle().skipped


def test_new_usage_figures_make_the_next_session_run_and_the_same_figures_again_do_not() -> None:
    w = World(node("n1", cpu="4"), pod("a"))
    w.settle_idle()
    figures = {"n1": NodeUsage(cpu=90.0, memory=50.0, measured_at=4990.0)}
    w.feeder.state.set_usage(figures)  # load-aware placement has new figures: not to wait max_idle
    assert not w.cycle().skipped
    w.feeder.state.set_usage(dict(figures))
    assert w.cycle().skipped
    w.feeder.state.set_usage({"n1": NodeUsage(cpu=20.0, memory=50.0, measured_at=4995.0)})
    assert not w.cycle().skipped


def test_a_new_config_makes_the_next_session_run() -> None:
    w = World(node("n1", cpu="4"), pod("a"))
    w.settle_idle()
    w.config = load_config(text='actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}]\n')
    assert not w.cycle().skipped
    assert w.cycle().skipped


def test_without_idle_skip_every_cycle_runs_a_session() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"))
    port = FakePort()
    reports = [run_cycle(feeder, CONFIG, port, now=5000.0) for _ in range(4)]
    assert not any(r.skipped for r in reports)


def test_the_watch_confirming_assumed_binds_keeps_their_tasks_so_the_next_snapshot_rebuilds_nothing() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"))
    for key in ("default/a", "default/b"):
        feeder.assume(key, f"uid-{key[8:]}", "n1")
        feeder.finish(key)
    feeder.state.snapshot(now=5000.0)
    held = dict(feeder.state.tasks)
    for rv, key in enumerate(("default/a", "default/b"), start=50):
        feeder.apply("Pod", bound_event(feeder, key, "n1", rv=rv))
    assert not feeder.is_assumed("default/a") and not feeder.is_assumed("default/b")  # confirmed
    assert all(feeder.state.tasks[k] is t for k, t in held.items())
    feeder.state.snapshot(now=5000.0)
    assert feeder.state._builder.rebuilt == 0


def test_pods_admitted_each_session_but_placed_nowhere_do_not_make_every_session_run() -> None:
    w = World(node("n1", cpu="8", pods="4"), *(pod(f"p{i}") for i in range(6)))
    w.config = load_config(None)  # room for 8 cpu is room for 6 pods to admission; the node takes 4
    first = w.cycle()
    assert len(first.result.binds) == 4 and first.result.waiting == 2
    second = w.cycle()
    assert not second.skipped and second.result.binds == [] and second.result.admits  # admitted again
    assert w.cycle().skipped  # nothing kept of the admission of a pod without a group: nothing new
