"""One scheduling cycle, the same for the operator, the simulator and the benchmarks.

``run_cycle`` snapshots the cache, runs a session, streams its binds to a :class:`Port` as they commit,
and feeds the outcomes back through the :class:`~volsched.cache.feeder.Feeder` (assumed, finished or
forgotten binds; evictions; PodGroup phases; carryover); then the port writes status. It does no I/O and
imports no adapter: ``KubePort``, the simulator's ``MemoryPort`` and :class:`NullPort` are the ports.
How binds are assumed, settled and skipped when idle: docs/design/modules.md#cycle.
"""

from __future__ import annotations

import itertools
import math
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any, NamedTuple, Protocol

from volsched.cache.doorbell import FREED
from volsched.cache.feeder import Feeder
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import Bind, Evict, SessionResult
from volsched.framework.registry import PluginsAhead, make_actions, make_plugins
from volsched.framework.runner import run_session
from volsched.model.cluster import ClusterSnapshot
from volsched.model.raw import Raw
from volsched.model.vocabulary import PodGroupPhase, Task
from volsched.records import dataclass

#: Each phase by its name (a dict lookup costs less than the enum's call, for every PodGroup a session).
_PHASES = {phase.value: phase for phase in PodGroupPhase}
_PHASE: operator.attrgetter[Any] = operator.attrgetter("phase")
_ADMITTED: operator.attrgetter[Any] = operator.attrgetter("admitted_min_member")


class _NoGroup:
    """What the cache holds of a group with no object: no phase, no minMember admitted with."""

    phase = None
    admitted_min_member = None


_NO_GROUP = _NoGroup()

#: Outcomes of one bind or eviction.
BOUND = "bound"
EVICTED = "evicted"
GONE = "gone"  # the pod was deleted
CONFLICT = "conflict"  # already bound, or a different pod (UID) by that name
BLOCKED = "blocked"  # a PodDisruptionBudget does not allow the eviction now
SKIPPED = "skipped"  # not our pod
FENCED = "fenced"  # not sent: this replica is not sure it still holds the Lease
FAILED = "failed"
#: Sent, but no answer came back, and the pod read back shows it not done yet (the request may still
#: land) or could not be read: it may have taken effect. A bind stays assumed, never freeing its room
#: while the watch may yet show the pod bound; when its time to live ends first, the pod is pending
#: again (``Feeder.expire``: a bind that never landed brings no event). An eviction counts as possibly
#: done (its owner kept off the node).
UNKNOWN = "unknown"


@dataclass
class BindOutcome:
    """What came of one bind: ``result`` (BOUND, CONFLICT, ...) and why."""

    bind: Bind
    result: str
    detail: str = ""
    #: The pod as the API has it now (after a conflict), to correct the cache with.
    pod: dict[str, Any] | None = None


@dataclass
class EvictOutcome:
    """What came of one eviction: ``result`` (EVICTED, BLOCKED, FAILED) and why."""

    eviction: Evict
    result: str
    detail: str = ""


@dataclass
class StatusReport:
    """What writing a session's status, conditions and events came to."""

    writes: int = 0
    events: int = 0
    errors: list[str] = field(default_factory=list)


class Port(Protocol):
    """What a cycle needs from the world it schedules."""

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, lone: bool = False
    ) -> list[BindOutcome]:
        """Send ``binds`` (already assumed in the cache; ``pods``: their raw pods by key). Called
        during the session, once per commit (a gang's binds together), so a synchronous port holds
        the session up while it sends. Returns the outcomes completed so far, of these binds or
        earlier ones (a synchronous port: all of these). Every bind accepted gets exactly one outcome,
        now or from a later ``settle``: an assumption holds until then. Raising means none of this
        call's was accepted (the cycle forgets them and ends; earlier calls' stand). ``lone``: the
        session had one job to place (an arriving pod, most often), so nothing it decides after this
        call waits on it: an asynchronous port may send these on the caller's thread rather than
        hand them to another one."""
        ...

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        """Send ``evictions`` (after the session; ``pods``: their raw pods by key); returns the
        outcomes completed so far, as ``bind`` does."""
        ...

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        """Outcomes completed since the last ``bind``/``evict``/``settle`` and not returned yet."""
        ...

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        """Write the session's PodGroup/Queue status, pod conditions and events (and whatever else the
        cache shows needs writing: a port may read it through ``feeder``)."""
        ...


