"""Volcano's ``scheduling.volcano.sh/v1beta1`` PodGroups and Queues, read with the meaning of ours.

What maps to what (the fields Volcano's integrations -- Spark, the MPI and Kubeflow training
operators, KubeRay, Flink -- write):

* PodGroup ``spec.minMember``, ``spec.minResources``, ``spec.queue``, ``spec.priorityClassName`` are
  ours, field for field; ``status.phase`` has the same values. ``spec.minTaskMember`` (per-role
  minimums; a pod's role is its ``volcano.sh/task-spec`` annotation) is honoured as Volcano's gang
  plugin does (see ``volsched.plugins.gang``). ``spec.networkTopology`` is refused in mode ``hard`` (a
  requirement volsched cannot keep: it reads no HyperNodes) and not read in mode ``soft`` (named in the
  PodGroup's ``FieldsIgnored`` condition).
* Queue ``spec.weight``, ``spec.capability``, ``spec.reclaimable``, ``spec.guarantee.resource``,
  ``spec.parent`` and ``spec.priority`` (higher first in queue order) are ours. A Volcano Queue's state
  lives in ``status.state`` (Volcano's controller sets it from ``vcctl queue operate``): ``Closed`` and
  ``Closing`` close the queue, anything else leaves it open. ``spec.deserved`` (Volcano's capacity
  plugin) is not honoured, deliberately: volsched shares by weight, as Volcano's proportion plugin does;
  a condition on the queue says so (:data:`DESERVED_IGNORED`), as it does of ``pods`` in its
  ``capability`` or ``guarantee.resource``, which Volcano checks no more than volsched does
  (:data:`QUEUE_PODS_IGNORED`; volsched's own Queue is refused for it).

When both API groups define an object of the same name (a PodGroup in the same namespace, or a
Queue), **volsched's own object wins**; the Volcano one is ignored and gets an event saying so
(:data:`CONFLICT_REASON`). Deleting the winner lets the other one take over.

No I/O happens here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from volsched.model.decode import build_podgroup, build_queue
from volsched.model.errors import InputError
from volsched.model.vocabulary import PodGroupSpec, QueueSpec

VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_VERSION = "v1beta1"
VOLCANO_API_VERSION = f"{VOLCANO_GROUP}/{VOLCANO_VERSION}"
#: The cache's names for Volcano's kinds (the feeder keys objects by kind, so they must differ from ours).
VOLCANO_PODGROUP = "VolcanoPodGroup"
VOLCANO_QUEUE = "VolcanoQueue"
#: The reason of the event posted on a Volcano object that loses to volsched's object of the same name.
CONFLICT_REASON = "ShadowedByVolsched"

_CLOSED_STATES = frozenset({"Closed", "Closing"})
#: Why a Volcano Queue's ``spec.deserved`` is not honoured (shown on the queue as a condition).
DESERVED_IGNORED = (
    "spec.deserved is the share Volcano's capacity plugin gives the queue; volsched shares the cluster "
    "as Volcano's proportion plugin does, by weight (a hierarchical water-fill), which reads no deserved "
    "either: set spec.guarantee.resource for a share held for the queue and reclaimed back for it, "
    "spec.capability for a ceiling, spec.weight for its part of the rest"
)


#: Why a Volcano Queue's ``pods`` in its capability or guarantee is not honoured (a condition on it).
QUEUE_PODS_IGNORED = (
    "a queue's capability and guarantee are shares of the cluster's resources, which leave the pods count "
    "out, as Volcano's proportion plugin does (it checks no pods there either): no queue is held to a "
    "number of pods"
)


def _as(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    out["kind"] = kind
    out["apiVersion"] = VOLCANO_API_VERSION  # (read as Volcano's: not held to the fields of ours)
    return out


#: Why a Volcano PodGroup whose ``spec.networkTopology`` is a requirement (mode ``hard``, Volcano's
#: default) is refused: volsched cannot keep to it, and placing the gang anyway would break it unsaid.
NETWORK_TOPOLOGY_REFUSED = (
    "spec.networkTopology (mode hard) keeps the gang within a tier of Volcano's HyperNodes, which volsched "
    "does not read, so it cannot keep to it: remove the field (or make it mode: soft), or use a volsched "
    "PodGroup's spec.topology (a node label key, e.g. a rack's: the gang in one domain of it)"
)

#: Why a Volcano PodGroup's ``spec.networkTopology`` in mode ``soft`` (a preference) is not read (its
#: ``FieldsIgnored`` condition).
NETWORK_TOPOLOGY_IGNORED = (
    "mode soft prefers a tier of Volcano's HyperNodes, which volsched does not read: the gang is placed "
    "as if the field were not there (a volsched PodGroup's spec.topology with mode Preferred keeps a gang "
    "in one domain of a node label where one fits)"
)


#: Why a Volcano PodGroup with a ``spec.subGroupPolicy`` is refused: gangs of its subgroups (and their
#: network tiers) are requirements volsched does not keep.
SUBGROUP_POLICY_REFUSED = (
    "spec.subGroupPolicy asks for gangs within the gang (subGroupSize, minSubGroups) and their network "
    "tiers, which volsched does not keep: remove it (spec.minTaskMember gives per-role minimums), or "
    "make each subgroup a PodGroup of its own"
)
#: Why a Volcano Queue whose ``spec.affinity`` requires or forbids node groups is refused.
QUEUE_AFFINITY_REFUSED = (
    "spec.affinity requires or forbids node groups (requiredDuringSchedulingIgnoredDuringExecution, "
    "Volcano's nodegroup plugin), which volsched does not keep: placing the queue's jobs anyway would put "
    "them where the queue's owner said no; give its pods a node affinity instead, or drop the requirement"
)
#: The Volcano Queue fields volsched reads, or says on the queue that it does not.
_QUEUE_FIELDS = frozenset(
    {"weight", "capability", "reclaimable", "guarantee", "parent", "priority", "state", "deserved"}
)
#: The Volcano PodGroup fields volsched reads, refuses, or says on the group that it does not read (any
#: other is named in its ``FieldsIgnored`` condition).
_PODGROUP_FIELDS = frozenset(
    {"minMember", "minTaskMember", "queue", "priorityClassName", "minResources", "networkTopology",
     "subGroupPolicy"}
)  # fmt: skip
#: Why the other Volcano Queue fields volsched knows of are not read (a ``FieldsIgnored`` condition).
QUEUE_FIELDS_IGNORED = {
    "affinity": "preferred node groups (Volcano's nodegroup plugin) are a preference volsched does not read",
    "extendClusters": "jobs are dispatched to other clusters by Volcano's multi-cluster scheduling, not here",
    "type": "a label of the queue's kind that volsched does not read",
    "dequeueStrategy": "volsched orders a queue's jobs by priority, then age (as fifo)",
}


def _required_node_groups(affinity: Any) -> bool:
    """Whether a Volcano Queue's ``spec.affinity`` requires or forbids a node group."""
    if not isinstance(affinity, Mapping):
        return affinity is not None
    return any(
        isinstance(part, Mapping) and part.get("requiredDuringSchedulingIgnoredDuringExecution")
        for part in (affinity.get("nodeGroupAffinity"), affinity.get("nodeGroupAntiAffinity"))
    )


