"""The time mode's port: :class:`~volsched.simulate.port.MemoryPort` whose kubelet runs every pod for
its duration and whose owners make an evicted pod again.

* A bound pod runs for the duration its annotation ``simulate.volsched.io/duration`` gives (``"10m"``,
  ``"90s"``, seconds as a number; no annotation: it runs until the replay ends), then its phase is
  ``Succeeded`` (:meth:`TimePort.finish_due`): the room it held is free for the next session.
* When every pod of a job (the cache's job: its PodGroup, or its owner's) has succeeded, the job's pods
  and its PodGroup object are deleted from the cache, and its Job from the job controller (as a Job's
  ``ttlSecondsAfterFinished`` and its owner's garbage collection would): the cache holds live objects
  only, however many jobs finished.
* An evicted pod loses the work it did (its run so far is counted, :attr:`~volsched.simulate.runs.PodRun.lost`); its owner
  makes it again, pending: a Job's controller its next pod (as in the instant mode), any other pod is
  made again as ``<name>-r<N>``. A gang restarts whole (its other running pods are deleted and made
  again too) when its policy says so: annotation ``simulate.volsched.io/on-eviction`` ``RestartJob``
  always, ``RestartPod`` never; by default when fewer than ``minMember`` of its pods still run.

What is here plays the pods' owners; its parts of their own: the kubelet, which says when a pod is due
(:mod:`volsched.simulate.kubelet`), and the records of every pod's and job's life
(:mod:`volsched.simulate.runs`, Unix seconds of the simulated clock). The annotations it reads are in
:mod:`volsched.simulate.annotations`; the loop that advances the clock is :mod:`volsched.simulate.replay`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_PODGROUP
from volsched.cycle import BOUND, EVICTED, BindOutcome, EvictOutcome
from volsched.framework.decisions import Bind, Evict
from volsched.model.raw import Raw, meta_of
from volsched.model.vocabulary import MIN_MEMBER_ANNOTATION, TaskStatus
from volsched.simulate.annotations import EVICTION_POLICY_ANNOTATION, RESTART_JOB, RESTART_POD
from volsched.simulate.documents import iso
from volsched.simulate.kubelet import Kubelet
from volsched.simulate.port import MemoryPort
from volsched.simulate.runs import Lives, PodRun


class TimePort(MemoryPort):
    """The in-memory port of the time mode (see the module's docstring): the kubelet
    (:attr:`kubelet`) and the records (:attr:`lives`) are parts of their own; what is here plays the
    pods' owners."""

    def __init__(self, feeder: Feeder, *, clock: Callable[[], float]) -> None:
        super().__init__(feeder, clock=clock)
        self.lives = Lives()
        self.kubelet = Kubelet(self.lives.runs)
        self._remade: dict[str, int] = {}
        self._replacing: PodRun | None = None

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
        run = self.lives.created(key, raw, task=task, origin=origin, now=now, podgroups=self.state.podgroups)
        if task is not None and task.node_name and task.status in (TaskStatus.RUNNING, TaskStatus.BOUND):
            # Running in the input: it started when its status says (not before the replay), or now.
            self._start(run, task.node_name, min(now, task.start_time) if task.start_time > 0 else now)

    def remove(self, kind: str, key: str) -> None:
        super().remove(kind, key)
        if kind == "Pod":
            self.lives.removed(key)

    # --- the kubelet -----------------------------------------------------------------------------------

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, lone: bool = False
    ) -> list[BindOutcome]:
        out = super().bind(binds, pods, lone=lone)
        now = self.clock()
        for o in out:
            run = self.lives.runs.get(o.bind.pod)
            if o.result == BOUND and run is not None:
                self._start(run, o.bind.node, now, landed=self.kubelet.landing())
        return out

    def _start(self, run: PodRun, node: str, at: float, *, landed: float = 0.0) -> None:
        """``run`` is bound to ``node`` at ``at`` (its room held from then); its bind lands ``landed``
        seconds later (the bind latency): its job's wait ends then, and its start delay counts from then."""
        self.lives.started(run, node, at, landed=landed)
        self.kubelet.start(run, at, landed=landed)

    def finish_due(self, now: float) -> int:
        """Every pod due by ``now`` succeeds (at its own time); jobs whose pods all succeeded are
        deleted. Returns how many pods succeeded."""
        done: list[PodRun] = []
        for when, run in self.kubelet.due(now):
            self.lives.finished(run, when)
            self.state.pod_finished(run.key, when)  # the engine learns how long its pods run
            done.append(run)
        jobs = {run.job: None for run in done}
        finished = {job for job in jobs if self.lives.all_finished(job)}
        for run in done:
            raw = self.state.raw_pods.get(run.key)
            if raw is not None and run.job not in finished:  # its job runs on: it shows Succeeded
                self.put({**raw, "status": {**(raw.get("status") or {}), "phase": "Succeeded"}})
            if raw is not None:
                self.claim_controller.release(raw)  # a pod that finished holds no device
        for job in jobs:
            if job in finished:
                self._done(job)
        return len(done)

    def _done(self, job: str) -> None:
        """Every pod of ``job`` succeeded: its pods, PodGroup and Job leave the cache."""
        live = self.lives.closed(job, self.clock())
        owners: set[str] = set()
        for key in live:
            raw = self.state.raw_pods.get(key) or {}
            ns = key.split("/", 1)[0]
            for ref in meta_of(raw).get("ownerReferences") or []:
                if ref.get("kind") == "Job":
                    owners.add(f"{ns}/{ref.get('name')}")
            self.remove("Pod", key)
        if not self.lives.keep_pods:
            self.lives.forget(job)
        for owner in owners:
            self.job_controller.jobs.pop(owner, None)
        group = self.state.podgroups.get(job)
        if group is not None and group.owner is None:
            kind = {VOLCANO_GROUP: VOLCANO_PODGROUP, WORKLOAD_GROUP: WORKLOAD_PODGROUP}.get(group.api_group)
            self.remove(kind or "PodGroup", job)
        self.lives.jobs_finished += 1

    # --- the owners --------------------------------------------------------------------------------------

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        gangs = {e.pod: self._restarts_whole(e.pod) for e in evictions}
        out = super().evict(evictions, pods)
        now = self.clock()
        restart: dict[str, str] = {}
        for o in out:
            run = self.lives.runs.get(o.eviction.pod)
            if o.result != EVICTED or run is None:
                continue
            self.lives.lost(run, now, because=o.eviction.action)
            if gangs.get(run.key):
                restart.setdefault(run.job, run.key)
        self._restart(restart, now)
        return out

    def _restart(self, jobs: Iterable[str], now: float) -> None:
        """Delete the running pods of ``jobs`` (their gang restarts whole) and make them again."""
        for job in jobs:
            for key in sorted(self.lives.live(job)):
                run = self.lives.runs[key]
                raw = self.state.raw_pods.get(key)
                if raw is None or run.started is None or run.finished is not None:
                    continue
                self.lives.lost(run, now, because="restart")
                self.remove("Pod", key)
                self.claim_controller.release(raw)
                self._replace(raw)
                self.lives.restarted += 1

    def remove_node(self, name: str, now: float) -> int:
        """The node is gone (``simulate.volsched.io/remove-after``): the pods running there lose their work
        (counted as evictions ``node-removed``) and their owners make them again; a gang restarts whole
        when its policy says so. Returns how many pods it ran."""
        runs = self.lives.runs
        on_node = sorted(
            key
            for key, raw in self.state.raw_pods.items()
            if (raw.get("spec") or {}).get("nodeName") == name and key in runs and runs[key].finished is None
        )
        gangs = {key: self._restarts_whole(key) for key in on_node}
        restart: dict[str, None] = {}
        for key in on_node:
            run, raw = runs[key], self.state.raw_pods[key]
            self.lives.lost(run, now, because="node-removed")
            self.remove("Pod", key)
            self.claim_controller.release(raw)
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
        run = self.lives.runs.get(key)
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
        return self.lives.running_besides(run.job, key) < minimum

    def _replace(self, raw: Raw) -> None:
        """Play the owner of a pod deleted with its gang: a Job's controller makes its next pod, any
        other owner the pod again."""
        ns = str(meta_of(raw).get("namespace") or "default")
        for ref in meta_of(raw).get("ownerReferences") or []:
            job_key = f"{ns}/{ref.get('name')}"
            if ref.get("kind") == "Job" and job_key in self.job_controller.jobs:
                self._replacing = self.lives.runs.get(f"{ns}/{meta_of(raw).get('name')}")
                self.job_controller.spawn(job_key, iso(self.clock()))
                return
        self.remake(raw)

    def remake(self, raw: Raw) -> bool:
        meta = meta_of(raw)
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        origin = self.lives.runs.get(f"{ns}/{name}")
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
