"""The simulator's checks of its input beyond each object's own (which the cache makes as it reads it):
that the Jobs' pods stay within what the simulator plays, that a Job is one its job controller can run,
and that what an object names (a queue, a node) is in the input.

Not the loading itself (:mod:`volsched.simulate.loop`) nor a trace's checks (:mod:`volsched.simulate.trace`).
Each raises :class:`InputError` naming the document and the field.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from volsched.cache.workload import WORKLOAD_API_VERSION
from volsched.model import validation
from volsched.model.decode import object_ref, scheduling_group
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.vocabulary import (
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_QUEUE_ANNOTATION,
    queue_annotation,
)
from volsched.simulate.documents import Document

#: The most pods the simulator's job controller creates for one Job (``spec.parallelism``). Kubernetes
#: caps Indexed Jobs at 100,000; a simulation of one session over that many pods takes minutes, so the
#: simulator plays at most this many per Job and refuses a larger parallelism.
MAX_PARALLELISM = 10_000
#: The most pods all Jobs of a simulation start with (the largest scale ``make bench`` measures).
MAX_JOB_PODS = 50_000


def check_job_pods(docs: list[Document], *, started: int) -> None:
    """Refuse, before creating any, Jobs whose pods would take the simulation past MAX_JOB_PODS, with
    ``started`` pods started by Jobs already (each Job's own parallelism is checked with its other
    fields)."""
    total = started
    for doc in docs:
        spec = doc.obj.get("spec") if doc.obj.get("kind") == "Job" else None
        parallelism = spec.get("parallelism", 1) if isinstance(spec, dict) else None
        if isinstance(parallelism, int) and not isinstance(parallelism, bool) and parallelism > 0:
            total += min(parallelism, MAX_PARALLELISM)
            if total > MAX_JOB_PODS:
                raise InputError(
                    f"{object_ref(doc.obj)}: spec.parallelism {parallelism} takes the Jobs' pods past "
                    f"{MAX_JOB_PODS}, the most the simulator plays",
                    source=doc.source,
                )


def checked_job(job: Mapping[str, Any]) -> tuple[str, int]:
    """The Job's key (``ns/name``) and its parallelism, once its fields are checked."""
    meta = job["metadata"]
    ns, name = meta.get("namespace") or "default", meta.get("name")
    if not name:
        raise InputError("Job: missing field metadata.name")
    spec = job.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
        raise InputError(f"Job {ns}/{name}: missing field spec.template")
    parallelism = validation.bounded_int(
        spec.get("parallelism", 1),
        field=f"Job {ns}/{name}: spec.parallelism (the simulator plays at most {MAX_PARALLELISM} pods per Job)",
        minimum=0,
        maximum=MAX_PARALLELISM,
    )
    if not isinstance(spec["template"].get("spec"), dict):
        raise InputError(f"Job {ns}/{name}: missing field spec.template.spec")
    tmeta = meta_of(spec["template"])
    if not isinstance(tmeta, dict):
        raise InputError(f"Job {ns}/{name}: spec.template.metadata must be a map")
    validation.label_map(tmeta.get("labels"), field=f"Job {ns}/{name}: spec.template.metadata.labels")
    validation.annotation_map(
        tmeta.get("annotations"), field=f"Job {ns}/{name}: spec.template.metadata.annotations"
    )
    return f"{ns}/{name}", parallelism


def check_references(docs: list[Document], *, queues: Collection[str], nodes: Collection[str]) -> None:
    """What the objects of ``docs`` name is in the input: a PodGroup's, a Pod's or a Job's queue (a grouped
    pod's is its group's), a pod's node, among ``queues`` and ``nodes``."""
    for doc in docs:
        kind = doc.obj.get("kind")
        if kind == "PodGroup":
            if doc.obj.get("apiVersion") == WORKLOAD_API_VERSION:  # Kubernetes': its annotation names it
                notes = meta_of(doc.obj).get("annotations") or {}
                field = f"annotation {QUEUE_ANNOTATION}"
                queue = queue_annotation(notes) if isinstance(notes, dict) else None
            else:
                field, queue = "spec.queue", (doc.obj.get("spec") or {}).get("queue")
            if queue and queue != DEFAULT_QUEUE and queue not in queues:
                raise InputError(
                    f"{object_ref(doc.obj)}: {field} names queue {queue!r}, which is not in the input "
                    f"(queues: {', '.join(sorted(queues))})",
                    source=doc.source,
                )
        if kind in ("Pod", "Job"):
            meta = meta_of(doc.obj)
            if kind == "Job":
                meta = meta_of((doc.obj.get("spec") or {}).get("template") or {})
            notes = meta.get("annotations") or {}
            queue = queue_annotation(notes)  # (ours, else Volcano's: the one the cache reads)
            named = QUEUE_ANNOTATION if notes.get(QUEUE_ANNOTATION) else VOLCANO_QUEUE_ANNOTATION
            spec = (
                ((doc.obj.get("spec") or {}).get("template") or {}).get("spec")
                if kind == "Job"
                else doc.obj.get("spec")
            )
            if (
                queue
                and queue not in queues
                and not (meta.get("annotations") or {}).get(GROUP_ANNOTATION)
                and not (meta.get("annotations") or {}).get(VOLCANO_GROUP_ANNOTATION)
                and not (isinstance(spec, dict) and scheduling_group(spec))  # its group's queue counts
            ):
                raise InputError(
                    f"{object_ref(doc.obj)}: annotation {named} names queue {queue!r}, which is not "
                    f"in the input (queues: {', '.join(sorted(queues))})",
                    source=doc.source,
                )
        if kind == "Pod":
            node = (doc.obj.get("spec") or {}).get("nodeName")
            if node and node not in nodes:
                raise InputError(
                    f"{object_ref(doc.obj)}: spec.nodeName names node {node!r}, which is not in the input",
                    source=doc.source,
                )