@dataclass
class CycleReport:
    """What one cycle decided and what came of it."""

    #: The session's result (``result``); None until the session ran.
    _result: SessionResult | None = None
    #: Outcomes handled in this cycle: of its own decisions and of earlier ones that completed since.
    binds: list[BindOutcome] = field(default_factory=list)
    evictions: list[EvictOutcome] = field(default_factory=list)
    status_writes: int = 0
    events: int = 0
    errors: list[str] = field(default_factory=list)
    #: PodGroups whose phase in the cache this cycle changed.
    phases_changed: list[str] = field(default_factory=list)
    #: The session was skipped (see :class:`IdleSkip`): ``result`` is empty, only outcomes were settled.
    skipped: bool = False
    #: The session found at most one job with anything to place (see ``Pacer.next_wait``'s ``sparse``),
    #: not counting the jobs held back (see :func:`to_place`).
    sparse: bool = False

    @property
    def result(self) -> SessionResult:
        """The session's result; a skipped cycle's is empty, made when first asked for (a cycle whose
        session runs makes no empty one only to replace it)."""
        if self._result is None:
            self._result = SessionResult()
        return self._result

    @result.setter
    def result(self, result: SessionResult) -> None:
        self._result = result

    def count(self, result: str) -> int:
        return sum(1 for b in self.binds if b.result == result)

    def evicted(self, result: str = EVICTED) -> int:
        return sum(1 for e in self.evictions if e.result == result)


class ConfigTraits(NamedTuple):
    """What :class:`IdleSkip` asked of a config (see ``IdleSkip._ask``)."""

    config: SchedulerConfig | None
    #: Every action decides only for pending pods.
    pending_only: bool
    #: Time alone may change what a session decides (a plugin reads the clock, or an action may decide
    #: with nothing pending).
    time_matters: bool


