"""The simulator's :class:`~volsched.cycle.Port`: the cluster's answers, played in memory.

It plays the apiserver too: every object the simulator loads or changes reaches the cache through the
:class:`~volsched.cache.feeder.Feeder` with the next resourceVersion, as a watch would deliver it, so
assumed binds and resourceVersion ordering run in every simulation. Every decision takes effect at
once:

* the kubelet: a bound pod starts ``Running`` on its node at the simulated clock;
* the Eviction API: an eviction a PodDisruptionBudget does not allow is refused (``BLOCKED``, as the
  apiserver's 429), any other deletes the pod, as does a deletion (a victim reclaim or preempt took
  past its budget: ``Evict.deletes``, no budget asked); the job controller then creates a pending replacement
  for a Job's pod, and a pod moved off its node (``shuffle``) is replaced by its owner, while the
  node's measured usage loses the pod's share (if the measurement included it);
* nothing is written for status: the session's result is the output. The events the operator posts on
  evicted pods are added to it, as the operator's writer renders them.

The controllers that write through its apiserver are parts of their own: the job controller
(:mod:`volsched.simulate.jobs`), the disruption controller, which puts each PodDisruptionBudget's status
in the cache before every cycle (:mod:`volsched.simulate.budgets`), and the resource claim controller
(:mod:`volsched.simulate.claims`), and the volume binding of claims of a WaitForFirstConsumer class
(:mod:`volsched.simulate.volumes`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cycle import BOUND, EVICTED, GONE, BindOutcome, EvictOutcome, StatusReport
from volsched.framework.decisions import Bind, Evict, SessionResult
from volsched.framework.messages import DELETED, eviction_events
from volsched.model.admitted import BOUND_UNDER
from volsched.model.raw import Raw, meta_of
from volsched.model.vocabulary import Task, TaskStatus
from volsched.simulate.budgets import DisruptionController
from volsched.simulate.claims import ClaimController
from volsched.simulate.documents import iso
from volsched.simulate.jobs import JobController
from volsched.simulate.volumes import VolumeController


class MemoryPort:
    """The cycle's port in memory (see the module's docstring): the simulated apiserver is here, with the
    kubelet, the Eviction API and the owners that replace a pod moved off its node; the controllers that
    write objects through it are parts of their own."""

    def __init__(self, feeder: Feeder, *, clock: Callable[[], float]) -> None:
        self.feeder = feeder
        self.state = feeder.state
        self.clock = clock
        self._moved: dict[str, int] = {}
        self._version = 0  # the last resourceVersion given out
        self.job_controller = JobController(self.put)
        self.disruption_controller = DisruptionController(self.put)
        self.claim_controller = ClaimController(self.put, self.remove)
        self.volume_controller = VolumeController(self.put)

    # --- the objects (the apiserver) ----------------------------------------------------------------------

    def put(self, obj: Mapping[str, Any]) -> None:
        """Create or update an object, as the watch would deliver it: through the Feeder, with the next
        resourceVersion (and a pod without a uid gets ``namespace/name``, the uid its task has anyway).
        Raises :class:`InputError` when it is invalid."""
        self._version += 1
        meta = {**meta_of(obj), "resourceVersion": str(self._version)}
        if obj.get("kind") == "Pod" and not meta.get("uid"):
            meta["uid"] = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if obj.get("kind") == "Pod":
            obj = _reported_ready(obj)
            spec = obj.get("spec")
            if isinstance(spec, Mapping):  # (else the cache refuses the pod below, naming its spec)
                if not spec.get("nodeName"):
                    self.volume_controller.ephemeral({**obj, "metadata": meta})
                if self.claim_controller.templates:
                    obj = self.claim_controller.made(obj, meta)
        obj = {**obj, "metadata": meta}
        self.feeder.apply(str(obj.get("kind")), obj, strict=True)
        if obj.get("kind") == "ResourceClaim":
            self.claim_controller.claims[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = obj
        elif obj.get("kind") in ("PersistentVolumeClaim", "PersistentVolume", "StorageClass"):
            self.volume_controller.seen(obj)

    def remove(self, kind: str, key: str) -> None:
        """Delete an object (a deletion event with the next resourceVersion)."""
        self._version += 1
        ns, _, name = key.rpartition("/")
        meta = {"name": name, "resourceVersion": str(self._version), **({"namespace": ns} if ns else {})}
        self.feeder.delete(kind, {"metadata": meta})

    # --- the port -----------------------------------------------------------------------------------------

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, lone: bool = False
    ) -> list[BindOutcome]:
        out = []
        for bind in binds:
            raw = self.state.raw_pods.get(bind.pod)
            if raw is None:
                out.append(BindOutcome(bind, GONE, "no such pod"))
                continue
            self.claim_controller.allocate(bind)  # written before the bind, as kube-scheduler does
            if bind.volumes:  # bound (or provisioned) before the bind, as volume binding's pre-bind waits for
                self.volume_controller.bind(bind)
            # A shallow copy is enough: no cached pod is changed in place (see volsched.cache.state).
            status = {**(raw.get("status") or {}), "phase": "Running", "startTime": iso(self.clock())}
            bound = {**raw, "spec": {**(raw.get("spec") or {}), "nodeName": bind.node}, "status": status}
            if bind.bound_under:  # as the apiserver copies the Binding's annotations onto the pod
                meta = meta_of(raw)
                notes = {**(meta.get("annotations") or {}), BOUND_UNDER: bind.bound_under}
                bound["metadata"] = {**meta, "annotations": notes}
            self.put(bound)
            out.append(BindOutcome(bind, BOUND))
        return out

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        out = []
        for ev in evictions:
            raw = self.state.raw_pods.get(ev.pod)
            if raw is None:
                out.append(EvictOutcome(ev, GONE, "no such pod"))
                continue
            # A pod taken past its budget is deleted, not evicted: no budget is asked (as the apiserver's
            # delete asks none).
            refused = (
                None if ev.deletes else self.disruption_controller.refusal(raw, self.state.raw_pods.values())
            )
            if refused is not None:  # the apiserver's 429 (500 for a pod that more than one budget selects)
                out.append(EvictOutcome(ev, *refused))
                continue
            task = self.state.tasks.get(ev.pod)
            self.remove("Pod", ev.pod)
            self.claim_controller.release(raw)
            owners = meta_of(raw).get("ownerReferences") or []
            ns = ev.pod.split("/", 1)[0]
            respawned = False
            for ref in owners:
                job_key = f"{ns}/{ref.get('name')}"
                if ref.get("kind") == "Job" and job_key in self.job_controller.jobs:
                    self.job_controller.spawn(job_key, iso(self.clock()))
                    respawned = True
            respawned = respawned or self.remake(raw)
            if not ev.may_return and task is not None:
                # A failed pod's controller replaced it when it failed; it used nothing measurable.
                failed = task.status is TaskStatus.FAILED
                self._moved_off(ev.node, task, raw, respawn=not respawned and not failed, measured=not failed)
            out.append(EvictOutcome(ev, EVICTED, DELETED if ev.deletes else ""))
        return out

    def remake(self, raw: Raw) -> bool:
        """Play the owner of an evicted pod that no Job of the simulator's owns: whether it made the
        pod again. Here it does not (a pod moved off its node is replaced by :meth:`_moved_off`); the
        time mode's port makes every evicted pod again, pending."""
        return False

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        return [], []

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        # What the operator writes on an evicted pod (its event), rendered here at this edge.
        result.events.extend(eviction_events(result))
        return StatusReport()

    def _moved_off(
        self, node: str, task: Task, raw: Mapping[str, Any], *, respawn: bool, measured: bool = True
    ) -> None:
        """A pod rescheduled off ``node`` (the cycle keeps its owner off the node): the node's measured
        usage loses the pod's share (if the measurement included it), and, playing the pod's
        controller, a pending replacement is created (batch Jobs already got theirs)."""
        usage = self.state.usage.get(node)
        spec = self.state.nodes.get(node)
        if measured and usage is not None and spec is not None and task.start_time <= usage.measured_at:

            def share(resource: str) -> float:
                alloc = spec.allocatable.get(resource, 0.0)
                return task.request_map.get(resource, 0.0) / alloc * 100.0 if alloc > 0 else 0.0

            self.state.set_usage(
                {
                    **self.state.usage,
                    node: replace(
                        usage,
                        cpu=max(0.0, usage.cpu - share("cpu")),
                        memory=max(0.0, usage.memory - share("memory")),
                    ),
                }
            )
        if respawn and task.owner:
            base = f"{task.namespace}/{task.name.split('-moved-', 1)[0]}"
            count = self._moved.get(base, 0) + 1
            self._moved[base] = count
            pod = copy.deepcopy(dict(raw))
            meta = pod["metadata"]
            meta["name"] = f"{base.split('/', 1)[1]}-moved-{count}"
            meta["uid"] = f"{task.namespace}/{meta['name']}"
            meta["creationTimestamp"] = iso(self.clock())
            pod["spec"].pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            self.put(pod)


def _reported_ready(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Running pod with no Ready condition, as the simulated kubelet reports it: Ready=True (a pod a
    session binds starts Running, and one written Running in the input stands for a ready one). Kubernetes
    counts a pod without Ready=True as unhealthy (PodDisruptionBudgets); the simulator's pods are ready
    unless the input says they are not (``Ready: "False"``)."""
    status = pod.get("status")
    if not isinstance(status, Mapping) or status.get("phase") != "Running":
        return pod
    conditions = status.get("conditions")
    listed = conditions if isinstance(conditions, list) else []
    if any(isinstance(c, Mapping) and c.get("type") == "Ready" for c in listed):
        return pod
    return {**pod, "status": {**status, "conditions": [*listed, {"type": "Ready", "status": "True"}]}}
