"""Admission webhooks through kopf (``kopf.on.validate`` / ``kopf.on.mutate``), the second line in front of
the scheduler's own checks (docs/tenancy.md):

* Queues (``scheduling.volsched.io``): refused when the spec does not decode (the message the cache
  would give), when its parent would close a cycle, or when a guarantee exceeds the capability; a
  Queue's deletion is refused while jobs still name it.
* PodGroups (ours, Volcano's and Kubernetes' own, the Workload API's) and pods with one of our scheduler
  names: refused when their queue's rules refuse them (:func:`~volsched.model.tenancy.queue_refusal`:
  the namespace selector, the priority classes, the ceiling, the system-critical classes outside
  kube-system), at creation and at every update of a PodGroup (a running job moved to a queue that
  refuses it would hold that queue's share). A grouped pod's queue is its group's, once the group is
  cached.
* Mutating: a PodGroup in queue ``default`` (or none) and a pod standing alone that names no queue get
  their namespace's default queue (``scheduling.volsched.io/default-queue``).

The decisions (:class:`Admission`) read the operator's cache (queues, namespaces, priority classes,
PodGroups) and are plain functions over raw objects; ``volsched.operator.kopfrun.register_webhooks``
puts them on a kopf registry (kopf is imported there only, after the cache is synced).
Whether the apiserver lets a request through when the webhook cannot answer is its failure policy:
``fail_open`` (Ignore) or not (Fail).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from volsched.cache.names import came_first
from volsched.cache.state import ClusterState
from volsched.model.decode import build_queue, parse_time, scheduling_group
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.tenancy import queue_refusal
from volsched.model.vocabulary import (
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    ROOT_QUEUE,
    TERMINAL_STATUSES,
    VOLCANO_GROUP_ANNOTATION,
    PodGroupPhase,
    PodGroupSpec,
    QueueSpec,
    default_queue,
    queue_annotation,
)


class Admission:
    """The webhooks' decisions over the cache of ``state``: a refusal's message, or None; a patch."""

    def __init__(self, state: ClusterState, *, scheduler_names: frozenset[str]) -> None:
        self.state = state
        self.scheduler_names = scheduler_names

    def _queue(self, name: str) -> QueueSpec | None:
        q = self.state.queues.get(name)
        return default_queue() if q is None and name == DEFAULT_QUEUE else q

    def _placed(self, namespace: str, queue: str | None) -> str:
        if queue and queue != DEFAULT_QUEUE:
            return queue
        return self.state.namespace_queues.get(namespace, DEFAULT_QUEUE)

    def _refusal(self, namespace: str, queue: str, classes: list[str], priority: int | None) -> str | None:
        spec = self._queue(queue)
        if spec is None:
            return None  # the scheduler keeps the job pending and says the queue does not exist
        labels = self.state.namespace_labels.get(namespace, {})
        return queue_refusal(
            spec, namespace=namespace, namespace_labels=labels, classes=classes, priority=priority
        )

    def _priority(self, cls: str, given: Any = None) -> int | None:
        if isinstance(given, int) and not isinstance(given, bool):
            return given
        return self.state.priority_classes.get(cls) if cls else None

    def podgroup(self, body: Mapping[str, Any], namespace: str) -> str | None:
        spec = body.get("spec") or {}
        cls = str(spec.get("priorityClassName") or "")
        queue = self._placed(namespace, spec.get("queue"))
        return self._refusal(namespace, queue, [cls], self._priority(cls))

    def workload_podgroup(self, body: Mapping[str, Any], namespace: str) -> str | None:
        """A Kubernetes PodGroup (``scheduling.k8s.io``): its queue is its queue-name annotation, else the
        namespace's (as the cache reads it, ``volsched.cache.workload``)."""
        spec = body.get("spec") or {}
        cls = str(spec.get("priorityClassName") or "")
        queue = queue_annotation(meta_of(body).get("annotations") or {})
        return self._refusal(
            namespace, self._placed(namespace, queue), [cls], self._priority(cls, spec.get("priority"))
        )

    def pod(self, body: Mapping[str, Any], namespace: str) -> str | None:
        spec = body.get("spec") or {}
        if str(spec.get("schedulerName") or "") not in self.scheduler_names:
            return None
        annotations = meta_of(body).get("annotations") or {}
        queue = queue_annotation(annotations)
        group = (
            annotations.get(GROUP_ANNOTATION)
            or annotations.get(VOLCANO_GROUP_ANNOTATION)
            or scheduling_group(spec)
        )
        if group:  # its job runs in its group's queue (its own annotation then counts for nothing)
            pg = self.state.podgroups.get(f"{namespace}/{group}")
            if pg is not None:
                queue = pg.queue
        elif (pg := self._joined(body, namespace)) is not None:
            queue = pg.queue  # (a pod standing alone made after a PodGroup of its name is its member)
        cls = str(spec.get("priorityClassName") or "")
        return self._refusal(
            namespace, self._placed(namespace, queue), [cls], self._priority(cls, spec.get("priority"))
        )

    def _joined(self, body: Mapping[str, Any], namespace: str) -> PodGroupSpec | None:
        """The PodGroup a pod that names none joins: one of its name in its namespace made before it, when
        it has no controller owner (a pod standing alone: ``volsched.cache.names``); else None. The pod's
        creation time is the apiserver's (set before validating webhooks are asked), else now."""
        meta = meta_of(body)
        name = meta.get("name")
        owners = meta.get("ownerReferences")
        if not name or (
            isinstance(owners, list) and any(isinstance(r, Mapping) and r.get("controller") for r in owners)
        ):
            return None
        pg = self.state.podgroups.get(f"{namespace}/{name}")
        if pg is None:
            return None
        try:
            created = parse_time(meta.get("creationTimestamp"), where="metadata.creationTimestamp")
        except InputError:
            created = 0.0
        return pg if came_first(pg, created or time.time()) else None

    def queue(self, body: Mapping[str, Any]) -> str | None:
        try:
            spec = build_queue(body)
        except InputError as exc:
            return str(exc)
        seen = [spec.name]
        parent = spec.parent
        while parent and parent != ROOT_QUEUE:
            if parent in seen:
                return f"queue {spec.name}: parent {spec.parent} would form a cycle ({' -> '.join([*seen, parent])})"
            seen.append(parent)
            above = self.state.queues.get(parent)
            parent = above.parent if above is not None else None
        for resource, amount in spec.guarantee.items():
            cap = (spec.capability or {}).get(resource)
            if cap is not None and amount > cap:
                return f"queue {spec.name}: its guarantee of {resource} ({amount:g}) exceeds its capability ({cap:g})"
        return None

    def queue_deletion(self, name: str) -> str | None:
        """Why Queue ``name`` may not be deleted yet: the jobs that still name it (PodGroups, pods standing
        alone that are not finished, and pods of a PodGroup gone bound under it), as Volcano refuses to
        delete a queue in use."""
        if name == DEFAULT_QUEUE:
            return None  # the operator stands one in for it anyway
        state, held = self.state, 0
        for pg in list(state.podgroups.values()):
            if self._placed(pg.namespace, pg.queue) == name and pg.phase is not PodGroupPhase.COMPLETED:
                held += 1
        for t in list(state.tasks.values()):
            if t.job_key != t.key or t.status in TERMINAL_STATUSES or not t.schedulable_by_us:
                continue  # in a PodGroup (counted above), finished, or not ours
            if self._placed(t.namespace, queue_annotation(t.annotations)) == name:
                held += 1
        held += state.orphan_queues().count(name)  # (pods whose PodGroup is gone: each a job of that queue)
        if not held:
            return None
        return (
            f"queue {name} still holds {held} job(s): close it (spec.state: Closed) so that it admits "
            "no new work, and delete it once they are done"
        )

    def default_queue_patch(self, body: Mapping[str, Any], namespace: str, *, kind: str) -> str | None:
        """The queue to set on a PodGroup or a pod standing alone that names none (or ``default``), when
        its namespace names one; else None."""
        named = self.state.namespace_queues.get(namespace)
        if not named:
            return None
        if kind == "PodGroup":
            current = (body.get("spec") or {}).get("queue")
            return named if not current or current == DEFAULT_QUEUE else None
        spec = body.get("spec") or {}
        annotations = meta_of(body).get("annotations") or {}
        if str(spec.get("schedulerName") or "") not in self.scheduler_names:
            return None
        if (
            annotations.get(GROUP_ANNOTATION)
            or annotations.get(VOLCANO_GROUP_ANNOTATION)
            or scheduling_group(spec)
        ):
            return None  # its PodGroup names the queue
        current = queue_annotation(annotations)
        return named if not current or current == DEFAULT_QUEUE else None