@dataclass
class IdleSkip:
    """Skips a session that provably would decide nothing new: since the previous session's snapshot
    nothing it reads changed (``ClusterState.changes``: a watch event that only confirms an assumed
    bind, or a bind completing, is no change; an assumption expiring, a node to avoid expiring or new
    usage figures are), the config is the same object, and either that session decided nothing (no
    bind or eviction; an admission shows as the phase it gave the group, a change) or it is *settled*: it evicted nothing, left no pod of ours pending
    (``SessionResult.waiting``) and every action of the config decides only for pending pods
    (``pending_only``). A settled session's own changes (the binds it assumed, the phases it gave
    PodGroups) are no change for the next: with no pod of ours pending, no such action has anything
    to decide, whatever the clock says.

    Time-based inputs the counter does not see (the age of usage figures, rescheduling intervals,
    plugins' carryover) are never starved: when a plugin of the config reads them (``reads_clock``)
    or an action may decide with nothing pending, and the last session was not settled, a session
    runs at least every ``max_idle`` seconds of ``clock``. Otherwise a session on the same cache, the
    same config and the same carryover decides what the last one did (the engine is deterministic),
    and it runs that often only while ``owed`` says the port owes a retry (a status write that failed,
    a pass over left-behind objects that is due): the session's status writes are the retry."""

    max_idle: float = 10.0
    clock: Callable[[], float] = time.monotonic
    #: Whether the port has something to retry that only a session's status writes retry.
    owed: Callable[[], bool] = lambda: False
    #: Sessions skipped so far.
    skipped: int = 0
    _changes: int = -1
    _config: SchedulerConfig | None = None
    _decided: bool = True
    _settled: bool = False
    _last_run: float = -math.inf
    #: The last config asked about: whether its actions all decide only for pending pods, and whether
    #: time alone may change what its session decides (see ``_ask``).
    _asked: ConfigTraits = field(
        default_factory=lambda: ConfigTraits(None, pending_only=False, time_matters=True)
    )

    def skip(self, feeder: Feeder, config: SchedulerConfig, *, now: float) -> bool:
        """Whether the session at ``now`` (the snapshot's clock) may be skipped; counts it when so."""
        feeder.state.expire(now)
        if self._decided or config is not self._config or feeder.state.changes != self._changes:
            return False
        if self.clock() - self._last_run >= self.max_idle and (
            self.owed() or (not self._settled and self._asked.time_matters)
        ):
            return False
        self.skipped += 1
        return True

    def ran(self, *, changes: int, config: SchedulerConfig, result: SessionResult, own: int = 0) -> None:
        """A session ran on the cache as of ``changes`` with ``config`` and decided ``result``; ``own``:
        the changes the cycle made for it since (binds assumed, phases given), counted once the
        session is settled."""
        self._config, self._last_run = config, self.clock()
        self._ask(config)
        self._settled = not result.waiting and not result.evictions and self._asked.pending_only
        if self._settled:
            self._changes, self._decided = changes + own, False
        else:
            # An admission is no decision of its own here: a group's shows as its phase written (a
            # change), and a pod without a group keeps none (the next session admits it again alike).
            self._changes = changes
            self._decided = bool(result.binds or result.evictions)

    def _ask(self, config: SchedulerConfig) -> None:
        """What ``config`` says (kept while it is the same object): whether every action decides only
        for pending pods, and whether time alone may change what a session decides (a plugin that reads
        the clock, or an action that does not say it decides only for pending pods)."""
        if self._asked.config is not config:
            only = all(getattr(a, "pending_only", False) for a in make_actions(config))
            clock = any(getattr(p, "reads_clock", True) for p in make_plugins(config))
            self._asked = ConfigTraits(config, pending_only=only, time_matters=clock or not only)


#: ``ClusterState.held_back`` when no session said what it left unplaced (see :func:`to_place`).
NOTHING_HELD: tuple[frozenset[str], int, object] = (frozenset(), -1, None)


def to_place(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    *,
    held_back: tuple[frozenset[str], int, object],
    freed: int,
) -> frozenset[str] | None:
    """The keys of the jobs of ``snapshot`` with something to place that may place it now (None: not
    known): its private jobs (``ClusterSnapshot.private``) less those held back, as kube-scheduler keeps
    its unschedulable pods aside until an event may make them fit. ``held_back``: what the last session
    that ran had to place and left unplaced, with the capacity-freeing rings counted then and its config
    (``ClusterState.held_back``); ``freed``: those rings counted now. Such a job is held back while its
    tasks and PodGroup are as they were (``ClusterSnapshot.touched``), nothing freed capacity since and
    the config is the same object: the same session would leave it unplaced again.

    It says only how many jobs a session may place (the pacer's ``sparse``, the port's ``lone``): the
    session still tries every job. A job held back that a change the doorbell does not count lets in
    (a node to avoid expiring, new usage figures) is placed all the same, its bind sent on the
    session's thread when the session had one other job to place."""
    private = snapshot.private
    held, freed_then, config_then = held_back
    if private is None or not held or freed != freed_then or config is not config_then:
        return private
    touched = snapshot.touched
    if touched is None:
        return private
    return private - (held - touched)


