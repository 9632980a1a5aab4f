"""One consistent read of everything the scheduler caches, before its first session (read-only).

Plain JSON GETs through :class:`~volsched.kube.rest.LeanRest`: the client's typed APIs (``CoreV1Api``
and the like) import their models, about a second of CPU at start, for answers read as dicts anyway.
Listings are paginated (``limit``/``continue``, as client-go's reflector): one answer never holds a
whole kind, and the pages of one listing are one consistent read (the first page's resourceVersion).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
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
#: Objects per page of a listing (client-go's reflector asks for 500).
PAGE_SIZE = 500


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


def list_pages(
    rest: LeanRest,
    path: str,
    *,
    timeout: Callable[[], float],
    throttle_retries: int = 10,
    limit: int = PAGE_SIZE,
) -> Iterator[list[dict[str, Any]]]:
    """The items of a listing at ``path`` (which may have a query already), page by page. ``timeout()``
    bounds each page's request, asked before each one; ``throttle_retries`` is how many 429s each page
    waits out (see :meth:`~volsched.kube.rest.LeanRest.get`)."""
    sep = "&" if "?" in path else "?"
    token = ""
    while True:
        query = f"{sep}limit={limit}" + (f"&continue={quote(token, safe='')}" if token else "")
        body = rest.get(path + query, timeout=timeout(), throttle_retries=throttle_retries)
        yield body.get("items") or []
        token = str((body.get("metadata") or {}).get("continue") or "")
        if not token:
            return


def pods_of(
    rest: LeanRest, scheduler_name: str, *, timeout: Callable[[], float], throttle_retries: int = 0
) -> Iterator[list[dict[str, Any]]]:
    """The pods ``scheduler_name`` schedules, read consistently from the apiserver (not from a watch),
    page by page (see :func:`list_pages`)."""
    selector = quote(f"spec.schedulerName={scheduler_name}", safe="")
    pages = list_pages(
        rest, f"/api/v1/pods?fieldSelector={selector}", timeout=timeout, throttle_retries=throttle_retries
    )
    for page in pages:
        for item in page:
            item["kind"], item["apiVersion"] = "Pod", "v1"
        yield page
