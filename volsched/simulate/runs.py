"""What a replay records of each pod's and each job's life (:class:`PodRun`, :class:`JobRun`), what each
queue's running pods hold over time (:class:`Ledger`), and the book that keeps them (:class:`Lives`):
times are the simulated clock, Unix seconds.

Not what makes them happen: the kubelet (:mod:`volsched.simulate.kubelet`) says when a pod ends, the
time mode's port (:mod:`volsched.simulate.timeport`) when one starts, is evicted or made again; the
report (:mod:`volsched.simulate.report`) reads the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Any

from volsched.model.raw import Raw, meta_of
from volsched.model.vocabulary import (
    DEFAULT_QUEUE,
    MIN_MEMBER_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO_QUEUE_ANNOTATION,
    PodGroupSpec,
    Task,
)
from volsched.records import dataclass
from volsched.simulate.annotations import CLASS_ANNOTATION, pod_duration


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


def plus(counts: Mapping[str, Any], key: str, amount: float) -> dict[str, Any]:
    """``counts`` with ``amount`` added to ``key``'s, a new map (a record's may be the shared ``NONE``)."""
    return {**counts, key: counts.get(key, 0) + amount}


class Lives:
    """Every pod's and job's record, which pods of each job the cache holds, and the queues' ledger: what
    the time mode's port tells it (a pod made, started, ended, evicted, gone) kept as the report needs."""

    def __init__(self) -> None:
        #: Every pod that ever existed, by key.
        self.runs: dict[str, PodRun] = {}
        #: Every job that ever existed, by its key (a PodRun's ``job``).
        self.job_runs: dict[str, JobRun] = {}
        self.ledger = Ledger()
        #: Whether the records of a finished job's pods are kept (``-o json`` lists every pod's times);
        #: without, memory holds one small record per job that finished, none per pod.
        self.keep_pods = True
        #: When each Job whose pods are still to come was created (its jobs' submission).
        self.submitted: dict[str, float] = {}
        #: Jobs whose pods all succeeded, and pods a policy restarted with their gang.
        self.jobs_finished = 0
        self.restarted = 0
        #: The pods in the cache of each job (the runs' ``job``).
        self._live: dict[str, set[str]] = {}
        self._pods_of: dict[str, list[str]] = {}
        self._request_maps: dict[tuple[tuple[str, float], ...], Mapping[str, float]] = {}

    def _requests(self, request: Mapping[str, float]) -> Mapping[str, float]:
        """``request`` as a map shared by every pod that asks the same (never changed: a job's record
        keeps its first pod's)."""
        key = tuple(request.items())
        out = self._request_maps.get(key)
        if out is None:
            out = self._request_maps[key] = MappingProxyType(dict(request))
        return out

    def live(self, job: str) -> Iterable[str]:
        """The pods of ``job`` the cache holds."""
        return self._live.get(job, ())

    def created(
        self,
        key: str,
        raw: Raw,
        *,
        task: Task | None,
        origin: PodRun | None,
        now: float,
        podgroups: Mapping[str, PodGroupSpec],
    ) -> PodRun:
        """Pod ``key`` was made (``origin``: the pod it was made again for); its record, and its job's
        when it is the job's first."""
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
            record = self.job_runs[job] = self._job_run(job, raw, run, now, podgroups.get(job))
        if origin is None:
            record.pods += 1
        return run

    def _job_run(self, job: str, raw: Raw, run: PodRun, now: float, group: PodGroupSpec | None) -> JobRun:
        meta = meta_of(raw)
        annotations = meta.get("annotations") or {}
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

    def removed(self, key: str) -> None:
        """Pod ``key`` left the cache."""
        run = self.runs.get(key)
        if run is not None:
            live = self._live.get(run.job)
            if live is not None:
                live.discard(key)
                if not live:
                    del self._live[run.job]

    def started(self, run: PodRun, node: str, at: float, *, landed: float) -> None:
        """``run`` is bound to ``node`` at ``at`` (its room held from then); its bind lands ``landed``
        seconds later: its job's wait ends then."""
        run.started, run.node = at, node
        job = self.job_runs[run.job]
        if job.admitted is None or at + landed < job.admitted:
            job.admitted = at + landed
        self.ledger.change(job.queue, run.requests, at, 1.0)

    def finished(self, run: PodRun, when: float) -> None:
        """``run`` succeeded at ``when``."""
        run.finished = when
        self.ledger.change(self.job_runs[run.job].queue, run.requests, when, -1.0)

    def all_finished(self, job: str) -> bool:
        """Whether every pod of ``job`` the cache holds has succeeded."""
        return all(self.runs[k].finished is not None for k in self._live.get(job, ()))

    def running_besides(self, job: str, key: str) -> int:
        """How many pods of ``job`` other than ``key`` run."""
        runs = self.runs
        return sum(
            1
            for k in self._live.get(job, ())
            if runs[k].started is not None and runs[k].finished is None and k != key
        )

    def closed(self, job: str, now: float) -> list[str]:
        """Every pod of ``job`` succeeded: its record's end (the last pod's, else ``now``) and its pods,
        in key order."""
        live = sorted(self._live.get(job, ()))
        record = self.job_runs.get(job)
        if record is not None:
            record.finished = max((self.runs[k].finished or 0.0 for k in live), default=now)
        return live

    def forget(self, job: str) -> None:
        """Drop the records of every pod a finished job ever had."""
        for key in self._pods_of.pop(job, ()):
            self.runs.pop(key, None)

    def lost(self, run: PodRun, now: float, *, because: str) -> None:
        """``run`` stopped at ``now`` before its end (``because``: the action that evicted it, ``restart``
        or ``node-removed``): its job counts the eviction and the work thrown away."""
        record = self.job_runs[run.job]
        record.evictions = plus(record.evictions, because, 1)
        run.evicted = now
        if run.started is not None:
            run.lost = max(0.0, now - run.started - run.delay)  # it ran from then
            for r, amount in run.requests.items():
                record.lost = plus(record.lost, r, amount * run.lost)
            self.ledger.change(record.queue, run.requests, now, -1.0)
