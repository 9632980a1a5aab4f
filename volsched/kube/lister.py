"""One consistent read of everything the scheduler caches, before its first session (read-only).

Plain JSON GETs through :class:`~volsched.kube.rest.LeanRest`: the client's typed APIs (``CoreV1Api``
and the like) import their models, about a second of CPU at start, for answers read as dicts anyway.
Listings are paginated (``limit``/``continue``, as client-go's reflector): one answer never holds a
whole kind, and the pages of one listing are one consistent read (the first page's resourceVersion).
:func:`paginate` is the one pagination loop, for these reads and for the watches' lists
(:meth:`~volsched.kube.watch.ListWatch.relist`). A continue token the apiserver no longer serves (410:
etcd was compacted past the listing's resourceVersion while it was read) starts the listing again from
its first page, as client-go's reflector lists again: not the apiserver's offered "inconsistent"
remainder, which may miss or repeat what changed meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import Any
from urllib.parse import quote

from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE, VOLCANO_VERSION
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_PODGROUP, WORKLOAD_VERSION
from volsched.kube.early import PAGE_SIZE  # objects a page: the early pages' and the listings' alike
from volsched.kube.errors import ApiException
from volsched.kube.rest import LeanRest, loads
from volsched.model.raw import meta_of, version_of
from volsched.model.vocabulary import API_GROUP
from volsched.records import dataclass

log = logging.getLogger("volsched.kube")

#: Seconds a discovery read may take, and a whole listing (tens of thousands of objects on a loaded
#: apiserver).
READ_TIMEOUT = 10.0
LIST_TIMEOUT = 300.0
#: How many times one read starts a listing again whose continue token expired (410) before it raises
#: the 410: each try reads the whole kind again, and one that expires as often is slower than the
#: apiserver's compaction (every 5 minutes by default); the caller's own retry takes it from there.
RESTARTS = 3


@dataclass(frozen=True)
class WatchedKind:
    """A kind the operator lists and watches: its API group, version, plural and scope."""

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
    WatchedKind("StorageClass", "storage.k8s.io", "v1", "storageclasses", False),
    WatchedKind("CSINode", "storage.k8s.io", "v1", "csinodes", False),
    WatchedKind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", False),
    WatchedKind("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities", True),
    WatchedKind("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False),
    WatchedKind("PodGroup", API_GROUP, "v1beta1", "podgroups", True),
    WatchedKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    # Dynamic Resource Allocation (served since Kubernetes 1.34; not served: a warning, looked for again).
    WatchedKind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False),
    WatchedKind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False),
    WatchedKind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True),
    WatchedKind("Pod", "", "v1", "pods", True),
)

#: The kinds of :data:`WATCHED` every kube-apiserver volsched runs against serves (the core group's and
#: the built-in groups' v1; not volsched's CRDs, nor Dynamic Resource Allocation's, served since 1.34): a
#: 404 listing one says the server is not a kube-apiserver, or not at the kubeconfig's address's path.
SERVED_EVERYWHERE: frozenset[WatchedKind] = frozenset(
    k for k in WATCHED if k.group in ("", "scheduling.k8s.io", "storage.k8s.io", "policy")
)

#: Volcano's PodGroup and Queue, watched when the cluster serves them (see ``served_plurals``). Queues
#: come before PodGroups for the same reason as ours; both before pods when listed at start.
VOLCANO_WATCHED: tuple[WatchedKind, ...] = (
    WatchedKind(VOLCANO_QUEUE, VOLCANO_GROUP, VOLCANO_VERSION, "queues", False),
    WatchedKind(VOLCANO_PODGROUP, VOLCANO_GROUP, VOLCANO_VERSION, "podgroups", True),
)

#: Kubernetes' own PodGroup (the Workload API, Kubernetes 1.37 beta: served only with the GenericWorkload
#: feature gate and its runtime config), watched when the cluster serves it.
WORKLOAD_WATCHED: tuple[WatchedKind, ...] = (
    WatchedKind(WORKLOAD_PODGROUP, WORKLOAD_GROUP, WORKLOAD_VERSION, "podgroups", True),
)


def served_resources(rest: LeanRest, group: str, version: str) -> set[str]:
    """The resources the API serves in ``group/version``, subresources too (``podgroups/status``: the
    CRD has a status subresource); empty when it serves none (no CRDs)."""
    try:
        body = rest.get(f"/apis/{group}/{version}", timeout=READ_TIMEOUT)
    except ApiException as exc:
        if exc.status == 404:
            return set()
        raise
    return {str(r.get("name")) for r in body.get("resources") or []}


def served_plurals(rest: LeanRest, group: str, version: str) -> set[str]:
    """The resources the API serves in ``group/version``, without subresources."""
    return {name for name in served_resources(rest, group, version) if "/" not in name}


@dataclass(frozen=True)
class Page:
    """One page of a listing: its objects, the listing's resourceVersion, and whether it is a listing's
    first page: the first one, or the first of a listing started again (then what earlier pages showed
    is not part of the listing: an object they had and it lacks was deleted meanwhile)."""

    items: list[dict[str, Any]]
    resource_version: str
    fresh: bool
    #: Whether its items were pruned as the page was decoded (``paginate``'s ``decode``).
    pruned: bool = False


def paginate(
    fetch: Callable[[str], bytes],
    *,
    what: str,
    ahead: Executor | None = None,
    restarts: int = RESTARTS,
    decode: Callable[[bytes], dict[str, Any] | None] | None = None,
    at_hand: Callable[[str], bytes | None] | None = None,
) -> Iterator[Page]:
    """A listing's pages, each decoded here (on the caller's thread) as it is taken. ``fetch(token)``
    reads the page after ``token`` ("" for the first), raising
    :class:`~volsched.kube.errors.ApiException` for an error answer. With ``ahead``, the next page is
    fetched there while the caller handles this one (the apiserver reads and encodes it meanwhile). A 410 on a continue token starts the listing again from
    its first page (a :attr:`Page.fresh` one), up to ``restarts`` times; any other error is raised.
    ``what`` names the listing in the log. ``decode``: decodes a page with its items pruned
    (:func:`~volsched.kube.prune.decode_pruned`; a :attr:`Page.pruned` one), or returns None for one it
    does not take, decoded whole then. ``at_hand(token)``: the page after ``token`` when it is here
    already (listed early: :meth:`~volsched.kube.early.EarlyListing.at_hand`), else None: a page at
    hand is taken as it is, with no thread started for it (each was a thread's start, and the wait for
    it to be scheduled, for a page that needed no fetching)."""

    def ask(token: str) -> Callable[[], bytes]:
        if at_hand is not None and (data := at_hand(token)) is not None:
            return lambda: data
        if ahead is None:
            return lambda: fetch(token)
        return ahead.submit(fetch, token).result

    token, fresh, left = "", True, restarts
    pending = ask(token)
    while True:
        try:
            data = pending()
        except ApiException as exc:
            if exc.status != 410 or not token or left == 0:
                raise
            left -= 1
            log.info(
                "listing %s: the apiserver no longer serves the listing's next page (410: compacted "
                "since its first page); listing them again from the start",
                what,
            )
            token, fresh = "", True
            pending = ask(token)
            continue
        body = decode(data) if decode is not None else None
        pruned = body is not None
        if body is None:
            body = loads(data)
        del data
        meta = meta_of(body)
        following = str(meta.get("continue") or "")
        if following:
            pending = ask(following)
        page = Page(body.get("items") or [], str(meta.get("resourceVersion") or ""), fresh, pruned)
        del body, meta  # the page's objects only: not two decoded pages alive while the next decodes
        yield page
        del page
        if not following:
            return
        token, fresh = following, False


def list_pages(
    rest: LeanRest,
    path: str,
    *,
    timeout: Callable[[], float],
    throttle_retries: int = 10,
    limit: int = PAGE_SIZE,
) -> Iterator[list[dict[str, Any]]]:
    """The items of a listing at ``path`` (which may have a query already), page by page (see
    :func:`paginate`). ``timeout()`` bounds each page's request, asked before each one;
    ``throttle_retries`` is how many 429s each page waits out (see :meth:`~volsched.kube.rest.LeanRest.get`).
    A listing started again (a continue token expired) hands over no object twice: what earlier pages
    gave, unchanged (the same resourceVersion, which no two versions of a kind's objects share), is
    left out of its pages."""
    sep = "&" if "?" in path else "?"

    def fetch(token: str) -> bytes:
        query = f"{sep}limit={limit}" + (f"&continue={quote(token, safe='')}" if token else "")
        return rest.read(path + query, timeout=timeout(), throttle_retries=throttle_retries)

    given: set[str] = set()  # the resourceVersions handed over
    again = False  # the listing was started again
    for page in paginate(fetch, what=path):
        again = again or (page.fresh and bool(given))
        items = [o for o in page.items if _version(o) not in given] if again else page.items
        given.update(_version(o) for o in items)
        yield items


def _version(obj: dict[str, Any]) -> str:
    return version_of(obj)


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
