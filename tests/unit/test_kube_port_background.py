"""KubePort in the background: a session never waits on the network for its binds (fault injection).

The server below holds every bind until the test opens its gate, so what a cycle returns while binds
are in flight is what the operator's session would see. The cycle is the real one (run_cycle on a
Feeder); the outcomes come back through ``settle`` in a later cycle.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

import volsched.kube.port as port_module
import volsched.operator.sessions as sessions_module
from tests.builders import node, pod
from tests.fences import Fence
from tests.unit._background_port import background_port
from tests.unit._cycle_harness import CONFIG, cache, nodes_of, operator_at
from tests.unit._scripted_server import OK, ScriptedServer, loopback_config
from volsched.cycle import (
    BOUND,
    CONFLICT,
    FAILED,
    FENCED,
    GONE,
    SKIPPED,
    UNKNOWN,
    BindOutcome,
    CycleReport,
    run_cycle,
)
from volsched.framework.decisions import Bind
from volsched.framework.registry import PluginsAhead
from volsched.kube.port import KubePort
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched.operator import Operator

#: How long the server holds a bind at most when the test never opens the gate (a blocking port would
#: then return its outcomes late, and the test fails instead of hanging).
HOLD = 20.0
#: The session thread's patience in the tests of the hand-over (the server holds the answer past it).
PATIENCE = 0.02


class GatedServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.arrived = threading.Semaphore(0)
        self.hold = ("/binding",)
        #: The first bind held is then dropped unanswered (its connection closed).
        self.drop_first = False

    def before_answer(self, path: str) -> None:
        if path.endswith(self.hold):
            self.arrived.release()
            self.gate.wait(HOLD)
            if self.drop_first:
                self.drop_first = False
                raise ConnectionAbortedError("dropped by the test, unanswered")


@pytest.fixture
def server() -> Iterator[GatedServer]:
    s = GatedServer()
    yield s
    s.gate.set()
    s.httpd.shutdown()


@pytest.fixture
def port(server: GatedServer, fence: Fence) -> Iterator[KubePort]:
    with background_port(server, fence, workers=2) as p:
        yield p
        server.gate.set()
        p.drain(HOLD)


def _cycle(feeder: Any, port: KubePort) -> CycleReport:
    return run_cycle(feeder, CONFIG, port, now=5000.0)


def _leading(op: Operator, monkeypatch: pytest.MonkeyPatch) -> None:
    """``op`` holds its Lease (a fence held open, taken at 1.0), has read its ConfigMap and caught up, and
    caches node n1 (4 cpu) and pod a, pending."""
    lease = Fence()
    for name in ("renew_if_due", "time_left", "call_timeout"):
        monkeypatch.setattr(op.lease, name, getattr(lease, name))
    monkeypatch.setattr(op.lease, "ensure", lease.renew_if_due)
    monkeypatch.setattr(op.lease, "acquired_at", 1.0)
    monkeypatch.setattr(op.reloader, "reload", lambda **_: None)
    monkeypatch.setattr(op.reloader, "known", True)  # the ConfigMap was read
    monkeypatch.setattr(op.volcano, "follow", lambda **_: None)
    op.loop.pods_read_at = math.inf  # caught up already
    for obj in (node("n1", cpu="4"), pod("a")):
        obj["metadata"].update(resourceVersion="1", uid=f"uid-{obj['metadata']['name']}")
        op.feeder.apply(obj["kind"], obj)


def _sent(server: GatedServer) -> list[str]:
    return sorted(r.path.split("/")[-2] for r in server.sent("/binding"))


def test_a_session_does_not_wait_for_its_binds_and_the_next_plans_on_them_without_binding_twice(
    server: GatedServer, port: KubePort
) -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"), pod("c"))
    first = _cycle(feeder, port)
    assert first.binds == []  # nothing has come back: the cycle did not wait
    assert len(first.result.binds) == 3
    assert nodes_of(feeder) == {"default/a": "n1", "default/b": "n1", "default/c": "n1"}  # assumed
    assert server.arrived.acquire(timeout=HOLD)  # a bind is at the server, held there
    second = _cycle(feeder, port)  # while the binds are in flight
    assert second.result.binds == [] and second.binds == []
    assert port.binds_in_flight == 3
    server.gate.set()
    assert port.drain(HOLD)
    third = _cycle(feeder, port)
    assert sorted((o.bind.pod, o.result) for o in third.binds) == [
        ("default/a", BOUND),
        ("default/b", BOUND),
        ("default/c", BOUND),
    ]
    assert third.result.binds == []
    assert _sent(server) == ["a", "b", "c"]  # each sent once


def test_a_bind_that_fails_in_the_background_is_planned_again_by_a_later_session(
    server: GatedServer, port: KubePort
) -> None:
    server.script["/pods/b/binding"] = [(500, {}, {"kind": "Status", "message": "etcd timeout"}), OK]
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"))
    assert _cycle(feeder, port).binds == []  # held by the server: nothing has come back yet
    server.gate.set()
    assert port.drain(HOLD)
    # The next cycle settles a (bound) and b (failed: forgotten, pending again), then plans b again:
    # b alone, nothing in flight, so its bind is sent on the cycle's thread and comes back in it.
    settled = _cycle(feeder, port)
    outcomes = [(o.bind.pod, o.result) for o in settled.binds]
    assert sorted(outcomes[:2]) == [("default/a", BOUND), ("default/b", FAILED)]  # settled first
    assert outcomes[2:] == [("default/b", BOUND)]
    assert [b.pod for b in settled.result.binds] == ["default/b"]
    assert port.drain(HOLD)
    last = _cycle(feeder, port)
    assert last.binds == [] and last.result.binds == []
    assert nodes_of(feeder) == {"default/a": "n1", "default/b": "n1"}
    assert _sent(server) == ["a", "b", "b"]


@pytest.mark.parametrize("how", ["lease-lost", "lease-lost-and-taken-again"])
def test_binds_queued_when_the_lease_is_lost_are_never_sent(
    server: GatedServer, port: KubePort, fence: Fence, how: str
) -> None:
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(6)))
    _cycle(feeder, port)
    for _ in range(2):  # both workers hold a bind on the server; four wait in the port
        assert server.arrived.acquire(timeout=HOLD)
    fence.open = False
    if how == "lease-lost-and-taken-again":
        fence.open, fence.acquired_at = True, 2.0  # a new holding: binds decided before are void
    server.gate.set()
    assert port.drain(HOLD)
    outcomes = port.settle()[0]
    assert sorted(o.result for o in outcomes) == [BOUND, BOUND, FENCED, FENCED, FENCED, FENCED]
    assert len(server.sent("/binding")) == 2


def test_binds_streamed_from_a_session_planned_under_an_earlier_holding_are_never_sent(
    server: GatedServer, port: KubePort, fence: Fence
) -> None:
    """The session was planned under holding 1; the Lease was lost and taken again (holding 2) before
    its commits streamed: not one bind goes out, however the Lease stands when it is handed over."""
    server.gate.set()
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(3)))
    port.plan_under(fence.acquired_at)
    fence.acquired_at = 2.0
    report = _cycle(feeder, port)
    assert port.drain(HOLD)
    assert sorted(o.result for o in [*report.binds, *port.settle()[0]]) == [FENCED] * 3
    assert server.sent("/binding") == []


def test_the_one_bind_of_a_lone_pod_is_sent_on_the_sessions_thread_and_answered_within_its_cycle(
    server: GatedServer, port: KubePort
) -> None:
    """An answer that begins within the session thread's patience (here: however long it takes, as every
    unit test has it: conftest) is read there, in the session."""
    server.gate.set()
    feeder = cache(node("n1", cpu="4"), pod("a"))
    report = _cycle(feeder, port)
    assert [(o.bind.pod, o.result) for o in report.binds] == [("default/a", BOUND)]  # not left to settle
    assert port.bind_workers == 0 and port.binds_in_flight == 0  # no worker took it
    assert _sent(server) == ["a"]


@pytest.mark.parametrize("answer", ["bound", "refused", "lost"])
def test_a_lone_pods_bind_whose_answer_is_slow_is_left_to_a_worker_and_the_session_goes_on(
    server: GatedServer, port: KubePort, answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's thread (the pod watch's, for an arriving pod) waits at most INLINE_PATIENCE for the
    answer to begin: the apiserver holding it, the answer is read by a bind worker and the session ends,
    its thread free for the next pod's event. The bind is sent once, on the session's thread; its outcome
    comes through ``settle``, as a worker's: bound, refused (FAILED, the pod planned again), or lost
    (the connection closed unanswered: sent again, as any bind whose answer was lost). Before, the session
    waited for the answer however long the apiserver took."""
    monkeypatch.setattr(port_module, "INLINE_PATIENCE", PATIENCE)
    if answer == "refused":
        server.script["/pods/a/binding"] = [(500, {}, {"kind": "Status", "message": "etcd timeout"})]
    feeder = cache(node("n1", cpu="4"), pod("a"))
    if answer == "lost":
        server.drop_first = True
    report = _cycle(feeder, port)
    assert report.binds == [] and [b.pod for b in report.result.binds] == ["default/a"]  # not waited for
    assert server.arrived.acquire(timeout=HOLD)  # the bind is at the server, held there
    assert port.binds_left_to_workers == 1 and port.binds_in_flight == 1
    server.gate.set()
    assert port.drain(HOLD)
    outcomes = [(o.bind.pod, o.result) for o in port.settle()[0]]
    if answer == "refused":
        assert outcomes == [("default/a", FAILED)]
        assert _sent(server) == ["a"]
    else:
        assert outcomes == [("default/a", BOUND)]
        assert _sent(server) == (["a", "a"] if answer == "lost" else ["a"])
    assert port.binds_in_flight == 0


