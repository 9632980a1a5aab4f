"""The simulator's time mode: a workload replayed over hours on a virtual clock, every session the real
:func:`~volsched.cycle.run_cycle` on the in-memory port.

A discrete-event loop; nothing sleeps. The clock jumps from one instant to the next at which something
may happen: an arrival (a workload object whose ``metadata.creationTimestamp`` has come) or a node's
removal (both the :class:`~volsched.simulate.feed.Feed`'s), a pod succeeding
(:class:`~volsched.simulate.kubelet.Kubelet`), or a session tick. Sessions run on the grid
``start + k * period``, as the operator's loop runs one every period: at the first tick at or after an
arrival or a completion, on the next tick after a session that decided something, and, while the last
session left work it may decide on later, every ``max_idle`` seconds (the operator's
:class:`~volsched.cycle.IdleSkip`, which is also asked at every tick: a session with nothing new is
skipped as the operator skips it). Ticks where provably nothing happens are not visited at all.

The session's ``now`` is the virtual clock, and a bound pod's ``status.startTime`` is the tick that bound
it, so a plugin sees ``session.now`` and each running task's ``start_time`` as it would in the operator.
See ``docs/simulator-time.md``.

The replay ends when nothing is left to arrive or finish and a cycle changes nothing, or at ``until``, and
in any case a year before the last instant an object's time can say (:data:`ENDS_BY`, the year 9999): a pod
that runs for 10^17 s, or a replay that starts in the year 9999, would otherwise bind pods at a time no
``startTime`` can hold.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Any

from volsched.cycle import BLOCKED, BOUND, EVICTED, FAILED, EvictOutcome, IdleSkip, run_cycle
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import SessionResult
from volsched.gcpause import freeze_all
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.vocabulary import DEFAULT_SCHEDULER_NAMES
from volsched.pacing import MIN_GAP, PERIOD, Pacer, pods_wait
from volsched.records import dataclass
from volsched.simulate.documents import LATEST, Document
from volsched.simulate.feed import Feed, arrival
from volsched.simulate.latencies import Latencies
from volsched.simulate.loop import SimulationResult, Simulator
from volsched.simulate.report import Series, build_report, waits_by
from volsched.simulate.runs import JobRun, PodRun
from volsched.simulate.timeport import TimePort
from volsched.simulate.trace import TraceJob
from volsched.simulate.traceobjects import check_references, job_documents

#: The operator's defaults: a session every second (sooner, ``min_gap`` after the last, when the doorbell
#: calls for one), and at least every 10 s while one may decide later.
DEFAULT_PERIOD = PERIOD
DEFAULT_MIN_GAP = MIN_GAP
DEFAULT_MAX_IDLE = 10.0
#: No replay runs past this instant (a year before :data:`~volsched.simulate.documents.LATEST`, room for
#: the latencies, each at most :data:`~volsched.simulate.latencies.MAX_LATENCY` on average).
ENDS_BY = LATEST - 366 * 86400.0


@dataclass
class ReplayResult:
    """What a replay came to: the last session and the cache at the end (as the instant mode's
    :class:`~volsched.simulate.loop.SimulationResult`), and every pod's life."""

    simulation: SimulationResult
    #: The replay's origin (Unix seconds): the earliest arrival.
    start: float
    #: The clock at the end (the last event: a pod's success, or the last session).
    end: float
    runs: dict[str, PodRun]
    #: Sessions run, and cycles whose session was skipped (nothing new).
    sessions: int = 0
    skipped: int = 0
    jobs_finished: int = 0
    #: Pods deleted because their gang restarted whole after an eviction.
    restarted: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    #: What the report is made of: every job's life, the nodes' capacity, each queue's held amounts
    #: integrated over time (resource-seconds) and sampled.
    jobs: dict[str, JobRun] = field(default_factory=dict)
    capacity: dict[str, float] = field(default_factory=dict)
    area: dict[str, dict[str, float]] = field(default_factory=dict)
    series: Series = field(default_factory=lambda: Series(step=1.0))

    def report(self) -> dict[str, Any]:
        """The ``report`` of ``-o json`` (see :mod:`volsched.simulate.report`)."""
        out = build_report(
            jobs=self.jobs,
            start=self.start,
            end=self.end,
            capacity=self.capacity,
            area=self.area,
            series=self.series,
            last=self.simulation.last,
        )
        out["waits"] = {
            "queues": waits_by(self.jobs.values(), "queue"),
            "classes": waits_by(self.jobs.values(), "job_class"),
        }
        return out


