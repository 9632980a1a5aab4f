"""What of a Pod or a Node the scheduler keeps: the fields the model and the writer read, nothing else.

The cache holds every pod raw (its priority depends on PriorityClasses that may come later), so what a
pod carries besides (``managedFields``, environment variables, probes, volume mounts, the kubelet's
conditions and container statuses...) is memory held for nothing; at 10,000 pods it was most of the
operator's resident set. Pruned here, as objects arrive from the API:

* metadata: name, namespace, uid, resourceVersion, creation and deletion timestamps, labels, annotations
  (without ``kubectl.kubernetes.io/last-applied-configuration``, a copy of the whole object), owners,
  finalizers (with the grace period: whether an eviction deletes the pod at once, for the writer);
* a pod's spec: what placement, requests, priority and ports are read from
  (:func:`volsched.model.decode.build_task`), its containers reduced to name, image, resources, ports
  and restartPolicy, its volumes to the PersistentVolumeClaims and the node-local ones (``emptyDir``,
  ``hostPath``: which, not what they hold);
* a pod's status: phase, reason, startTime, and per container (ephemeral ones too) its restartCount,
  the reason it waits or terminated and its exit code (:func:`volsched.model.decode.pod_runtime`), and
  when it terminated (what the cache learns run times from);
* a node: labels, annotations, taints, unschedulable, allocatable/capacity, the Ready condition and the
  addresses (:func:`volsched.model.decode.build_node`).

A field of an unexpected shape is kept as it is, so the model still reports it as malformed. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.model.raw import RawDict

#: What a mapping is: a dict first (what JSON decodes to: a cheap check), then any Mapping (the ABC's
#: check costs about ten times a dict's, and a pod takes a dozen of them).
_MAP = (dict, Mapping)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

META_KEYS = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
)
POD_SPEC_KEYS = (
    "containers",
    "initContainers",
    "overhead",
    "nodeSelector",
    "affinity",
    "tolerations",
    "priority",
    "priorityClassName",
    "schedulerName",
    "preemptionPolicy",
    "activeDeadlineSeconds",
    "nodeName",
    "volumes",
    "topologySpreadConstraints",
    "schedulingGates",
    "hostNetwork",
    "runtimeClassName",
    "resourceClaims",
    "schedulingGroup",
    "terminationGracePeriodSeconds",
)
CONTAINER_KEYS = ("name", "image", "resources", "ports", "restartPolicy")
POD_STATUS_KEYS = ("phase", "reason", "startTime", "nominatedNodeName", "resourceClaimStatuses", "qosClass")
CONTAINER_STATUS_KEYS = ("name", "restartCount")
NODE_SPEC_KEYS = ("taints", "unschedulable")
NODE_STATUS_KEYS = ("allocatable", "capacity", "addresses")


def _pick(obj: Mapping[str, Any], keys: tuple[str, ...]) -> RawDict:
    return {k: obj[k] for k in keys if k in obj}


def _metadata(meta: Any) -> Any:
    if not isinstance(meta, _MAP):
        return meta
    out = _pick(meta, META_KEYS)
    annotations = out.get("annotations")
    if isinstance(annotations, _MAP) and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def _containers(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [_pick(c, CONTAINER_KEYS) if isinstance(c, _MAP) else c for c in value]


def _container_statuses(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    out = []
    for cs in value:
        if not isinstance(cs, _MAP):
            out.append(cs)
            continue
        kept = _pick(cs, CONTAINER_STATUS_KEYS)
        state = cs.get("state")
        if isinstance(state, _MAP):
            kept["state"] = {
                k: _pick(d, _TERMINATED if k == "terminated" else _WAITING) if isinstance(d, _MAP) else {}
                for k, d in state.items()
                if k in ("waiting", "terminated")
            }
        elif state is not None:
            kept["state"] = state
        out.append(kept)
    return out


#: What a container's state keeps: why it waits; why and when it terminated (a pod seen to succeed
#: tells how long its namespace and queue's pods run, :mod:`volsched.model.history`).
_WAITING = ("reason", "exitCode")
_TERMINATED = ("reason", "exitCode", "finishedAt")


#: The volumes kept: claims (placement reads them), node-local storage (rescheduling's evictor does).
_KEPT_VOLUMES = frozenset({"persistentVolumeClaim", "emptyDir", "hostPath"})


def _volume(v: Mapping[str, Any]) -> RawDict:
    out = _pick(v, ("name", "persistentVolumeClaim"))
    for local in ("emptyDir", "hostPath"):
        if v.get(local) is not None:
            out[local] = {}
    return out


def _ready_condition(conditions: Any) -> RawDict | None:
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, _MAP) and c.get("type") == "Ready":
            return _pick(c, ("type", "status"))
    return None


def prune_pod(pod: RawDict) -> RawDict:
    """``pod`` with only what the scheduler reads (a new dict; ``pod`` is left as it is)."""
    out: RawDict = {k: pod[k] for k in ("kind", "apiVersion") if k in pod}
    if "metadata" in pod:
        out["metadata"] = _metadata(pod["metadata"])
    spec = pod.get("spec")
    if isinstance(spec, _MAP):
        s = _pick(spec, POD_SPEC_KEYS)
        for key in ("containers", "initContainers"):
            if key in s:
                s[key] = _containers(s[key])
        volumes = s.get("volumes")
        if isinstance(volumes, list):
            s["volumes"] = [_volume(v) for v in volumes if isinstance(v, _MAP) and _KEPT_VOLUMES & v.keys()]
            if not s["volumes"]:
                del s["volumes"]
        out["spec"] = s
    elif spec is not None:
        out["spec"] = spec
    status = pod.get("status")
    if isinstance(status, _MAP):
        st = _pick(status, POD_STATUS_KEYS)
        for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            if key in status:
                st[key] = _container_statuses(status[key])
        ready = _ready_condition(status.get("conditions"))
        if ready is not None:  # whether a Running pod is healthy, as PodDisruptionBudgets count it
            st["conditions"] = [ready]
        out["status"] = st
    elif status is not None:
        out["status"] = status
    return out


def prune_node(node: RawDict) -> RawDict:
    """``node`` with only what the scheduler reads (a new dict; ``node`` is left as it is)."""
    out: RawDict = {k: node[k] for k in ("kind", "apiVersion") if k in node}
    if "metadata" in node:
        out["metadata"] = _metadata(node["metadata"])
    spec = node.get("spec")
    out["spec"] = _pick(spec, NODE_SPEC_KEYS) if isinstance(spec, _MAP) else spec
    if spec is None:
        del out["spec"]
    status = node.get("status")
    if isinstance(status, _MAP):
        st = _pick(status, NODE_STATUS_KEYS)
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            st["conditions"] = [
                _pick(c, ("type", "status")) if isinstance(c, _MAP) else c
                for c in conditions
                if not isinstance(c, _MAP) or c.get("type") == "Ready"
            ]
        elif conditions is not None:
            st["conditions"] = conditions
        out["status"] = st
    elif status is not None:
        out["status"] = status
    return out


PRUNERS = {"Pod": prune_pod, "Node": prune_node}
