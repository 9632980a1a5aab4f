"""The time mode's port: :class:`~volsched.simulate.port.MemoryPort` whose kubelet runs every pod for
its duration and whose owners make an evicted pod again.

* A bound pod runs for the duration its annotation ``simulate.volsched.io/duration`` gives (``"10m"``,
  ``"90s"``, seconds as a number; no annotation: it runs until the replay ends), then its phase is
  ``Succeeded`` (:meth:`TimePort.finish_due`): the room it held is free for the next session.
* When every pod of a job (the cache's job: its PodGroup, or its owner's) has succeeded, the job's pods
  and its PodGroup object are deleted from the cache, and its Job from the job controller (as a Job's
  ``ttlSecondsAfterFinished`` and its owner's garbage collection would): the cache holds live objects
  only, however many jobs finished.
* An evicted pod loses the work it did (its run so far is counted, :attr:`PodRun.lost`); its owner
  makes it again, pending: a Job's controller its next pod (as in the instant mode), any other pod is
  made again as ``<name>-r<N>``. A gang restarts whole (its other running pods are deleted and made
  again too) when its policy says so: annotation ``simulate.volsched.io/on-eviction`` ``RestartJob``
  always, ``RestartPod`` never; by default when fewer than ``minMember`` of its pods still run.

It records every pod's life (:class:`PodRun`, Unix seconds of the simulated clock); the loop that
advances the clock is :mod:`volsched.simulate.replay`.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from types import MappingProxyType
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_PODGROUP
from volsched.cycle import BOUND, EVICTED, BindOutcome, EvictOutcome
from volsched.framework.decisions import Bind, Evict
from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of
from volsched.model.scalars import duration_seconds
from volsched.model.vocabulary import (
    DEFAULT_QUEUE,
    MIN_MEMBER_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO_QUEUE_ANNOTATION,
    TaskStatus,
)
from volsched.records import dataclass
from volsched.simulate.documents import iso
from volsched.simulate.port import MemoryPort

#: How long a pod runs once bound (on the pod, or on a Job's pod template).
DURATION_ANNOTATION = "simulate.volsched.io/duration"
#: The job class a pod's job belongs to (the report groups by it).
CLASS_ANNOTATION = "simulate.volsched.io/class"
#: When a Node is removed: a duration from the replay's start (``"6h"``).
REMOVE_ANNOTATION = "simulate.volsched.io/remove-after"
#: What a job does when one of its pods is evicted: RestartJob or RestartPod (see the module's docstring).
EVICTION_POLICY_ANNOTATION = "simulate.volsched.io/on-eviction"
RESTART_JOB = "RestartJob"
RESTART_POD = "RestartPod"


#: The longest latency (a mean, in seconds) a replay takes: a day.
MAX_LATENCY = 86400.0


@dataclass(frozen=True, slots=True)
class Latencies:
    """What takes time in a cluster beside the scheduler's decisions, in seconds (all 0 by default: the
    replay's pods start when bound and their room frees when they end). See docs/simulator-time.md."""

    #: From a bind to the pod running (the kubelet's start-up: image pull, containers); the pod's
    #: duration counts from then, as a kubelet's (and kwok's) does. Its room is held from the bind.
    start: float = 0.0
    #: From the end of the session that decided a bind to the bind landing (the bind request, the
    #: watch that shows the pod bound): a job's wait ends then, and the pod's start delay counts from
    #: then. Its room is held from the session's end, as the scheduler assumes its binds at once.
    bind: float = 0.0
    #: From a pod's end to the scheduler seeing its room free (the kubelet's status, the watch).
    finish: float = 0.0
    #: From a Job's creation to its pods' (the Job controller); its jobs' waits count from the Job's.
    create: float = 0.0
    #: How long a session that runs takes: its binds and evictions land at its end, and the next
    #: session the doorbell calls for waits at least that long after it (the operator's pacing).
    session: float = 0.0
    #: None: every pod and Job takes the figures above. A number: each pod's bind, start and finish and
    #: each Job's create latency is drawn at random (exponentially, the figure its mean) from a generator
    #: seeded with it, as a real cluster's vary: the same seed gives the same replay.
    seed: int | None = None

    def check(self) -> None:
        for name in ("start", "bind", "finish", "create", "session"):
            value = getattr(self, name)
            if not (value >= 0 and value <= MAX_LATENCY):
                raise InputError(
                    f"the {name} latency must be a number of seconds from 0 to {MAX_LATENCY:g} (a day), got {value}"
                )

    def drawer(self, stream: str) -> Callable[[float], float]:
        """Draws one latency of the given mean: the mean itself without a seed, else from the generator
        of ``stream`` (one per kind of draw, so adding Jobs does not move the pods' draws)."""
        if self.seed is None:
            return lambda mean: mean
        rng = random.Random(f"{self.seed}/{stream}")
        return lambda mean: rng.expovariate(1.0 / mean) if mean > 0 else 0.0