class Replay:
    """One replay of ``documents`` (and of a ``trace``'s jobs) under ``config`` (see the module's
    docstring)."""

    def __init__(
        self,
        documents: Iterable[Document],
        config: SchedulerConfig | None = None,
        *,
        trace: Sequence[TraceJob] = (),
        period: float = DEFAULT_PERIOD,
        max_idle: float = DEFAULT_MAX_IDLE,
        min_gap: float = DEFAULT_MIN_GAP,
        until: float | None = None,
        scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES,
        record_pods: bool = True,
        latencies: Latencies | None = None,
    ) -> None:
        """``record_pods``: keep every pod's times for the result's ``runs`` (``-o json``); without, a
        finished job's pods leave no record (the report needs only the jobs'). ``latencies``: what
        takes time beside the sessions' decisions (:class:`~volsched.simulate.latencies.Latencies`;
        default none)."""
        self.latencies = latencies or Latencies()
        self.latencies.check()
        if not (period > 0 and math.isfinite(period)):
            raise InputError(f"--period must be a positive number of seconds, got {period}")
        self.period, self.max_idle, self.until = period, max_idle, until
        self.pacer = Pacer(period=period, min_gap=min_gap)
        names = sorted(scheduler_names)
        self._scheduler_name = "volsched" if "volsched" in names else names[0]
        self.feed = Feed(documents, trace, latencies=self.latencies, latest=ENDS_BY)
        self.start = self.feed.start
        self.ends_by = ENDS_BY if until is None else min(ENDS_BY, self.start + until)
        self.sim = Simulator(
            self.feed.static,
            config,
            scheduler_names=scheduler_names,
            start=self.start,
            port=lambda feeder, clock: TimePort(feeder, clock=clock),
        )
        port = self.sim.port
        assert isinstance(port, TimePort)
        self.port: TimePort = port
        port.lives.keep_pods = record_pods
        port.kubelet.latencies = self.latencies
        if trace:
            check_references(
                trace,
                queues=(q.name for q in self.sim.state.queue_specs()),
                priority_classes=self.sim.state.priority_classes,
            )

    def _arrive(self, now: float) -> int:
        count = 0
        for at, _, docs, job in self.feed.arrivals(now):
            self.sim.clock = at
            if job is not None:  # checked when read: straight in, as the watch delivers it
                for doc in job_documents(job, at=at, scheduler_name=self._scheduler_name):
                    try:
                        self.port.put(doc.obj)
                    except InputError as exc:
                        raise InputError(f"{job.where}: {exc.message}") from None
            else:
                for doc in docs or []:
                    if doc.obj.get("kind") == "Job" and self.latencies.create > 0:
                        meta = meta_of(doc.obj)
                        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                        self.port.lives.submitted[key] = arrival(doc) or at
                self.sim.add(docs or [])
            count += 1
        self.sim.clock = now
        return count

    def _next_event(self) -> float:
        due = self.port.kubelet.next_due()
        return min(self.feed.next_event(), due if due is not None else math.inf)

    def _remove_nodes(self, now: float) -> None:
        for at, name in self.feed.removals(now):
            self.port.finish_due(at)  # what ended before the node went
            self.sim.clock = at
            if name in self.sim.state.nodes:
                self.port.remove_node(name, at)
        self.sim.clock = now

    def _events(self, now: float) -> None:
        """Everything due by ``now``: arrivals, node removals, pods succeeding (each rings the cache's
        doorbell as its watch event would)."""
        self._arrive(now)
        self._remove_nodes(now)
        self.port.finish_due(now)
        self.sim.clock = now

    def _next_session(
        self,
        *,
        started: float,
        ended: float,
        dirty: bool,
        waiting: bool,
        last_run: float,
        sparse: bool = False,
    ) -> float:
        """When the session after the one that ran (or was skipped) at ``started`` runs: what the
        operator's :class:`~volsched.pacing.Pacer` answers, asked again at every event until then (each
        event may ring the doorbell). ``dirty``: the next periodic session would run (the last one
        decided something); ``waiting``: the last session that ran left pods of ours waiting; ``sparse``:
        it found at most one job to place (a pod arriving next waits no minimum gap, as the operator's).

        A periodic session that :class:`~volsched.cycle.IdleSkip` would skip (nothing changed since a
        session that decided nothing) is not visited: its only effect, moving the period's grid on by
        one, is made here. What remains is visited: a session the doorbell calls for, the first periodic
        one after an event, and one ``max_idle`` after the last that ran (IdleSkip decides then)."""
        pacer, bell, period = self.pacer, self.sim.state.doorbell, self.period
        t = ended
        while True:
            event = self._next_event()
            wait = pacer.next_wait(
                started=started, ended=ended, now=t, rings=bell.peek(), waiting=waiting,
                leader=True, retry_every=period, sparse=sparse,
            )  # fmt: skip
            due = t + wait
            if not dirty and due >= started + period:  # a periodic session, skipped: the grid moves on
                due = math.inf
                wake = last_run + self.max_idle
                # IdleSkip runs a session max_idle after the last that ran while that one may decide
                # later; with nothing left to arrive or finish, only up to ``until``.
                if self.max_idle > 0 and wake > started and (math.isfinite(event) or self.until is not None):
                    # (at least one period on: a period a billion times max_idle made it 0, and the
                    # replay ran its sessions at one instant for ever)
                    due = started + max(1, math.ceil((wake - started) / period - 1e-9)) * period
            if event > due or not math.isfinite(event):
                return due
            if event > self.ends_by:
                return math.inf  # the replay ends first
            if not dirty:  # the skipped sessions before the event: the last one is the grid's start now
                k = math.ceil((event - started) / period - 1e-9) - 1
                if k >= 1:
                    started = ended = started + k * period
                    bell.take()
            self._events(event)
            dirty = True  # the cache changed: the next periodic session runs
            t = max(t, event)

    def run(self) -> ReplayResult:
        """Replay to the end. What was made before it (the imports, the feed's documents and trace, the
        cluster's static objects) lives as long as the replay and is left out of the cyclic collector's
        way meanwhile (``gc.freeze``, as the operator does once its caches are filled), and put back at
        the end: a process that replays again (the tests, ``--compare``) keeps nothing frozen for good."""
        freeze_all()
        try:
            return self._run()
        finally:
            gc.unfreeze()

    def _run(self) -> ReplayResult:
        sim, port = self.sim, self.port
        idle = IdleSkip(max_idle=self.max_idle, clock=lambda: sim.clock)
        outcomes: list[EvictOutcome] = []
        last = SessionResult()
        sessions = skipped = 0
        last_run = -math.inf
        waiting = sparse = False
        now = self.start
        series = Series(step=self.period)
        deserved: dict[str, dict[str, float]] = {}
        self._events(now)
        while True:
            if port.disruption_controller.budgets:  # they come with the cluster's files only (not arrivals)
                port.disruption_controller.sync(sim.state.raw_pods.values())
            sim.state.doorbell.take()  # what rings from now on calls for the next session
            # The session decides on the cache as of now; what it writes lands when it ends.
            sim.clock = now + self.latencies.session
            report = run_cycle(sim.feeder, sim.config, port, now=now, idle=idle)
            ended = now if report.skipped else sim.clock
            sim.clock = now
            sim.last_report = report
            if report.skipped:
                skipped += 1
            else:
                sessions += 1
                last, last_run = report.result, now
                waiting = pods_wait(last)
                sparse = report.sparse
                deserved = {q: v.deserved or {} for q, v in last.queues.items()}
            series.sample(now, port.lives.ledger.held, deserved)
            outcomes += (o for o in report.evictions if o.result in (EVICTED, BLOCKED, FAILED))
            changed = bool(report.count(BOUND) or report.evicted() or report.phases_changed)
            nxt = self._next_session(
                started=now, ended=ended, dirty=changed, waiting=waiting, last_run=last_run, sparse=sparse
            )
            if not math.isfinite(nxt) or nxt > self.ends_by:
                break
            now = nxt
            self._events(now)
        return self._result(
            now, sessions=sessions, skipped=skipped, last=last, outcomes=outcomes, series=series
        )

    def _result(
        self,
        now: float,
        *,
        sessions: int,
        skipped: int,
        last: SessionResult,
        outcomes: list[EvictOutcome],
        series: Series,
    ) -> ReplayResult:
        """What the replay came to, its clock at ``now`` after the last session: the records settled up to
        the last event, the nodes' capacity at the end."""
        sim, lives = self.sim, self.port.lives
        result = SimulationResult(
            sessions=sessions, state=sim.state, last=last, history=[last], eviction_outcomes=outcomes
        )
        end = max([now, *(r.finished for r in lives.job_runs.values() if r.finished is not None)])
        lives.ledger.settle(end)
        capacity: dict[str, float] = {}
        for spec in sim.state.nodes.values():
            for r, amount in spec.allocatable.items():
                capacity[r] = capacity.get(r, 0.0) + amount
        return ReplayResult(
            simulation=result,
            start=self.start,
            end=end,
            runs=lives.runs,
            sessions=sessions,
            skipped=skipped,
            jobs_finished=lives.jobs_finished,
            restarted=lives.restarted,
            jobs=lives.job_runs,
            capacity=capacity,
            area=lives.ledger.area,
            series=series,
        )