def test_a_lone_pod_arriving_while_binds_are_in_flight_goes_to_the_workers_and_waits_in_line(
    server: GatedServer, port: KubePort
) -> None:
    """Sent on the session's thread, it could overtake the binds before it and hold the session behind
    a slow answer: only a pod with nothing in flight is sent there."""
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"))
    assert _cycle(feeder, port).binds == []
    assert server.arrived.acquire(timeout=HOLD)  # a's or b's bind held at the server
    feeder.apply("Pod", pod("c"))
    third = _cycle(feeder, port)  # c alone pending: still the workers' (the cycle returns at once)
    assert third.binds == [] and [b.pod for b in third.result.binds] == ["default/c"]
    assert port.binds_in_flight == 3
    server.gate.set()
    assert port.drain(HOLD)
    assert sorted((o.bind.pod, o.result) for o in port.settle()[0]) == [
        ("default/a", BOUND),
        ("default/b", BOUND),
        ("default/c", BOUND),
    ]


def test_the_operator_plans_each_session_under_the_holding_its_leadership_was_settled_with(
    server: GatedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SessionLoop.run_once hands the port the holding read when it made sure of the Lease: a holding that
    changes afterwards (here while the session's inputs are gathered) fences the session's binds."""
    server.gate.set()
    with operator_at(tmp_path, server.port) as op:
        _leading(op, monkeypatch)

        def taken_again(
            now: float,
        ) -> None:  # lost and taken again after the session's leadership was settled
            op.lease.acquired_at = 2.0

        monkeypatch.setattr(op.usage, "refresh", taken_again)
        ran = op.loop.run_once()
        assert ran is not None and [b.pod for b in ran[0].binds] == ["default/a"]
        assert (
            op.loop.session_cpu is not None and op.loop.session_cpu > 0
        )  # the pacer's gap: its thread's CPU
        assert op.port.drain(HOLD)
        assert [o.result for o in [*ran[1].binds, *op.port.settle()[0]]] == [FENCED]
        assert server.sent("/binding") == []


def test_the_next_session_opens_the_plugins_made_after_the_last_one_under_the_same_config(
    server: GatedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After each session the session thread makes the config's plugins for the next one (warm, off the
    next arriving pod's way) and hands them over with the config they were made from: that session opens
    those very objects, fresh (never opened before); under another config object it makes its own (the
    session's check, ``open_session``)."""
    server.gate.set()
    given: list[PluginsAhead | None] = []
    real = sessions_module.run_cycle

    def spy(*args: Any, plugins: PluginsAhead | None = None, **kwargs: Any) -> Any:
        given.append(plugins)
        return real(*args, plugins=plugins, **kwargs)

    monkeypatch.setattr(sessions_module, "run_cycle", spy)
    with operator_at(tmp_path, server.port) as op:
        _leading(op, monkeypatch)
        assert op.loop.run_once() is not None
        ahead = op.loop._plugins_ahead
        assert ahead is not None and ahead.config is op.reloader.config
        proportion = next(p for p in ahead.plugins if p.name == "proportion")
        assert not hasattr(proportion, "attrs")  # never opened
        op.feeder.apply("Pod", {**pod("b"), "metadata": {**pod("b")["metadata"], "resourceVersion": "2"}})
        assert op.loop.run_once() is not None
        assert given[0] is None  # the first session made its own
        assert given[1] is ahead
        assert hasattr(proportion, "attrs")  # that session opened them
        last = op.loop._plugins_ahead
        assert last is not None and last is not ahead
        monkeypatch.setattr(op.reloader, "config", replace(op.reloader.config))  # another config object
        third = op.loop.run_once()
        assert third is not None and not third[1].skipped  # (a session ran, and opened its plugins)
        assert given[2] is last  # handed over: the session checks whose they are
        # the plugins made for the last config are not used
        assert not any(hasattr(p, "attrs") for p in last.plugins if p.name == "proportion")


def test_a_port_closed_under_a_cycle_reports_its_binds_failed_unsent_and_never_raises(
    server: GatedServer, port: KubePort
) -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"))
    port.close()  # the operator is shutting down
    report = _cycle(feeder, port)
    assert [(o.bind.pod, o.result) for o in report.binds] == [("default/a", FAILED)]
    assert not feeder.is_assumed("default/a") and nodes_of(feeder) == {"default/a": None}
    assert server.sent("/binding") == []


def test_binds_still_waiting_when_the_port_closes_come_back_failed_unsent_each_once(
    server: GatedServer, fence: Fence
) -> None:
    """Every bind handed over gets its one outcome (the Port contract), also those a closing port never
    sends: a bind left without one would hold its assumption and the port's count in flight for good."""
    with background_port(server, fence, workers=1) as port:
        feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"), pod("c"))
        _cycle(feeder, port)
        assert server.arrived.acquire(timeout=HOLD)  # the one worker holds a bind on the server, two wait
        closing = threading.Thread(target=port.close)
        closing.start()
        while not port.closed:
            closing.join(0.01)
        server.gate.set()  # the bind on the server completes; the waiting ones are not sent
        closing.join(HOLD)
        assert not closing.is_alive()
        assert sorted((o.bind.pod, o.result) for o in port.settle()[0]) == [
            ("default/a", BOUND),
            ("default/b", FAILED),
            ("default/c", FAILED),
        ]
        assert port.binds_in_flight == 0
        assert _sent(server) == ["a"]


def test_past_the_first_bind_workers_more_start_only_while_a_backlog_waits(
    server: GatedServer, fence: Fence
) -> None:
    """A burst of a few hundred binds went out sooner through 32 workers than through 128 (each more
    in flight a thread and a connection); a backlog of a thousand sooner through 128. Two workers
    start as binds wait; past them, more only while more than 10 binds wait: three binds held at the
    server keep two workers, a burst of 40 more brings all 8."""
    feeder = cache(node("n1", cpu="64"), *(pod(f"p{i}", cpu="100m") for i in range(43)))
    binds = [Bind(pod=f"default/p{i}", uid=f"uid-p{i}", node="n1") for i in range(43)]
    with background_port(server, fence, workers=8) as port:
        port.writer.settings.bind_workers_first, port.writer.settings.bind_backlog = 2, 10
        done = port.bind(binds[:3], feeder.pods(b.pod for b in binds[:3]))
        for _ in range(2):
            assert server.arrived.acquire(timeout=HOLD)  # two held at the server, one waiting
        assert port.bind_workers == 2
        done += port.bind(binds[3:], feeder.pods(b.pod for b in binds[3:]))
        assert port.bind_workers == 8
        server.gate.set()
        assert port.drain(HOLD)
        done += port.settle()[0]
        assert sorted(o.bind.pod for o in done if o.result == BOUND) == sorted(b.pod for b in binds)


def test_fewer_bind_workers_than_the_first_ones_made_in_code_are_the_most_that_start(
    server: GatedServer, fence: Fence
) -> None:
    """The parser refuses more first bind workers than bind workers, but settings made in code with fewer
    bind workers keep the default first ones (32): they start no more than ``bind_workers``, and the binds
    past them wait for one of them."""
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(5)))
    binds = [Bind(pod=f"default/p{i}", uid=f"uid-p{i}", node="n1") for i in range(5)]
    with background_port(server, fence, workers=2) as port:
        assert port.writer.settings.bind_workers_first > port.writer.settings.bind_workers
        done = port.bind(binds, feeder.pods(b.pod for b in binds))
        for _ in range(2):
            assert server.arrived.acquire(timeout=HOLD)  # two held at the server, three waiting
        assert port.bind_workers == 2
        server.gate.set()
        assert port.drain(HOLD)
        done += port.settle()[0]
        assert sorted(o.bind.pod for o in done if o.result == BOUND) == sorted(b.pod for b in binds)
        assert port.bind_workers == 2