@dataclass(slots=True)
class PodRun:
    """One pod's life in a replay (times: the simulated clock, Unix seconds)."""

    key: str
    #: The job it belongs to: the cache's job key of the first pod of its line (a pod made again after an
    #: eviction keeps its original's job, whatever the cache calls the new one).
    job: str
    created: float
    #: Seconds it runs once bound (None: until the replay ends).
    duration: float | None
    #: The resources it asks for (the cache's request map).
    requests: Mapping[str, float]
    started: float | None = None
    node: str | None = None
    finished: float | None = None
    evicted: float | None = None
    #: The pod this one was made again for (an eviction), if any.
    replaces: str | None = None
    #: Seconds of run lost to its eviction (the time it ran before it).
    lost: float = 0.0
    #: Seconds from its bind to it running (the bind and start latencies it drew).
    delay: float = 0.0


#: The empty map every job without evictions shares (replaced, never changed, at the first).
NONE: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)
class JobRun:
    """One job's life in a replay (times: the simulated clock, Unix seconds): what the report counts."""

    key: str
    queue: str
    namespace: str
    #: Its class (annotation ``simulate.volsched.io/class``), "" when none.
    job_class: str
    #: When its first pod was created.
    submitted: float
    min_member: int
    #: What one pod asks for, and how long it runs (its first pod's).
    request: Mapping[str, float]
    duration: float | None
    #: Pods made for it (not counting those made again after an eviction).
    pods: int = 0
    #: When its first pod's bind landed (admitted and placed; the bind latency after the session that
    #: decided it), and when its last pod succeeded.
    admitted: float | None = None
    finished: float | None = None
    #: Its pods' evictions by the action that decided them, and its gang's restarts (one map shared by
    #: every job with none: a finished job's record is all memory keeps of it, 100,000 in a day).
    evictions: Mapping[str, int] = field(default_factory=lambda: NONE)
    #: Resource-seconds its pods ran before an eviction threw the work away (likewise).
    lost: Mapping[str, float] = field(default_factory=lambda: NONE)


class Ledger:
    """What each queue's running pods hold, now and integrated over time (resource-seconds), updated at
    the instant a pod starts or stops."""

    def __init__(self) -> None:
        self.held: dict[str, dict[str, float]] = {}
        self.area: dict[str, dict[str, float]] = {}
        self._since: dict[str, float] = {}

    def change(self, queue: str, request: Mapping[str, float], at: float, sign: float) -> None:
        held = self.held.setdefault(queue, {})
        area = self.area.setdefault(queue, {})
        since = self._since.get(queue, at)
        if at > since:
            for r, amount in held.items():
                area[r] = area.get(r, 0.0) + amount * (at - since)
        self._since[queue] = max(at, since)
        for r, amount in request.items():
            held[r] = max(0.0, held.get(r, 0.0) + sign * amount)

    def settle(self, at: float) -> None:
        """Integrate every queue up to ``at``."""
        for queue in list(self.held):
            self.change(queue, {}, at, 1.0)


def pod_duration(raw: Raw, *, where: str) -> float | None:
    """The pod's ``simulate.volsched.io/duration`` in seconds, None when it has none; a value that is
    not a duration >= 0 raises :class:`InputError` naming ``where``."""
    value = (meta_of(raw).get("annotations") or {}).get(DURATION_ANNOTATION)
    if value is None:
        return None
    seconds = duration_seconds(value)
    if seconds is None or seconds < 0:
        raise InputError(
            f"{where}: annotation {DURATION_ANNOTATION}: expected a duration like 90s, 10m or 1h30m, "
            f"got {value!r}"
        )
    return seconds


