"""The objects a trace's jobs stand for in the replay: a job's PodGroup and pods, made when it arrives,
and the PriorityClasses of the jobs' ``priority`` values; and the check, before the replay runs, that
every queue and PriorityClass the jobs name is in the input. Building only: no clock, no files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from volsched.model.vocabulary import API_GROUP, GROUP_ANNOTATION
from volsched.simulate.annotations import CLASS_ANNOTATION, DURATION_ANNOTATION, EVICTION_POLICY_ANNOTATION
from volsched.simulate.documents import Document, iso
from volsched.simulate.trace import TraceJob, field_error, priority_class_for


def priority_classes(jobs: Iterable[TraceJob]) -> list[dict[str, Any]]:
    """The PriorityClasses the jobs' ``priority`` values stand for."""
    values = sorted({j.priority for j in jobs if j.priority is not None})
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class_for(v)},
            "value": v,
        }
        for v in values
    ]


def job_documents(job: TraceJob, *, at: float, scheduler_name: str = "volsched") -> list[Document]:
    """The PodGroup and pods of ``job``, created at ``at`` (Unix seconds)."""
    created = iso(at)
    meta = {"namespace": job.namespace, "creationTimestamp": created}
    priority_class = job.priority_class_name()
    group_spec: dict[str, Any] = {"minMember": job.min_member, "queue": job.queue}
    if priority_class:
        group_spec["priorityClassName"] = priority_class
    docs = [
        Document(
            job.where,
            {
                "apiVersion": f"{API_GROUP}/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": job.name, **meta},
                "spec": group_spec,
            },
        )
    ]
    annotations = {GROUP_ANNOTATION: job.name, DURATION_ANNOTATION: repr(float(job.duration))}
    if job.job_class:
        annotations[CLASS_ANNOTATION] = job.job_class
    if job.on_eviction:
        annotations[EVICTION_POLICY_ANNOTATION] = job.on_eviction
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [{"name": "main", "image": "trace", "resources": {"requests": dict(job.requests)}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if job.node_selector:
        spec["nodeSelector"] = dict(job.node_selector)
    if job.tolerations:
        spec["tolerations"] = [dict(t) for t in job.tolerations]
    for i in range(job.pods):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{job.name}-{i}", **meta, "annotations": annotations},
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        docs.append(Document(job.where, pod))
    return docs


def check_references(
    jobs: Sequence[TraceJob], *, queues: Iterable[str], priority_classes: Iterable[str]
) -> None:
    """Every job's queue and PriorityClass is in the cluster's files (checked before the replay runs,
    not when the job arrives)."""
    known_queues, known_classes = set(queues), set(priority_classes)
    for job in jobs:
        if job.queue not in known_queues:
            raise field_error(
                job.where,
                "queue",
                f"queue {job.queue!r} is not in the input (queues: {', '.join(sorted(known_queues))})",
            )
        if job.priority_class is not None and job.priority_class not in known_classes:
            raise field_error(
                job.where, "priorityClass", f"PriorityClass {job.priority_class!r} is not in the input"
            )