def test_bind_workers_start_only_as_binds_outnumber_idle_ones(server: GatedServer, fence: Fence) -> None:
    """Each worker opens its own connection: started all at once, they made the first session's first
    binds wait behind as many TLS handshakes. One bind at a time needs one worker; three held on the
    server at once need three, which then serve the next binds without a fourth."""
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(7)))
    with background_port(server, fence, workers=8) as port:
        handed_back: list[BindOutcome] = []

        def hand(*names: str) -> None:
            binds = [Bind(pod=f"default/{n}", uid=f"uid-{n}", node="n1") for n in names]
            # bind returns the outcomes done by then: a worker may finish before it returns (kept here,
            # or they were lost to the test and a bind seemed never to end).
            handed_back.extend(port.bind(binds, feeder.pods(b.pod for b in binds)))

        def wait_idle() -> list[str]:
            assert port.drain(HOLD)
            done = [*handed_back, *port.settle()[0]]
            handed_back.clear()
            return [o.result for o in done]

        server.gate.set()
        for name in ("p0", "p1"):
            hand(name)
            assert wait_idle() == [BOUND]
        assert port.bind_workers == 1
        server.gate.clear()
        hand("p2", "p3", "p4")
        for _ in range(3):
            assert server.arrived.acquire(timeout=HOLD)
        server.gate.set()
        assert wait_idle() == [BOUND] * 3
        assert port.bind_workers == 3
        hand("p5", "p6")
        assert wait_idle() == [BOUND] * 2
        assert port.bind_workers == 3