class TimePort(MemoryPort):
    """The in-memory port of the time mode (see the module's docstring)."""

    def __init__(self, feeder: Feeder, *, clock: Callable[[], float]) -> None:
        super().__init__(feeder, clock=clock)
        #: Every pod that ever existed, by key.
        self.runs: dict[str, PodRun] = {}
        #: The pods in the cache of each job (the runs' ``job``).
        self._live: dict[str, set[str]] = {}
        #: Pods due to succeed: (when, sequence, pod key, when it started).
        self._due: list[tuple[float, int, str, float]] = []
        self._seq = 0
        self._remade: dict[str, int] = {}
        self._replacing: PodRun | None = None
        #: Jobs whose pods all succeeded, and pods a policy restarted with their gang.
        self.jobs_finished = 0
        self.restarted = 0
        #: Whether the records of a finished job's pods are kept (``-o json`` lists every pod's times);
        #: without, memory holds one small record per job that finished, none per pod.
        self.keep_pods = True
        self._pods_of: dict[str, list[str]] = {}
        self._request_maps: dict[tuple[tuple[str, float], ...], Mapping[str, float]] = {}
        #: Every job that ever existed, by its key (a PodRun's ``job``).
        self.job_runs: dict[str, JobRun] = {}
        self.ledger = Ledger()
        self._latencies = Latencies()
        self._draw = self._latencies.drawer("pods")
        self._draw_bind = self._latencies.drawer("binds")
        #: When each Job whose pods are still to come was created (its jobs' submission).
        self.submitted: dict[str, float] = {}

    @property
    def latencies(self) -> Latencies:
        return self._latencies

    @latencies.setter
    def latencies(self, value: Latencies) -> None:
        self._latencies, self._draw = value, value.drawer("pods")
        self._draw_bind = value.drawer("binds")

    def _requests(self, request: Mapping[str, float]) -> Mapping[str, float]:
        """``request`` as a map shared by every pod that asks the same (never changed: a job's record
        keeps its first pod's)."""
        key = tuple(request.items())
        out = self._request_maps.get(key)
        if out is None:
            out = self._request_maps[key] = MappingProxyType(dict(request))
        return out

    # --- the objects -----------------------------------------------------------------------------------

    def put(self, obj: Mapping[str, Any]) -> None:
        key = ""
        if obj.get("kind") == "Pod":
            meta = meta_of(obj)
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            if key in self.state.raw_pods:
                key = ""  # an update
        super().put(obj)
        if key:
            self._created(key, obj)

    def _created(self, key: str, raw: Raw) -> None:
        task = self.state.tasks.get(key)
        now = self.clock()
        origin, self._replacing = self._replacing, None
        job = origin.job if origin is not None else (task.job_key if task is not None else key)
        run = PodRun(
            key=key,
            job=job,
            created=now,
            duration=pod_duration(raw, where=f"Pod {key}"),
            requests=self._requests(task.request_map) if task is not None else NONE,
            replaces=origin.key if origin is not None else None,
        )
        self.runs[key] = run
        self._live.setdefault(job, set()).add(key)
        if not self.keep_pods:
            self._pods_of.setdefault(job, []).append(key)
        record = self.job_runs.get(job)
        if record is None:
            record = self.job_runs[job] = self._job_run(job, raw, run, now)
        if origin is None:
            record.pods += 1
        if task is not None and task.node_name and task.status in (TaskStatus.RUNNING, TaskStatus.BOUND):
            # Running in the input: it started when its status says (not before the replay), or now.
            self._start(run, task.node_name, min(now, task.start_time) if task.start_time > 0 else now)

    def _job_run(self, job: str, raw: Raw, run: PodRun, now: float) -> JobRun:
        meta = meta_of(raw)
        annotations = meta.get("annotations") or {}
        group = self.state.podgroups.get(job)
        if group is not None:
            queue, minimum = group.queue, group.min_member
        else:
            queue = str(
                annotations.get(QUEUE_ANNOTATION)
                or annotations.get(VOLCANO_QUEUE_ANNOTATION)
                or DEFAULT_QUEUE
            )
            raw_min = annotations.get(MIN_MEMBER_ANNOTATION)
            minimum = int(raw_min) if isinstance(raw_min, str) and raw_min.isdigit() else 1
        owner = next(
            (r.get("name") for r in meta.get("ownerReferences") or [] if r.get("kind") == "Job"), None
        )
        submitted = now
        if owner is not None:  # a Job's pods made create latency after the Job: its wait counts from it
            submitted = self.submitted.pop(f"{meta.get('namespace') or 'default'}/{owner}", now)
        return JobRun(
            key=job,
            queue=queue,
            namespace=str(meta.get("namespace") or "default"),
            job_class=str(annotations.get(CLASS_ANNOTATION) or ""),
            submitted=submitted,
            min_member=minimum,
            request=run.requests,
            duration=run.duration,
        )

    def remove(self, kind: str, key: str) -> None:
        super().remove(kind, key)
        if kind == "Pod":
            run = self.runs.get(key)
            if run is not None:
                live = self._live.get(run.job)
                if live is not None:
                    live.discard(key)
                    if not live:
                        del self._live[run.job]

    # --- the kubelet -----------------------------------------------------------------------------------

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, lone: bool = False
    ) -> list[BindOutcome]:
        out = super().bind(binds, pods, lone=lone)
        now = self.clock()
        for o in out:
            run = self.runs.get(o.bind.pod)
            if o.result == BOUND and run is not None:
                self._start(run, o.bind.node, now, landed=self._draw_bind(self._latencies.bind))
        return out

    def _start(self, run: PodRun, node: str, at: float, *, landed: float = 0.0) -> None:
        """``run`` is bound to ``node`` at ``at`` (its room held from then); its bind lands ``landed``
        seconds later (the bind latency): its job's wait ends then, and its start delay counts from then."""
        run.started, run.node = at, node
        job = self.job_runs[run.job]
        if job.admitted is None or at + landed < job.admitted:
            job.admitted = at + landed
        self.ledger.change(job.queue, run.requests, at, 1.0)
        if run.duration is not None:
            self._seq += 1
            lat, draw = self._latencies, self._draw
            run.delay = landed + draw(lat.start)  # from the bind decided to the pod running
            due = at + run.delay + run.duration + draw(lat.finish)
            heapq.heappush(self._due, (due, self._seq, run.key, at))

    def next_due(self) -> float | None:
        """When the next pod succeeds (None: none runs with a duration)."""
        while self._due:
            when, _, key, started = self._due[0]
            run = self.runs.get(key)
            if run is not None and run.started == started and run.finished is None and run.evicted is None:
                return when
            heapq.heappop(self._due)  # evicted meanwhile: a stale entry
        return None

    def finish_due(self, now: float) -> int:
        """Every pod due by ``now`` succeeds (at its own time); jobs whose pods all succeeded are
        deleted. Returns how many pods succeeded."""
        done: list[PodRun] = []
        while (when := self.next_due()) is not None and when <= now:
            _, _, key, _ = heapq.heappop(self._due)
            run = self.runs[key]
            run.finished = when
            self.ledger.change(self.job_runs[run.job].queue, run.requests, when, -1.0)
            self.state.pod_finished(key, when)  # the engine learns how long its pods run
            done.append(run)
        jobs = {run.job: None for run in done}
        finished = {
            job for job in jobs if all(self.runs[k].finished is not None for k in self._live.get(job, ()))
        }
        for run in done:
            raw = self.state.raw_pods.get(run.key)
            if raw is not None and run.job not in finished:  # its job runs on: it shows Succeeded
                self.put({**raw, "status": {**(raw.get("status") or {}), "phase": "Succeeded"}})
            if raw is not None:
                self.release_claims(raw)  # a pod that finished holds no device
        for job in jobs:
            if job in finished:
                self._done(job)
        return len(done)

    def _done(self, job: str) -> None:
        """Every pod of ``job`` succeeded: its pods, PodGroup and Job leave the cache."""
        live = sorted(self._live.get(job, ()))
        record = self.job_runs.get(job)
        if record is not None:
            record.finished = max((self.runs[k].finished or 0.0 for k in live), default=self.clock())
        owners: set[str] = set()
        for key in live:
            raw = self.state.raw_pods.get(key) or {}
            ns = key.split("/", 1)[0]
            for ref in meta_of(raw).get("ownerReferences") or []:
                if ref.get("kind") == "Job":
                    owners.add(f"{ns}/{ref.get('name')}")
            self.remove("Pod", key)
        if not self.keep_pods:
            self._forget(job)
        for owner in owners:
            self.jobs.pop(owner, None)
        group = self.state.podgroups.get(job)
        if group is not None and group.owner is None:
            kind = {VOLCANO_GROUP: VOLCANO_PODGROUP, WORKLOAD_GROUP: WORKLOAD_PODGROUP}.get(group.api_group)
            self.remove(kind or "PodGroup", job)
        self.jobs_finished += 1

    def _forget(self, job: str) -> None:
        """Drop the records of every pod a finished job ever had."""
        for key in self._pods_of.pop(job, ()):
            self.runs.pop(key, None)

    # --- the owners --------------------------------------------------------------------------------------

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        gangs = {e.pod: self._restarts_whole(e.pod) for e in evictions}
        out = super().evict(evictions, pods)
        now = self.clock()
        restart: dict[str, str] = {}
        for o in out:
            run = self.runs.get(o.eviction.pod)
            if o.result != EVICTED or run is None:
                continue
            record = self.job_runs[run.job]
            record.evictions = _plus(record.evictions, o.eviction.action, 1)
            self._lose(run, now)
            if gangs.get(run.key):
                restart.setdefault(run.job, run.key)
        self._restart(restart, now)
        return out

    def _restart(self, jobs: Iterable[str], now: float) -> None:
        """Delete the running pods of ``jobs`` (their gang restarts whole) and make them again."""
        for job in jobs:
            for key in sorted(self._live.get(job, set())):
                run = self.runs[key]
                raw = self.state.raw_pods.get(key)
                if raw is None or run.started is None or run.finished is not None:
                    continue
                record = self.job_runs[run.job]
                record.evictions = _plus(record.evictions, "restart", 1)
                self._lose(run, now)
                self.remove("Pod", key)
                self.release_claims(raw)
                self._replace(raw)
                self.restarted += 1

    def remove_node(self, name: str, now: float) -> int:
        """The node is gone (``simulate.volsched.io/remove-after``): the pods running there lose their work
        (counted as evictions ``node-removed``) and their owners make them again; a gang restarts whole
        when its policy says so. Returns how many pods it ran."""
        on_node = sorted(
            key
            for key, raw in self.state.raw_pods.items()
            if (raw.get("spec") or {}).get("nodeName") == name
            and key in self.runs
            and self.runs[key].finished is None
        )
        gangs = {key: self._restarts_whole(key) for key in on_node}
        restart: dict[str, None] = {}
        for key in on_node:
            run, raw = self.runs[key], self.state.raw_pods[key]
            record = self.job_runs[run.job]
            record.evictions = _plus(record.evictions, "node-removed", 1)
            self._lose(run, now)
            self.remove("Pod", key)
            self.release_claims(raw)
            self._replace(raw)
            if gangs[key]:
                restart[run.job] = None
        self.remove("Node", name)
        self._restart(restart, now)
        return len(on_node)

    def _restarts_whole(self, key: str) -> bool:
        """Whether evicting ``key`` restarts its whole gang (read before the eviction)."""
        raw = self.state.raw_pods.get(key)
        task = self.state.tasks.get(key)
        run = self.runs.get(key)
        if raw is None or task is None or run is None:
            return False
        policy = (meta_of(raw).get("annotations") or {}).get(EVICTION_POLICY_ANNOTATION)
        if policy == RESTART_JOB:
            return True
        if policy == RESTART_POD:
            return False
        group = self.state.podgroups.get(task.job_key)
        if group is not None:
            minimum = group.min_member
        else:
            raw_min = (meta_of(raw).get("annotations") or {}).get(MIN_MEMBER_ANNOTATION)
            minimum = int(raw_min) if isinstance(raw_min, str) and raw_min.isdigit() else 1
        if minimum <= 1:
            return False
        running = sum(
            1
            for k in self._live.get(run.job, ())
            if self.runs[k].started is not None and self.runs[k].finished is None and k != key
        )
        return running < minimum

    def _lose(self, run: PodRun, now: float) -> None:
        run.evicted = now
        if run.started is not None:
            run.lost = max(0.0, now - run.started - run.delay)  # it ran from then
            record = self.job_runs[run.job]
            for r, amount in run.requests.items():
                record.lost = _plus(record.lost, r, amount * run.lost)
            self.ledger.change(record.queue, run.requests, now, -1.0)

    def _replace(self, raw: Raw) -> None:
        """Play the owner of a pod deleted with its gang: a Job's controller makes its next pod, any
        other owner the pod again."""
        ns = str(meta_of(raw).get("namespace") or "default")
        for ref in meta_of(raw).get("ownerReferences") or []:
            job_key = f"{ns}/{ref.get('name')}"
            if ref.get("kind") == "Job" and job_key in self.jobs:
                self._replacing = self.runs.get(f"{ns}/{meta_of(raw).get('name')}")
                self.spawn(job_key, iso(self.clock()))
                return
        self.remake(raw)

    def remake(self, raw: Raw) -> bool:
        meta = meta_of(raw)
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        origin = self.runs.get(f"{ns}/{name}")
        base = name.rsplit("-r", 1)[0] if origin is not None and origin.replaces else name
        count = self._remade.get(f"{ns}/{base}", 0) + 1
        self._remade[f"{ns}/{base}"] = count
        new_name = f"{base}-r{count}"
        spec = {k: v for k, v in (raw.get("spec") or {}).items() if k != "nodeName"}
        self._replacing = origin
        self.put(
            {
                **raw,
                "metadata": {
                    **meta,
                    "name": new_name,
                    "uid": f"{ns}/{new_name}",
                    "creationTimestamp": iso(self.clock()),
                },
                "spec": spec,
                "status": {"phase": "Pending"},
            }
        )
        return True


def _plus(counts: Mapping[str, Any], key: str, amount: float) -> dict[str, Any]:
    """``counts`` with ``amount`` added to ``key``'s, a new map (a record's may be the shared ``NONE``)."""
    return {**counts, key: counts.get(key, 0) + amount}