def run_cycle(
    feeder: Feeder,
    config: SchedulerConfig,
    port: Port,
    *,
    now: float,
    idle: IdleSkip | None = None,
    plugins: PluginsAhead | None = None,
) -> CycleReport:
    """One cycle at ``now`` (Unix seconds, the snapshot's clock). Blocking for a synchronous port.
    With ``idle``, a session that would decide nothing new is skipped (``report.skipped``).
    ``plugins``: plugins made ahead, for this cycle's session only (see ``run_session``)."""
    state = feeder.state
    report = CycleReport()
    early_binds, early_evictions = port.settle()
    _settle(feeder, report, early_binds, early_evictions, {}, now=now)
    feeder.expire()  # every cycle, skipped or not: an unsure bind's pod is pending again once expired
    if idle is not None and idle.skip(feeder, config, now=now):
        report.skipped = True
        return report
    started = time.perf_counter()
    changes = state.changes  # read before the snapshot: a change meanwhile makes the next session run
    freed = state.doorbell.count[FREED]  # (likewise: capacity freed meanwhile counts for the next)
    snapshot = state.snapshot(now=now)
    snapshot_s = time.perf_counter() - started
    placing = to_place(snapshot, config, held_back=state.held_back, freed=freed)
    # What the next session holds back is this one's to say; one that fails says nothing (this
    # snapshot took the changes the next would have read).
    state.held_back = NOTHING_HELD
    # One job with anything to place: its commit is the session's only one (or nearly), so the port may
    # send it on this thread at once; one hand-over to a bind worker cost an arriving pod a few ms.
    lone = placing is not None and len(placing) == 1
    report.sparse = placing is not None and len(placing) <= 1
    stream = _BindStream(feeder, port, report, now=now, lone=lone)
    result = run_session(snapshot, config, on_binds=stream, plugins=plugins)
    if snapshot.private is not None:
        state.held_back = (snapshot.private - result.bound_jobs.keys(), freed, config)
    result.timings["cycle:snapshot"] = snapshot_s
    result.timings["cycle:bind"] = stream.seconds  # inside the session's figures too: binds stream
    report.result = result
    started = time.perf_counter()
    # Read before evicting: the watch may drop an evicted pod from the cache at any moment.
    moving: dict[str, Task | None] = {
        e.pod: state.tasks.get(e.pod) for e in result.evictions if not e.may_return
    }
    evictions = port.evict(result.evictions, feeder.pods(e.pod for e in result.evictions))
    _settle(feeder, report, [], evictions, moving, now=now)
    own = stream.assumed  # the cache's changes this session made: its binds assumed, its phases
    # The groups whose phase is not the cache's (or that have no object), found in C: most are. Only
    # those the result says may have another phase than the last one's, when that is the result whose
    # phases were written last (the others are the settled run's: written then, unchanged since).
    delta = result.podgroups_delta
    statuses = result.podgroups
    if delta is not None and delta.since is not None and delta.since is state.phases_written:
        keys = list(dict.fromkeys(delta.keys))
        listed = list(map(statuses.__getitem__, keys))
    else:
        keys, listed = list(statuses), list(statuses.values())
    state.phases_written = None
    phases = list(map(_PHASES.__getitem__, map(_PHASE, listed)))
    held_phases = map(_PHASE, map(state.podgroups.get, keys, itertools.repeat(_NO_GROUP)))
    for k in itertools.compress(range(len(keys)), map(operator.is_not, held_phases, phases)):
        key, phase = keys[k], phases[k]
        if key in state.podgroups:  # a group with no object keeps its phase too
            report.phases_changed.append(key)
        own += state.set_podgroup_phase(key, phase)
    # The minMember each gang started with, which eviction keeps no more than (model.admitted): made as
    # it starts (or is first seen started), forgotten once it is back to Pending holding nothing.
    admitted = list(map(_ADMITTED, listed))
    held_admitted = map(_ADMITTED, map(state.podgroups.get, keys, itertools.repeat(_NO_GROUP)))
    for k in itertools.compress(range(len(keys)), map(operator.ne, held_admitted, admitted)):
        own += state.set_podgroup_admitted(keys[k], admitted[k])
    state.phases_written = delta.now if delta is not None else None
    state.carryover = result.carryover
    if idle is not None:
        idle.ran(changes=changes, config=config, result=result, own=own)
    status = port.write_status(result, feeder)
    report.status_writes, report.events, report.errors = status.writes, status.events, status.errors
    result.timings["cycle:apply"] = time.perf_counter() - started
    return report