def test_the_thread_that_hands_binds_over_starts_one_bind_worker_and_each_worker_the_next(
    server: GatedServer, fence: Fence, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``Thread.start()`` waits for the new thread to run: the session's thread started a worker for
    each bind it handed over, and waited for each start (a first session's binds decided that much
    later). It starts one; each worker, as it begins, starts the next. Six binds held at the server at
    once are six workers, all sending; the port closes with every one of them stopped."""
    starters: list[tuple[str, threading.Thread]] = []
    start = threading.Thread.start

    def recorded(self: threading.Thread) -> None:
        if self.name.startswith("volsched-bind_"):
            starters.append((self.name, threading.current_thread()))
        start(self)

    monkeypatch.setattr(threading.Thread, "start", recorded)
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(6)))
    binds = [Bind(pod=f"default/p{i}", uid=f"uid-p{i}", node="n1") for i in range(6)]
    with background_port(server, fence, workers=8) as port:
        done = port.bind(binds, feeder.pods(b.pod for b in binds))
        for _ in range(6):
            assert server.arrived.acquire(timeout=HOLD)  # all six at the server at once: six workers
        assert port.bind_workers == 6
        here = threading.current_thread()
        assert [name for name, by in starters if by is here] == ["volsched-bind_0"]
        assert sorted(name for name, _ in starters) == [f"volsched-bind_{i}" for i in range(6)]
        server.gate.set()
        assert port.drain(HOLD)
        done += port.settle()[0]
        assert sorted(o.bind.pod for o in done if o.result == BOUND) == sorted(b.pod for b in binds)
        workers = list(port._workers)
    assert len(workers) == 6 and not any(w.is_alive() for w in workers)  # closed: each one joined


def test_a_port_closed_while_its_workers_start_one_another_leaves_no_bind_without_an_outcome(
    server: GatedServer, fence: Fence
) -> None:
    """The chain of starts and the close: binds queued just before the close are each answered once
    (bound, or failed unsent), and every worker started is stopped, however the two interleave."""
    feeder = cache(node("n1", cpu="64"), *(pod(f"p{i}", cpu="100m") for i in range(12)))
    binds = [Bind(pod=f"default/p{i}", uid=f"uid-p{i}", node="n1") for i in range(12)]
    server.gate.set()
    with background_port(server, fence, workers=12) as port:
        done = port.bind(binds, feeder.pods(b.pod for b in binds))
        port.close()
        done += port.settle()[0]
        assert sorted(o.bind.pod for o in done) == sorted(b.pod for b in binds)
        assert {o.result for o in done} <= {BOUND, FAILED}
        assert port.binds_in_flight == 0
        assert not any(w.is_alive() for w in port._workers)


@pytest.mark.parametrize(
    ("answer", "called"),
    [(OK, False), ((500, {}, {"kind": "Status", "message": "etcd timeout"}), True)],
    ids=["bound", "failed"],
)
def test_a_bind_failing_in_the_background_calls_for_a_cycle_to_place_the_pod_again(
    server: GatedServer, fence: Fence, answer: Any, called: bool
) -> None:
    """Only a cycle settles a failed bind (the pod pending again); the session that decided it has ended,
    so the port says so, or the pod waits for the next periodic session."""
    server.script["/pods/a/binding"] = [answer]
    server.gate.set()
    calls: list[str] = []

    def on_failed() -> None:
        calls.append(threading.current_thread().name)

    with background_port(server, fence, workers=1, on_failed=on_failed) as port:
        report = _cycle(cache(node("n1", cpu="4"), pod("a")), port)
        assert port.drain(HOLD)
        # Settled by this cycle when the answer came before it ended, else by the next one.
        assert [o.result for o in [*report.binds, *port.settle()[0]]] == [FAILED if called else BOUND]
        # A lone pod's bind is sent on the session's thread: the pod is pending again only once this
        # cycle settled it, after its session, so a cycle is still called for.
        assert calls == ([threading.current_thread().name] if called else [])


class ScriptedWriter:
    """A writer that answers every bind with ``result`` (the port's contract with its writer, no network)."""

    def __init__(self, result: str) -> None:
        self.result = result
        self.settings = WriterSettings(bind_workers=1)
        self.fence = None

    def holding(self) -> float | None:
        return None

    def bind(
        self, bind: Bind, pod: Any, *, holding: float | None = None, patience: float | None = None
    ) -> BindOutcome:
        return BindOutcome(bind, self.result)


@pytest.mark.parametrize(
    ("result", "called"),
    [
        (BOUND, False),
        (GONE, False),  # deleted: nothing to place
        (SKIPPED, False),  # not our pod
        (FENCED, False),  # not sent: this replica may not hold the Lease, a retry would be fenced too
        (UNKNOWN, False),  # may be bound: kept assumed until the watch shows it
        (FAILED, True),  # forgotten by the cache: pending again
        (CONFLICT, True),  # the cache corrected from the API: a new pod by that name is pending
    ],
)
def test_only_a_bind_after_which_the_pod_is_pending_again_calls_for_a_cycle(
    result: str, called: bool
) -> None:
    calls: list[str] = []
    port = KubePort(ScriptedWriter(result), background=True, on_failed=lambda: calls.append(result))  # type: ignore[arg-type]
    try:
        early = port.bind([Bind(pod="default/a", uid="ua", node="n1")], {})
        assert port.drain(HOLD)
        assert [o.result for o in [*early, *port.settle()[0]]] == [result]
        assert calls == ([result] if called else [])
    finally:
        port.close()


def test_the_port_owes_a_session_while_a_status_write_failed_and_no_longer_once_it_went_through(
    server: GatedServer, port: KubePort
) -> None:
    server.script["/pods/big/status"] = [(500, {}, {"kind": "Status", "message": "etcd timeout"}), OK]
    feeder = cache(node("n1", cpu="4"), pod("big", cpu="8"))
    assert _cycle(feeder, port).result.unschedulable_pods == ("default/big",)
    assert port.drain(HOLD)
    # The PodScheduled=False condition was not written: only a later session's status writes retry it
    # (sessions with nothing new to decide are skipped unless the port owes them, see IdleSkip.owed).
    assert port.owes()
    _cycle(feeder, port)
    assert port.drain(HOLD)
    assert len(server.sent("/pods/big/status")) == 2
    assert not port.owes()


def test_the_operator_skips_idle_sessions_only_while_its_port_owes_no_status_write(tmp_path: Path) -> None:
    with operator_at(tmp_path) as op:
        assert op.loop.idle is not None and op.loop.idle.owed == op.port.owes


@pytest.mark.parametrize("fenced", [True, False], ids=["with-a-lease", "no-lease"])
def test_the_synchronous_port_sends_as_many_binds_at_once_as_bind_workers(
    server: GatedServer, fence: Fence, fenced: bool
) -> None:
    """--bind-workers sets the binds in flight for the synchronous port too (it sent them through the
    writer's other workers, ``workers``, so the setting did nothing there)."""
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(3)))
    api = client.ApiClient(loopback_config(server.port, retries=False, pool_size=8))
    writer = KubeWriter(api, WriterSettings(bind_workers=3, workers=1), fence=fence if fenced else None)
    port = KubePort(writer, background=False)
    binds = [Bind(pod=f"default/p{i}", uid=f"uid-p{i}", node="n1") for i in range(3)]
    outcomes: list[BindOutcome] = []
    sending = threading.Thread(
        target=lambda: outcomes.extend(port.bind(binds, feeder.pods(b.pod for b in binds)))
    )
    sending.start()
    try:
        for _ in range(3):  # all three held on the server at once (one at a time: the first still held)
            assert server.arrived.acquire(timeout=HOLD / 2)
    finally:
        server.gate.set()
        sending.join()
        writer.close()
        api.close()  # type: ignore[no-untyped-call]
    assert [o.result for o in outcomes] == [BOUND] * 3