def _name_of(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def build_volcano_podgroup(obj: Mapping[str, Any]) -> PodGroupSpec:
    """A Volcano PodGroup as a :class:`PodGroupSpec` (raises InputError naming the field). Volcano accepts
    ``minMember: 0`` (no gang: any pod may start alone), which is what minMember 1 means here. A
    ``spec.networkTopology`` in mode ``hard`` (a requirement: Volcano's default mode) is refused, saying
    why; in mode ``soft`` (a preference) it is not read, and named on the PodGroup (``FieldsIgnored``), as
    is a spec field volsched does not know."""
    raw = _as(obj, "PodGroup")
    spec = raw.get("spec")
    topology = spec.get("networkTopology") if isinstance(spec, Mapping) else None
    if topology is not None and not (isinstance(topology, Mapping) and topology.get("mode") == "soft"):
        raise InputError(f"PodGroup {_name_of(raw)}: {NETWORK_TOPOLOGY_REFUSED}")
    if isinstance(spec, Mapping) and spec.get("subGroupPolicy"):
        raise InputError(f"PodGroup {_name_of(raw)}: {SUBGROUP_POLICY_REFUSED}")
    ignored = [("spec.networkTopology", NETWORK_TOPOLOGY_IGNORED)] if topology is not None else []
    if isinstance(spec, Mapping):
        ignored.extend(
            (f"spec.{k}", "not a field of a Volcano PodGroup that volsched knows")
            for k in sorted(
                k for k in spec if k not in _PODGROUP_FIELDS and spec[k] not in (None, "", [], {})
            )
        )
    if (
        isinstance(spec, Mapping)
        and spec.get("minMember") == 0
        and not isinstance(spec.get("minMember"), bool)
    ):
        raw["spec"] = {**spec, "minMember": 1}
    return replace(build_podgroup(raw), api_group=VOLCANO_GROUP, ignored=tuple(ignored))


def build_volcano_queue(obj: Mapping[str, Any]) -> QueueSpec:
    """A Volcano Queue as a :class:`QueueSpec` (its state from ``status.state``). A ``spec.affinity`` that
    requires or forbids node groups is refused, saying why; the fields it does not read are named on the
    queue (a ``FieldsIgnored`` condition, :data:`QUEUE_FIELDS_IGNORED`)."""
    raw = _as(obj, "Queue")
    spec = raw.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    status = raw.get("status")
    state = status.get("state") if isinstance(status, Mapping) else None
    spec["state"] = "Closed" if state in _CLOSED_STATES else "Open"
    ignored = [("spec.deserved", DESERVED_IGNORED)] if spec.get("deserved") is not None else []
    if _required_node_groups(spec.get("affinity")):
        raise InputError(f"Queue {_name_of(raw)}: {QUEUE_AFFINITY_REFUSED}")
    for field in sorted(k for k in spec if k not in _QUEUE_FIELDS and spec[k] not in (None, "", [], {})):
        why = QUEUE_FIELDS_IGNORED.get(field, "not a field of a Volcano Queue that volsched knows")
        ignored.append((f"spec.{field}", why))
    cap = spec.get("capability")
    if isinstance(cap, Mapping) and "pods" in cap:
        spec["capability"] = {k: v for k, v in cap.items() if k != "pods"}
        ignored.append(("spec.capability.pods", QUEUE_PODS_IGNORED))
    guarantee = spec.get("guarantee")
    held = guarantee.get("resource") if isinstance(guarantee, Mapping) else None
    if isinstance(held, Mapping) and "pods" in held:
        spec["guarantee"] = {**guarantee, "resource": {k: v for k, v in held.items() if k != "pods"}}  # type: ignore[dict-item]
        ignored.append(("spec.guarantee.resource.pods", QUEUE_PODS_IGNORED))
    raw["spec"] = spec
    return replace(build_queue(raw), api_group=VOLCANO_GROUP, ignored=tuple(ignored))


def conflict_message(kind: str, key: str) -> str:
    return (
        f"volsched schedules by its own {kind} {key} (scheduling.volsched.io), which has the same name; "
        f"this {VOLCANO_GROUP} {kind} is ignored while that one exists"
    )
