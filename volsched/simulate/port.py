"""The simulator's :class:`~volsched.cycle.Port`: the cluster's answers, played in memory.

It plays the apiserver too: every object the simulator loads or changes reaches the cache through the
:class:`~volsched.cache.feeder.Feeder` with the next resourceVersion, as a watch would deliver it, so
assumed binds and resourceVersion ordering run in every simulation. Every decision takes effect at
once:

* the kubelet: a bound pod starts ``Running`` on its node at the simulated clock;
* the disruption controller: each PodDisruptionBudget's ``status.disruptionsAllowed`` reaches the
  cache before every cycle (:meth:`MemoryPort.sync_budgets`);
* the Eviction API: an eviction a PodDisruptionBudget does not allow is refused (``BLOCKED``, as the
  apiserver's 429; see :mod:`volsched.simulate.budgets`), any other deletes the pod; the job controller then creates a pending replacement for a Job's pod,
  and a pod moved off its node (``shuffle``) is replaced by its owner, while the node's measured usage
  loses the pod's share (if the measurement included it);
* nothing is written for status: the session's result is the output. The events the operator posts on
  evicted pods are added to it, as the operator's writer renders them.
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cycle import BOUND, EVICTED, GONE, BindOutcome, EvictOutcome, StatusReport
from volsched.framework.decisions import Bind, Evict, SessionResult
from volsched.framework.messages import eviction_events
from volsched.model.decode import resource_claim
from volsched.model.devices import allocation_status, released_status
from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of, uid_of
from volsched.model.vocabulary import Task, TaskStatus
from volsched.simulate.budgets import Budget, Owner, health, observe_scales, parse_budget, refusal
from volsched.simulate.documents import iso

#: The annotation the resource claim controller puts on a claim it made: the pod's name for the claim.
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"

#: The simulator's Jobs without a metadata.uid get one derived from their namespace and name.
_JOB_UIDS = uuid.UUID("6c0f5c1e-8d0a-4a59-9f57-5d2f4b7c9a10")


def job_uid(job: Raw) -> str:
    """The Job's UID, as its pods' owner reference names it (their PodGroup is ``podgroup-<uid>``):
    its own, else one derived from its namespace and name (the same in every run)."""
    meta = meta_of(job)
    uid = meta.get("uid")
    if uid:
        return str(uid)
    return str(uuid.uuid5(_JOB_UIDS, f"{meta.get('namespace') or 'default'}/{meta.get('name')}"))


class MemoryPort:
    def __init__(self, feeder: Feeder, *, clock: Callable[[], float]) -> None:
        self.feeder = feeder
        self.state = feeder.state
        self.clock = clock
        #: The Jobs the job controller runs ("ns/name" -> the Job object).
        self.jobs: dict[str, dict[str, Any]] = {}
        self._job_counter: dict[str, int] = {}
        self._moved: dict[str, int] = {}
        self._version = 0  # the last resourceVersion given out
        #: The PodDisruptionBudgets the Eviction API enforces ("ns/name" -> budget), as loaded, and the
        #: ``disruptionsAllowed`` the cache was last told for each (see :meth:`sync_budgets`).
        self.budgets: dict[str, Budget] = {}
        self._budget_objects: dict[str, Raw] = {}
        self._budget_told: dict[str, Raw] = {}
        #: The replicas of the pods' controllers, as the disruption controller reads their scale.
        self._scales: dict[Owner, int] = {}
        #: The ResourceClaims as last put ("ns/name" -> object): a bind writes its allocation into them.
        self.resource_claims: dict[str, Raw] = {}
        #: The ResourceClaimTemplates ("ns/name" -> object): the claims of the pods that name them are
        #: made from them, as the resource claim controller does.
        self.claim_templates: dict[str, Raw] = {}

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
            if self.claim_templates:
                obj = self._claims_made(obj, meta)
        obj = {**obj, "metadata": meta}
        self.feeder.apply(str(obj.get("kind")), obj, strict=True)
        if obj.get("kind") == "ResourceClaim":
            self.resource_claims[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = obj

    def add_budget(self, obj: Raw) -> None:
        """A PodDisruptionBudget (raises :class:`InputError` naming a bad field): the Eviction API
        enforces it; the cache gets it with its status at the next :meth:`sync_budgets`."""
        budget = parse_budget(obj)
        key = budget.key
        self.budgets[key] = budget
        self._budget_objects[key] = obj
        self._budget_told.pop(key, None)

    def sync_budgets(self) -> None:
        """Play the disruption controller: every budget's status (``disruptionsAllowed``,
        ``currentHealthy``, ``desiredHealthy``, ``expectedPods``) from the pods now, put in the cache
        where it changed (as the watch would deliver the status update)."""
        pods = self.state.raw_pods.values()
        observe_scales(pods, self._scales)  # with no budget too: one made later reads what was seen
        if not self.budgets:
            return
        for key, budget in self.budgets.items():
            h = health(budget, pods, self._scales)
            status: Raw = {
                "disruptionsAllowed": h.allowed,
                "currentHealthy": h.healthy,
                "desiredHealthy": h.desired,
                "expectedPods": h.expected,
                "observedGeneration": 1,
            }
            if self._budget_told.get(key) == status:
                continue
            self._budget_told[key] = status
            obj = self._budget_objects[key]
            meta = {**meta_of(obj), "generation": 1}
            self.put({**obj, "metadata": meta, "status": status})

    def remove(self, kind: str, key: str) -> None:
        """Delete an object (a deletion event with the next resourceVersion)."""
        self._version += 1
        ns, _, name = key.rpartition("/")
        meta = {"name": name, "resourceVersion": str(self._version), **({"namespace": ns} if ns else {})}
        self.feeder.delete(kind, {"metadata": meta})

    # --- the job controller ------------------------------------------------------------------------------

    def start_job(self, job_key: str, job: dict[str, Any], pods: int) -> None:
        """Run ``job`` and create its first ``pods`` pods."""
        self.jobs[job_key] = job
        self._job_counter[job_key] = 0
        created = job["metadata"].get("creationTimestamp")
        for _ in range(pods):
            self.spawn(job_key, created)

    def spawn(self, job_key: str, created: Any) -> str:
        """Create the Job's next pod, pending. Returns its key."""
        job = self.jobs[job_key]
        ns, name = job_key.split("/", 1)
        index = self._job_counter[job_key]
        self._job_counter[job_key] = index + 1
        template = copy.deepcopy(job["spec"]["template"])
        tmeta = meta_of(template)
        pod_name = f"{name}-{index}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": ns,
                "uid": f"{ns}/{pod_name}",
                "labels": {**(tmeta.get("labels") or {}), "job-name": name},
                "annotations": dict(tmeta.get("annotations") or {}),
                "creationTimestamp": created,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": job_uid(job),
                        "controller": True,
                    }
                ],
            },
            "spec": template["spec"],
            "status": {"phase": "Pending"},
        }
        try:
            self.put(pod)
        except InputError as exc:
            raise InputError(f"Job {job_key}: spec.template: {exc.message}") from None
        return f"{ns}/{pod_name}"

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
            # As kube-scheduler does, the claims' allocation and reservation are written before the bind.
            name = bind.pod.split("/", 1)[1]
            for alloc in bind.claims:
                claim = self.resource_claims[alloc.key]
                status = allocation_status(alloc, pod_name=name, pod_uid=bind.uid, status=claim.get("status"))
                self.put({**claim, "status": status})
            # A shallow copy is enough: no cached pod is changed in place (see volsched.cache.state).
            status = {**(raw.get("status") or {}), "phase": "Running", "startTime": iso(self.clock())}
            self.put({**raw, "spec": {**(raw.get("spec") or {}), "nodeName": bind.node}, "status": status})
            out.append(BindOutcome(bind, BOUND))
        return out

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        out = []
        for ev in evictions:
            raw = self.state.raw_pods.get(ev.pod)
            if raw is None:
                out.append(EvictOutcome(ev, GONE, "no such pod"))
                continue
            refused = (
                refusal(raw, self.budgets.values(), self.state.raw_pods.values(), self._scales)
                if self.budgets
                else None
            )
            if refused is not None:  # the apiserver's 429 (500 for a pod that more than one budget selects)
                out.append(EvictOutcome(ev, *refused))
                continue
            task = self.state.tasks.get(ev.pod)
            self.remove("Pod", ev.pod)
            self.release_claims(raw)
            owners = meta_of(raw).get("ownerReferences") or []
            ns = ev.pod.split("/", 1)[0]
            respawned = False
            for ref in owners:
                job_key = f"{ns}/{ref.get('name')}"
                if ref.get("kind") == "Job" and job_key in self.jobs:
                    self.spawn(job_key, iso(self.clock()))
                    respawned = True
            respawned = respawned or self.remake(raw)
            if not ev.may_return and task is not None:
                # A failed pod's controller replaced it when it failed; it used nothing measurable.
                failed = task.status is TaskStatus.FAILED
                self._moved_off(ev.node, task, raw, respawn=not respawned and not failed, measured=not failed)
            out.append(EvictOutcome(ev, EVICTED))
        return out

    def add_claim_template(self, obj: Raw) -> None:
        """A ResourceClaimTemplate (raises :class:`InputError` naming a bad field)."""
        meta = meta_of(obj)
        ns, name = meta.get("namespace") or "default", meta.get("name")
        spec = (obj.get("spec") or {}).get("spec")
        if not isinstance(spec, Mapping):
            raise InputError(f"ResourceClaimTemplate {ns}/{name}: missing field spec.spec")
        resource_claim({"metadata": {"name": str(name), "namespace": ns}, "spec": spec})  # checked as a claim
        self.claim_templates[f"{ns}/{name}"] = obj

    def _claims_made(self, pod: Raw, meta: Mapping[str, Any]) -> Raw:
        """Play the resource claim controller: for each of the pod's ``resourceClaims`` made from a
        template it has not made yet, a ResourceClaim from the template (named ``<pod>-<claim>-<5
        characters>``, owned by the pod), and its name in the pod's ``status.resourceClaimStatuses``."""
        ns = meta.get("namespace") or "default"
        status = dict(pod.get("status") or {})
        made = list(status.get("resourceClaimStatuses") or [])
        named = {m.get("name") for m in made if isinstance(m, Mapping)}
        changed = False
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template = self.claim_templates.get(f"{ns}/{entry.get('resourceClaimTemplateName')}")
            if template is None or entry.get("name") in named:
                continue
            digest = hashlib.sha256(f"{meta.get('uid')}/{entry['name']}".encode()).hexdigest()[:5]
            name = f"{meta.get('name')}-{entry['name']}-{digest}"[:253]
            tmeta = meta_of(template.get("spec") or {})
            owner = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid")}
            self.put(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "uid": f"{ns}/{name}",
                        "labels": dict(tmeta.get("labels") or {}),
                        "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_NAME: entry["name"]},
                        "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
                    },
                    "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
                }
            )
            made.append({"name": entry["name"], "resourceClaimName": name})
            changed = True
        if not changed:
            return pod
        return {**pod, "status": {**status, "resourceClaimStatuses": made}}

    def release_claims(self, pod: Raw) -> None:
        """Play the resource claim controller for a pod that is gone: out of its claims' ``reservedFor``,
        and a claim no pod holds any more deallocated."""
        meta = meta_of(pod)
        uid = uid_of(pod)
        ns = meta.get("namespace") or "default"
        entries = [
            *((pod.get("spec") or {}).get("resourceClaims") or []),
            *((pod.get("status") or {}).get("resourceClaimStatuses") or []),
        ]
        names = {
            str(c["resourceClaimName"]) for c in entries if isinstance(c, dict) and c.get("resourceClaimName")
        }
        for name in sorted(names):
            claim = self.resource_claims.get(f"{ns}/{name}")
            if claim is None:
                continue
            owners = meta_of(claim).get("ownerReferences") or []
            if any(o.get("kind") == "Pod" and o.get("uid") == uid for o in owners):
                # Made for this pod from a template: it goes with the pod (the garbage collector's part).
                del self.resource_claims[f"{ns}/{name}"]
                self.remove("ResourceClaim", f"{ns}/{name}")
                continue
            status = released_status(claim.get("status"), pod_uid=uid)
            if status is not None:
                self.put({**claim, "status": status})

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