def test_a_sessions_status_waits_while_its_binds_are_in_flight(server: GatedServer, port: KubePort) -> None:
    """Binds first: a session's status writes (here a pod that can never fit, told why) wait while its
    binds are at the server, so the apiserver's time goes to starting pods; they go once the binds came
    back."""
    opened: list[bool] = []  # per status write: whether the binds had been let through when it came
    hold = server.before_answer

    def before_answer(path: str) -> None:
        if path.endswith("/status"):
            opened.append(server.gate.is_set())
        hold(path)

    server.before_answer = before_answer  # type: ignore[method-assign]
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("big", cpu="8"))
    assert _cycle(feeder, port).result.unschedulable_pods == ("default/big",)
    assert server.arrived.acquire(timeout=HOLD)  # a's bind is at the server, held there
    waiting = threading.Event()
    for _ in range(int(HOLD / 0.05)):  # the status written, or its thread waiting for the bind
        if opened or port.status_held:
            break
        waiting.wait(0.05)
    else:  # (the gate opened without either, a status written after it would prove nothing)
        raise AssertionError("neither the status written nor its thread waiting for the bind")
    server.gate.set()
    assert port.drain(HOLD)
    assert opened == [True]


def test_a_bind_that_hangs_holds_the_status_back_no_longer_than_status_after_binds(
    server: GatedServer, fence: Fence
) -> None:
    with background_port(server, fence, workers=2) as port:
        port.status_after_binds = 0.2
        feeder = cache(node("n1", cpu="4"), pod("a"), pod("big", cpu="8"))
        _cycle(feeder, port)
        assert server.arrived.acquire(timeout=HOLD)
        written = threading.Event()
        deadline = threading.Timer(HOLD, written.set)
        deadline.start()
        while not server.sent("/pods/big/status") and not written.is_set():
            written.wait(0.05)
        deadline.cancel()
        assert server.sent("/pods/big/status")  # while a's bind is still held at the server
        assert port.binds_in_flight == 1
        server.gate.set()
        assert port.drain(HOLD)


