"""One consistent read of everything the scheduler caches, before its first session (read-only)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE, VOLCANO_VERSION
from volsched.model.vocabulary import API_GROUP

log = logging.getLogger("volsched.kube")


@dataclass(frozen=True)
class WatchedKind:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool

    @property
    def path(self) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        return f"{base}/{self.plural}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


#: In the order the cache wants them: what pods refer to comes first.
WATCHED: tuple[WatchedKind, ...] = (
    WatchedKind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False),
    WatchedKind("Namespace", "", "v1", "namespaces", False),
    WatchedKind("ResourceQuota", "", "v1", "resourcequotas", True),
    WatchedKind("Queue", API_GROUP, "v1beta1", "queues", False),
    WatchedKind("Node", "", "v1", "nodes", False),
    WatchedKind("PersistentVolume", "", "v1", "persistentvolumes", False),
    WatchedKind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True),
    WatchedKind("PodGroup", API_GROUP, "v1beta1", "podgroups", True),
    WatchedKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    WatchedKind("Pod", "", "v1", "pods", True),
)

#: Volcano's PodGroup and Queue, watched when the cluster serves them (see ``served_plurals``). Queues
#: come before PodGroups for the same reason as ours; both before pods when listed at start.
VOLCANO_WATCHED: tuple[WatchedKind, ...] = (
    WatchedKind(VOLCANO_QUEUE, VOLCANO_GROUP, VOLCANO_VERSION, "queues", False),
    WatchedKind(VOLCANO_PODGROUP, VOLCANO_GROUP, VOLCANO_VERSION, "podgroups", True),
)


def served_plurals(api: client.ApiClient, group: str, version: str) -> set[str]:
    """The resources the API serves in ``group/version`` (empty when it serves none: no CRDs)."""
    try:
        resp: Any = client.CustomObjectsApi(api).get_api_resources(group, version, _preload_content=False)
        body = json.loads(resp.data)
    except ApiException as exc:
        if exc.status == 404:
            return set()
        raise
    return {str(r.get("name")) for r in body.get("resources") or [] if "/" not in str(r.get("name"))}


def list_kind(api: client.ApiClient, kind: WatchedKind) -> list[dict[str, Any]]:
    """All objects of one kind as raw dicts (with kind set); [] when the API does not serve it."""
    try:
        if kind.group in (API_GROUP, VOLCANO_GROUP):
            resp: Any = client.CustomObjectsApi(api).list_cluster_custom_object(
                kind.group, kind.version, kind.plural, _preload_content=False
            )
        elif kind.group == "scheduling.k8s.io":
            resp = client.SchedulingV1Api(api).list_priority_class(_preload_content=False)
        elif kind.group == "policy":
            resp = client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces(
                _preload_content=False
            )
        else:
            core = client.CoreV1Api(api)
            listers: dict[str, Callable[..., Any]] = {
                "nodes": core.list_node,
                "namespaces": core.list_namespace,
                "resourcequotas": core.list_resource_quota_for_all_namespaces,
                "pods": core.list_pod_for_all_namespaces,
                "persistentvolumes": core.list_persistent_volume,
                "persistentvolumeclaims": core.list_persistent_volume_claim_for_all_namespaces,
            }
            fn = listers[kind.plural]
            resp = fn(_preload_content=False)
        body = json.loads(resp.data)
    except ApiException as exc:
        if exc.status == 404:
            log.warning("%s are not served by this cluster (is the CRD installed?)", kind.plural)
            return []
        raise
    items: list[dict[str, Any]] = body.get("items") or []
    for item in items:
        item["kind"] = kind.kind
        if kind.group == VOLCANO_GROUP:
            item["apiVersion"] = kind.api_version
        item.setdefault("apiVersion", kind.api_version)
    return items


def list_pods_of(api: client.ApiClient, scheduler_name: str) -> list[dict[str, Any]]:
    """The pods ``scheduler_name`` schedules, read consistently from the apiserver (not from a watch)."""
    resp: Any = client.CoreV1Api(api).list_pod_for_all_namespaces(
        field_selector=f"spec.schedulerName={scheduler_name}", _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(resp.data).get("items") or []
    for item in items:
        item["kind"], item["apiVersion"] = "Pod", "v1"
    return items
