"""One consistent read of everything the scheduler caches, before its first session (read-only).

Plain JSON GETs through :class:`~volsched.kube.rest.LeanRest`: the client's typed APIs (``CoreV1Api``
and the like) import their models, about a second of CPU at start, for answers read as dicts anyway.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE, VOLCANO_VERSION
from volsched.kube.rest import LeanRest
from volsched.model.vocabulary import API_GROUP

log = logging.getLogger("volsched.kube")

#: Seconds a discovery read may take, and a whole listing (tens of thousands of objects on a loaded
#: apiserver).
READ_TIMEOUT = 10.0
LIST_TIMEOUT = 300.0


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


def served_plurals(rest: LeanRest, group: str, version: str) -> set[str]:
    """The resources the API serves in ``group/version`` (empty when it serves none: no CRDs)."""
    try:
        body = rest.get(f"/apis/{group}/{version}", timeout=READ_TIMEOUT)
    except ApiException as exc:
        if exc.status == 404:
            return set()
        raise
    return {str(r.get("name")) for r in body.get("resources") or [] if "/" not in str(r.get("name"))}


def list_kind(rest: LeanRest, kind: WatchedKind) -> list[dict[str, Any]]:
    """All objects of one kind as raw dicts (with kind set); [] when the API does not serve it."""
    try:
        body = rest.get(kind.path, timeout=LIST_TIMEOUT)
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


def list_pods_of(rest: LeanRest, scheduler_name: str) -> list[dict[str, Any]]:
    """The pods ``scheduler_name`` schedules, read consistently from the apiserver (not from a watch)."""
    selector = quote(f"spec.schedulerName={scheduler_name}", safe="")
    body = rest.get(f"/api/v1/pods?fieldSelector={selector}", timeout=LIST_TIMEOUT)
    items: list[dict[str, Any]] = body.get("items") or []
    for item in items:
        item["kind"], item["apiVersion"] = "Pod", "v1"
    return items
