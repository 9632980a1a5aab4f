"""Kubernetes' own PodGroups (``scheduling.k8s.io/v1beta1``, the Workload API), read as gangs.

Since Kubernetes 1.37 (beta, behind the ``GenericWorkload`` feature gate and the
``scheduling.k8s.io/v1beta1`` runtime config) a Workload holds pod group templates; a controller (or the
user) makes a PodGroup from a template (``spec.workloadRef``), and each pod names its PodGroup in
``spec.schedulingGroup.podGroupName``. kube-scheduler gang-schedules such a group; volsched reads it as a
PodGroup of its own:

* ``spec.schedulingPolicy.gang.minCount`` is ``minMember``; ``spec.schedulingPolicy.basic`` is a group
  without a gang (``minMember`` 1, each pod on its own).
* ``spec.priorityClassName`` and ``spec.priority`` (which the apiserver's admission sets from the class)
  are the job's priority; ``spec.disruptionMode.single`` (the default) is what volsched does anyway.
* The queue is the PodGroup's ``scheduling.volsched.io/queue-name`` annotation (Volcano's spelling too),
  else the namespace's or the default queue, as for any group.
* Fields volsched does not honour refuse the PodGroup, with the reason (:data:`NOT_HONOURED`): its pods
  wait and are told why, rather than being scheduled without what the field asks. The Workload object is
  not read: a PodGroup carries what its template said.

The gang's progress is written back as kube-scheduler writes it: the ``PodGroupInitiallyScheduled``
condition (``volsched.kube.status``). No I/O happens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from volsched.model import admitted
from volsched.model.decode import build_podgroup
from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of
from volsched.model.vocabulary import (
    QUEUE_ANNOTATION,
    VOLCANO_QUEUE_ANNOTATION,
    PodGroupSpec,
)

WORKLOAD_GROUP = "scheduling.k8s.io"
WORKLOAD_VERSION = "v1beta1"
WORKLOAD_API_VERSION = f"{WORKLOAD_GROUP}/{WORKLOAD_VERSION}"
#: The cache's name for Kubernetes' PodGroup kind (the feeder keys objects by kind: it must differ from
#: volsched's and Volcano's).
WORKLOAD_PODGROUP = "WorkloadPodGroup"

#: The spec fields read (with the meaning above), and why each other one refuses the PodGroup.
_READ = frozenset({"workloadRef", "schedulingPolicy", "priorityClassName", "priority", "disruptionMode"})
NOT_HONOURED: Mapping[str, str] = {
    "schedulingConstraints": (
        "volsched does not place a Workload's pod group by its topology constraints; give the gang a "
        "volsched PodGroup with spec.topology instead"
    ),
    "resourceClaims": (
        "volsched does not allocate a pod group's shared ResourceClaims; let each pod claim its devices "
        "in its own spec.resourceClaims"
    ),
    "parentCompositePodGroupName": "volsched does not schedule composite pod groups (groups of groups)",
    "disruptionMode.all": (
        "volsched disrupts (preempts, reclaims) a gang's pods one by one down to its minimum, as "
        "disruptionMode single does; it does not evict a whole group at once"
    ),
    "preemptionPolicy.Never": (
        "volsched reads preemptionPolicy from each pod (its priority class), not from the pod group; "
        "give the pods a priority class with preemptionPolicy Never"
    ),
}

_REFUSED = frozenset(field.partition(".")[0] for field in NOT_HONOURED)


def build_workload_podgroup(obj: Raw) -> PodGroupSpec:
    """A ``scheduling.k8s.io`` PodGroup as a :class:`PodGroupSpec` (raises InputError naming the field, or
    saying why a field is not honoured)."""
    meta = meta_of(obj)
    where = f"PodGroup {meta.get('namespace')}/{meta.get('name')} ({WORKLOAD_GROUP})"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: missing field spec")
    for field, why in NOT_HONOURED.items():
        name, _, value = field.partition(".")
        present = spec.get(name)
        if value == "all":
            present = isinstance(present, Mapping) and present.get("all") is not None
        elif value:
            present = present == value
        if present:
            raise InputError(f"{where}: spec.{name} is not honoured: {why}")
    unknown = sorted(k for k in spec if k not in _READ and k not in _REFUSED)
    if unknown:
        raise InputError(f"{where}: spec.{unknown[0]} is not a field volsched knows; it is not honoured")
    policy = spec.get("schedulingPolicy")
    if not isinstance(policy, Mapping) or ("gang" in policy) == ("basic" in policy):
        raise InputError(f"{where}: spec.schedulingPolicy must hold exactly one of gang and basic")
    min_member: Any = 1
    if policy.get("gang") is not None:
        gang = policy["gang"]
        min_member = gang.get("minCount") if isinstance(gang, Mapping) else None
        if isinstance(min_member, bool) or not isinstance(min_member, int) or min_member < 1:
            raise InputError(f"{where}: spec.schedulingPolicy.gang.minCount must be a whole number >= 1")
    priority = spec.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise InputError(f"{where}: spec.priority must be a whole number")
    annotations = meta.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    queue = annotations.get(QUEUE_ANNOTATION) or annotations.get(VOLCANO_QUEUE_ANNOTATION)
    ours: dict[str, Any] = {"minMember": min_member, "priorityClassName": spec.get("priorityClassName")}
    if queue:
        ours["queue"] = queue
    # Kubernetes' PodGroup has no phase: the one the sessions give it is kept by the cache.
    pg = build_podgroup({"kind": "PodGroup", "metadata": obj.get("metadata"), "spec": ours})
    # The minMember it was admitted with: in the condition volsched writes on its status (not its phase).
    return replace(
        pg, api_group=WORKLOAD_GROUP, priority=priority, admitted_min_member=admitted.read(obj.get("status"))
    )


def workload_conflict_message(winner_group: str, key: str) -> str:
    """Why a Kubernetes PodGroup is not read: a PodGroup of the same name in ``winner_group`` is."""
    return (
        f"volsched schedules the pods of {key} by the PodGroup of that name in {winner_group}; this "
        f"{WORKLOAD_GROUP} PodGroup is ignored while that one exists"
    )