class _BindStream:
    """The session's bind sink: assumes each commit's binds in the cache, hands them to the port in one
    call and settles the outcomes it returns."""

    def __init__(
        self, feeder: Feeder, port: Port, report: CycleReport, *, now: float, lone: bool = False
    ) -> None:
        self.feeder, self.port, self.report, self.now, self.lone = feeder, port, report, now, lone
        #: Seconds spent assuming, sending and settling, all calls together.
        self.seconds = 0.0
        #: Binds the cache took as assumed (each a change in ``state.changes``).
        self.assumed = 0

    def __call__(self, binds: list[Bind]) -> None:
        started = time.perf_counter()
        feeder = self.feeder
        pods = feeder.pods(b.pod for b in binds)  # as the API has them: read before they are assumed
        try:
            for b in binds:
                if feeder.assume(b.pod, b.uid, b.node, record=b.bound_under):
                    self.assumed += 1
                if b.claims:
                    feeder.state.assume_claims(b)
                if b.volumes:
                    feeder.state.assume_volumes(b)
            outcomes = self.port.bind(binds, pods, lone=self.lone)
        except BaseException:  # none of these sent, as far as the cycle can tell: forget them all
            for b in binds:
                feeder.forget(b.pod)
                if b.claims:
                    feeder.state.forget_claims(b)
                if b.volumes:
                    feeder.state.forget_volumes(b)
            raise
        _settle(feeder, self.report, outcomes, [], {}, now=self.now)
        self.seconds += time.perf_counter() - started


def _settle(
    feeder: Feeder,
    report: CycleReport,
    binds: list[BindOutcome],
    evictions: list[EvictOutcome],
    moving: Mapping[str, Task | None],
    *,
    now: float,
) -> None:
    """Feed outcomes back into the cache and record them in ``report``."""
    state = feeder.state
    for outcome in binds:
        b = outcome.bind
        if outcome.result in (BOUND, UNKNOWN):  # an unknown one may be bound: the watch tells
            feeder.finish(b.pod, unsure=outcome.result == UNKNOWN)
        elif outcome.result == GONE:
            _delete_pod(feeder, b.pod)
            if b.claims:
                state.forget_claims(b)
            if b.volumes:
                state.forget_volumes(b)
        else:
            feeder.forget(b.pod)
            if b.claims:
                state.forget_claims(b)
            if b.volumes:
                state.forget_volumes(b)
            if outcome.result == CONFLICT and outcome.pod is not None:
                feeder.apply("Pod", outcome.pod)
    for ev in evictions:
        e = ev.eviction
        if ev.result in (EVICTED, UNKNOWN):
            # Read first: an eviction that settles in a later cycle finds the pod's owner in the cache,
            # if still there.
            task = moving[e.pod] if e.pod in moving else state.tasks.get(e.pod)
            # Being deleted from now on, not running until the watch says so: the next session must
            # not count it (a gang's spare) nor evict it again.
            feeder.assume_evicted(e.pod, e.uid, at=now, unsure=ev.result == UNKNOWN)
            if task is not None and not e.may_return:
                state.moved_off(task, e.node, now=now)
        elif ev.result == GONE:
            _delete_pod(feeder, e.pod)
    report.binds.extend(binds)
    report.evictions.extend(evictions)


def _delete_pod(feeder: Feeder, key: str) -> None:
    ns, name = key.split("/", 1)
    feeder.delete("Pod", {"metadata": {"namespace": ns, "name": name}})


class NullPort:
    """A world where every bind and eviction succeeds at once and nothing is written (benchmarks)."""

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, lone: bool = False
    ) -> list[BindOutcome]:
        return [BindOutcome(b, BOUND) for b in binds]

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        return [EvictOutcome(e, EVICTED) for e in evictions]

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        return [], []

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        return StatusReport()