def test_a_sessions_status_waits_while_a_later_sessions_binds_are_in_flight(
    server: GatedServer, fence: Fence
) -> None:
    """A backlog placed over several sessions hands binds in each: the status of the first waits for
    the later sessions' binds too (the whole backlog's binds go before the status of what they place),
    within ``status_after_binds``."""
    let_a, let_c = threading.Event(), threading.Event()
    opened: list[bool] = []  # per status write: whether c's bind had been let through when it came

    def before_answer(path: str) -> None:
        if path.endswith("/status"):
            opened.append(let_c.is_set())
        if path.endswith("/binding"):
            server.arrived.release()
            (let_a if "/pods/a/" in path else let_c).wait(HOLD)

    server.before_answer = before_answer  # type: ignore[method-assign]
    try:
        with background_port(server, fence, workers=2) as port:
            port.status_after_binds = 2 * HOLD  # longer than the test waits
            feeder = cache(node("n1", cpu="4"), pod("a"), pod("big", cpu="8"))
            assert _cycle(feeder, port).result.unschedulable_pods == ("default/big",)
            assert server.arrived.acquire(timeout=HOLD)  # a's bind held at the server
            while not port.status_held:  # the status is waiting for it
                let_c.wait(0.01)
            later = cache(node("n1", cpu="4"), pod("c"))  # a later session's bind, held too
            port.bind([Bind(pod="default/c", uid="uid-c", node="n1")], later.pods(["default/c"]))
            assert server.arrived.acquire(timeout=HOLD)
            let_a.set()
            while port.binds_in_flight > 1:  # a's bind came back; c's still held
                let_c.wait(0.01)
            let_c.set()
            assert port.drain(HOLD)
            assert opened == [True]
    finally:
        let_a.set()
        let_c.set()


@pytest.mark.parametrize("first", [0, -1])
def test_binds_are_sent_when_no_bind_worker_is_asked_to_start_first(
    server: GatedServer, fence: Fence, first: int
) -> None:
    """``--bind-workers-first 0`` (or less) starts one worker as binds wait, as ``--bind-workers 0``
    does: with none started until more than ``bind_backlog`` binds waited, a few binds waited forever."""
    feeder = cache(node("n1", cpu="8"), *(pod(f"p{i}") for i in range(3)))
    binds = [Bind(pod=f"default/p{i}", uid=f"uid-p{i}", node="n1") for i in range(3)]
    server.gate.set()
    with background_port(server, fence, workers=8) as port:
        port.writer.settings.bind_workers_first = first
        done = port.bind(binds, feeder.pods(b.pod for b in binds))
        assert port.drain(HOLD)
        done += port.settle()[0]
        assert sorted(o.bind.pod for o in done if o.result == BOUND) == sorted(b.pod for b in binds)
        assert port.bind_workers >= 1
