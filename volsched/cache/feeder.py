"""Feeds watch events into a :class:`ClusterState`, in order, and remembers pods the scheduler bound.

Two things make a watch-fed cache safe to schedule from:

* Ordering. The operator lists every kind once before its first session and the watches replay
  their own listings afterwards; an event older (by ``resourceVersion``) than what the cache holds
  for that object, or than its deletion, is dropped, so a late replay never "unbinds" a pod.
* Assumed binds (kube-scheduler's assume/bind split). A pod is marked bound in the cache when the
  session decides to bind it (``assume``), before the bind is sent, so the next session plans around
  it; a failed bind undoes that (``forget``); a completed one starts the assumption's time to live
  (``finish``). An event showing the pod still unbound does not undo an assumption while its bind is
  in flight, nor after, until it expires. The record the bind writes (``admitted.BOUND_UNDER``, which the
  apiserver copies onto the pod with its node) is laid over with the node and goes with it: between the
  bind and its echo, what reads the record (``volsched.cache.names``, the orphans) sees the pod as the
  echo will show it.
* Assumed evictions. A pod evicted (or perhaps evicted: the outcome unknown) is being deleted in the
  cache from the eviction's outcome on (``assume_evicted``: a ``deletionTimestamp`` of the cache's own
  laid over it, so its task is releasing), not running until the watch delivers the deletion: the next
  session counts what is really left (a gang's spare for its victim filter, a budget's healthy pods)
  and does not evict it, or another, again. An event not showing the deletion does not undo that
  until the assumption's time to live ends; then a perhaps-evicted pod is the API's running pod again.

No I/O happens here.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from volsched.cache.doorbell import ARRIVED
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.cache.workload import WORKLOAD_PODGROUP
from volsched.model.admitted import BOUND_UNDER
from volsched.model.decode import named_group
from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of, uid_of
from volsched.model.scalars import rfc3339
from volsched.records import dataclass

log = logging.getLogger("volsched.cache")

#: Kinds a pod names (its queue, its group): one refused as invalid is said so on the pods naming it.
_REFUSABLE = frozenset(("Queue", "PodGroup", VOLCANO_QUEUE, VOLCANO_PODGROUP, WORKLOAD_PODGROUP))
#: The API's kind of each kind the cache names otherwise (events name the object by its API kind).
API_KIND = {VOLCANO_QUEUE: "Queue", VOLCANO_PODGROUP: "PodGroup", WORKLOAD_PODGROUP: "PodGroup"}


def _rv(obj: Raw) -> int | None:
    return _version(meta_of(obj).get("resourceVersion"))


def _version(value: Any) -> int | None:
    """A ``metadata.resourceVersion`` as a number, None when it is none."""
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def object_key(kind: str, obj: Raw) -> tuple[str, str | None, str]:
    return _key_of(kind, meta_of(obj))


def _key_of(kind: str, meta: Raw) -> tuple[str, str | None, str]:
    return kind, meta.get("namespace") or None, str(meta.get("name") or "")


@dataclass(frozen=True)
class Rejection:
    """An object the cache refused, or took with part of it ignored, and why (the user-facing message):
    the operator puts it in an event on the object."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str
    message: str
    #: A refused pod's PodGroup (``ns/name``) as its group annotation names it, else "": the pod is not
    #: held, but the group is still its own (a PodGroup left behind is not deleted under it).
    group: str = ""


@dataclass(slots=True)
class Assumption:
    """A pod taken as bound to ``node`` before the watch shows it (see ``ClusterState.assume``)."""

    uid: str
    node: str
    #: inf while the bind is in flight: the time to live counts from its completion (``finish``).
    expires: float = math.inf
    #: The bind may not have happened (its outcome is UNKNOWN): when the time to live ends before the
    #: watch showed the pod bound, the pod is the API's unbound pod again (pending), as ``forget`` does.
    unsure: bool = False
    #: The record the bind writes (``admitted.BOUND_UNDER``), laid over with the node; "" for none.
    record: str = ""
    #: What the API's pod holds under the record's key, as the last event laid over showed it (None:
    #: nothing): the cached pod holds it again once the assumption is taken off.
    under: str | None = None


@dataclass(slots=True)
class EvictionAssumption:
    """A pod taken as being deleted before the watch shows it (an eviction sent)."""

    uid: str
    #: The ``metadata.deletionTimestamp`` laid over the API's pod: microseconds, which the API's own
    #: (whole seconds) never has, so the cache tells its own from the API's.
    stamp: str
    expires: float
    #: The eviction may not have happened (its outcome is UNKNOWN): when the time to live ends before the
    #: watch showed the pod being deleted, the pod is the API's running pod again.
    unsure: bool = False


def _unassumed(raw: Raw, a: Assumption | None) -> Raw:
    """The API's pod under the cached ``raw``: without the node assumption ``a`` laid over it (and its
    record: the API's own text under the record's key instead, if any), if so."""
    spec = raw.get("spec") or {}
    if a is None or spec.get("nodeName") != a.node or uid_of(raw) != a.uid:
        return raw
    out = {**raw, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}
    if a.record:
        meta = meta_of(raw)
        notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != BOUND_UNDER}
        if a.under is not None:
            notes[BOUND_UNDER] = a.under
        out["metadata"] = {**meta, "annotations": notes}
    return out


def _laid_over(pod: Raw, a: Assumption) -> Raw:
    """The API's unbound ``pod`` with assumption ``a`` laid over it: its node and the record its bind
    writes (noting in ``a`` what the API's pod holds under the record's key). A shallow copy: the raw pod
    is never changed in place, and only these two differ."""
    out = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": a.node}}
    if a.record:
        meta = meta_of(pod)
        notes = meta.get("annotations") or {}
        a.under = notes.get(BOUND_UNDER)
        if a.under != a.record:
            out["metadata"] = {**meta, "annotations": {**notes, BOUND_UNDER: a.record}}
    return out


class Feeder:
    def __init__(
        self,
        state: ClusterState,
        *,
        assume_ttl: float = 30.0,
        tombstone_ttl: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self.assume_ttl = assume_ttl
        self._clock = clock
        self._lock = threading.RLock()  # (held through a listing's page: see ``page``)
        self._seen: dict[tuple[str, str | None, str], int] = {}
        #: Deleted objects' last resourceVersions, oldest deletion first, with when they were deleted:
        #: kept ``tombstone_ttl`` seconds (a late event of a deleted object comes from an event or a list
        #: in flight at the deletion, not later), so they do not pile up with every pod that ever ran.
        self._deleted: dict[tuple[str, str | None, str], tuple[int, float]] = {}
        self.tombstone_ttl = tombstone_ttl
        self._assumed: dict[str, Assumption] = {}
        self._evicting: dict[str, EvictionAssumption] = {}
        self.rejected: dict[str, Rejection] = {}  # "Kind ns/name" -> why the cache refused it

    # --- events -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def page(self) -> Iterator[None]:
        """Applies and deletes (a listing's page of them) under one hold of the feeder's lock and the
        cache's (:meth:`ClusterState.batch`: the doorbell rung once a kind, as the hold ends), not one
        each: a listing at start hands over tens of thousands of objects, on two threads at once."""
        with self._lock, self.state.batch():
            yield

    def apply(self, kind: str, obj: Raw, *, strict: bool = False) -> bool:
        """Add or update. Returns False when the event was stale or the object invalid; with ``strict``
        an invalid object raises :class:`InputError` instead (the simulator's input is wrong: say so)."""
        obj = {**obj, "kind": kind} if obj.get("kind") != kind else obj
        meta = meta_of(obj)  # (object_key's and _rv's, read once)
        key = _key_of(kind, meta)
        rv = _version(meta.get("resourceVersion"))
        with self._lock:
            if rv is not None:
                if rv < self._seen.get(key, -1) or rv <= self._deleted.get(key, (-1, 0.0))[0]:
                    return False
                self._seen[key] = rv
                self._deleted.pop(key, None)
            if kind == "Pod":
                # Laid over and stored under one hold of the lock: a forget (or assume) that runs in
                # between would be undone by an overlay computed before it.
                # The API shows the bind the cache assumed: nothing new for a session.
                if not self._assumed and not self._evicting:  # (a listing at start: nothing to lay over)
                    return self._store(kind, key, obj, strict=strict)
                pod_key = f"{key[1]}/{key[2]}"
                a = self._assumed.get(pod_key)
                e = self._evicting.get(pod_key)
                uid = uid_of(obj)
                confirming = (
                    a is not None and (obj.get("spec") or {}).get("nodeName") == a.node and uid == a.uid
                ) or (e is not None and uid == e.uid and bool(obj["metadata"].get("deletionTimestamp")))
                shown = bool((obj.get("spec") or {}).get("nodeName"))  # (a node is laid over none shown)
                obj = self._overlay(obj)
                return self._store(kind, key, obj, strict=strict, confirming=confirming, api_node=shown)
        return self._store(kind, key, obj, strict=strict)

    def _store(
        self,
        kind: str,
        key: tuple[str, str | None, str],
        obj: Raw,
        *,
        strict: bool,
        confirming: bool = False,
        api_node: bool = True,
    ) -> bool:
        """``obj`` into the state; ``api_node``: a node it shows is the API's, not one the cache laid over
        it (the state tells a bind's record from one added after the API showed the pod on a node)."""
        try:
            warning = self.state.apply(obj, confirming=confirming, api_node=api_node)
        except InputError as exc:
            if strict:
                raise
            ref = f"{kind} {key[1]}/{key[2]}" if key[1] else f"{kind} {key[2]}"
            if kind == "Pod" and self.state.hold_refused(obj):
                # Its node runs it all the same: what it holds there counts, nothing else of it.
                why = f"volsched ignores this {kind} but for the room it holds on its node: {exc}"
            else:
                why = f"volsched ignores this {kind} (keeping its last valid version, if any): {exc}"
            self._reject(kind, obj, ref, why, log_line=f"ignoring {ref}: {exc}")
            if kind in _REFUSABLE:
                self.state.refuse(kind, key[1], key[2], exc.message)
            return False
        if kind in _REFUSABLE:
            self.state.refuse(kind, key[1], key[2], None)
        if warning or self.rejected:  # (none refused, none to forget: the usual case)
            ref = f"{kind} {key[1]}/{key[2]}" if key[1] else f"{kind} {key[2]}"
            if warning:
                self._reject(kind, obj, ref, warning, log_line=warning)
            else:
                self.rejected.pop(ref, None)
        return True

    def _reject(self, kind: str, obj: Raw, ref: str, message: str, *, log_line: str) -> None:
        before = self.rejected.get(ref)
        if before is None or before.message != message:
            log.warning("%s", log_line)
        meta = meta_of(obj)
        self.rejected[ref] = Rejection(
            kind=API_KIND.get(kind, kind),
            api_version=str(obj.get("apiVersion") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            message=message,
            group=named_group(obj) if kind == "Pod" else "",
        )

    def delete(self, kind: str, obj: Raw) -> None:
        key = object_key(kind, obj)
        self.rejected.pop(f"{kind} {key[1]}/{key[2]}" if key[1] else f"{kind} {key[2]}", None)
        rv = _rv(obj)
        with self._lock:
            if rv is not None:
                last = max(rv, self._seen.get(key, -1), self._deleted.pop(key, (-1, 0.0))[0])
                now = self._clock()
                self._deleted[key] = (last, now)  # at the end: the table stays in deletion order
                for old in list(itertools.islice(self._deleted, 64)):  # expired ones are the first
                    if self._deleted[old][1] > now - self.tombstone_ttl:
                        break
                    del self._deleted[old]
            self._seen.pop(key, None)
            if kind == "Pod":
                self._assumed.pop(f"{key[1]}/{key[2]}", None)
                self._evicting.pop(f"{key[1]}/{key[2]}", None)
        self.state.delete(kind, key[1], key[2])
        if kind in _REFUSABLE:
            self.state.refuse(kind, key[1], key[2], None)

    # --- assumed binds --------------------------------------------------------------------------------------

    def _overlay(self, pod: Raw) -> Raw:
        meta = meta_of(pod)
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        e = self._evicting.get(key)
        if e is not None:
            if (
                (meta.get("deletionTimestamp") and meta["deletionTimestamp"] != e.stamp)
                or str(meta.get("uid") or "") != e.uid
                or self._clock() >= e.expires
            ):
                self._evicting.pop(key, None)  # the API shows the deletion (or it is another pod now)
            elif not meta.get("deletionTimestamp"):
                pod = {**pod, "metadata": {**meta, "deletionTimestamp": e.stamp}}
        a = self._assumed.get(key)
        if a is None:
            return pod
        if (pod.get("spec") or {}).get("nodeName") or str(meta.get("uid") or "") != a.uid:
            self._assumed.pop(key, None)  # the API has caught up (or it is another pod now)
            return pod
        if self._clock() >= a.expires:
            self._assumed.pop(key, None)
            return pod
        return _laid_over(pod, a)

    def assume(self, pod_key: str, uid: str, node: str, *, record: str = "") -> bool:
        """Mark a pod bound to ``node`` now, as its bind is decided, with ``record`` (the
        ``admitted.BOUND_UNDER`` text its bind writes, if any) on it: it does not expire until ``finish``
        (the bind completed) or ``forget`` (it failed). The cached task takes the node and the record
        without the pod being copied deeply or parsed again. A pod assumed again replaces its earlier
        assumption: the cached pod then shows the earlier assumed node, which is taken for the API's
        unbound pod's. Returns whether the cached task took the node (one change in ``state.changes``,
        the deciding session's own: see ``volsched.cycle.IdleSkip``)."""
        with self._lock:
            before = self._assumed.get(pod_key)
            self._assumed[pod_key] = Assumption(uid=uid, node=node, record=record)
            raw = self.state.raw_pods.get(pod_key)
            if raw is None:
                return False
            api = _unassumed(raw, before)
            pod = self._overlay(api)
            if pod is api:
                return False  # the API already shows a node, or it is another pod: nothing to assume
            if api is not raw and before is not None and (before.node, before.record) == (node, record):
                return False  # the cache shows this node (and record) already
        try:
            return self.state.set_pod_node(pod, base=raw)
        except InputError:  # it parsed before; it parses now
            return False

    def finish(self, pod_key: str, *, unsure: bool = False) -> None:
        """The pod's bind completed (``unsure``: or may have, its outcome unknown): its assumption now
        expires after ``assume_ttl`` unless the watch confirms it first."""
        with self._lock:
            a = self._assumed.get(pod_key)
            if a is not None and a.expires == math.inf:
                a.expires = self._clock() + self.assume_ttl
                a.unsure = unsure

    def forget(self, pod_key: str) -> None:
        """The pod's bind failed: the pod is pending again in the cache (unless the API has shown it
        bound meanwhile, which ended the assumption already)."""
        with self._lock:
            undo = self._unassume(pod_key, self._assumed.pop(pod_key, None))
        self._pending_again([undo] if undo else [])

    # --- assumed evictions ----------------------------------------------------------------------------------

    def assume_evicted(self, pod_key: str, uid: str, *, at: float, unsure: bool = False) -> bool:
        """The pod was evicted (``unsure``: may have been, the outcome unknown) at ``at`` (Unix seconds):
        it is being deleted in the cache at once, its task releasing (it still holds its node until the
        watch delivers the deletion), for ``assume_ttl`` unless the watch shows the deletion first.
        Returns whether the cached pod changed (not when it is gone, already being deleted, or another
        pod by that name: ``uid``, if given, is the evicted one's)."""
        with self._lock:
            raw = self.state.raw_pods.get(pod_key)
            meta = meta_of(raw) if raw is not None else {}
            held = str(meta.get("uid") or "")
            if raw is None or meta.get("deletionTimestamp") or (uid and held != uid):
                return False
            stamp = rfc3339(at, micro=True)
            self._evicting[pod_key] = EvictionAssumption(
                uid=held, stamp=stamp, expires=self._clock() + self.assume_ttl, unsure=unsure
            )
            ns, _, name = pod_key.partition("/")
            pod = {**raw, "metadata": {**meta, "deletionTimestamp": stamp}}
            return self._store("Pod", ("Pod", ns or None, name), pod, strict=False, api_node=False)

    def is_evicting(self, pod_key: str) -> bool:
        """Whether the cache shows ``pod_key`` evicted before the watch has (see ``assume_evicted``)."""
        with self._lock:
            return pod_key in self._evicting

    def _unassume(self, pod_key: str, a: Assumption | None) -> tuple[Raw, Raw] | None:
        """(under ``_lock``) The API's unbound pod under the cached one, with the cached one, when the
        cache shows ``a``'s node laid over it (while assumed, the cached pod is the API's unbound pod
        with the assumed node laid over it); else None."""
        raw = self.state.raw_pods.get(pod_key)
        if raw is None:
            return None
        pod = _unassumed(raw, a)
        return None if pod is raw else (pod, raw)

    def _pending_again(self, undo: Iterable[tuple[Raw, Raw]]) -> None:
        for pod, raw in undo:
            with contextlib.suppress(InputError):  # it parsed before; it parses now
                self.state.set_pod_node(pod, base=raw)

    def expire(self) -> int:
        """Let the assumptions whose time to live is over go, as the next event of their pod would:
        a change for ``state.changes`` (the next session must not be skipped). Returns how many.
        An unsure one (its bind's outcome unknown) whose pod the watch never showed bound meanwhile
        is forgotten: a bind that never landed brings no event, and the pod would keep its room, and a
        gang half of its members, for good. Its pod waits again: the doorbell rings (``arrived``)."""
        with self._lock:
            now = self._clock()
            expired = [key for key, a in self._assumed.items() if now >= a.expires]
            undo = []
            for key in expired:
                a = self._assumed.pop(key)
                if a.unsure and (u := self._unassume(key, a)) is not None:
                    undo.append(u)
            gone = [key for key, e in self._evicting.items() if now >= e.expires]
            for key in gone:
                e = self._evicting.pop(key)
                raw = self.state.raw_pods.get(key)
                meta = meta_of(raw) if raw is not None else {}
                if e.unsure and raw is not None and meta.get("deletionTimestamp") == e.stamp:
                    # Never evicted, as far as the watch tells: running again, as the API has it.
                    api = {**raw, "metadata": {k: v for k, v in meta.items() if k != "deletionTimestamp"}}
                    ns, _, name = key.partition("/")
                    self._store("Pod", ("Pod", ns or None, name), api, strict=False, api_node=False)
            expired += gone
        self._pending_again(undo)
        if undo:  # pods of ours waiting again, as a pod event showing them pending again would ring
            self.state.doorbell.ring(ARRIVED)
        if expired:
            self.state.touch()
        return len(expired)

    def unsure_expiry_in(self) -> float:
        """Seconds (of the feeder's clock) until the first assumption of a bind whose outcome is unknown
        expires (``expire`` then puts its pod back to pending, and rings); inf when there is none."""
        with self._lock:
            first = min((a.expires for a in self._assumed.values() if a.unsure), default=math.inf)
        return first - self._clock() if first < math.inf else math.inf

    def is_assumed(self, pod_key: str) -> bool:
        with self._lock:
            return pod_key in self._assumed

    def pods(self, keys: Iterable[str] | None = None) -> dict[str, Raw]:
        """The cached raw pods by key: all of them, or those of ``keys`` the cache holds."""
        if keys is None:
            return self.state.raw_pods.copy()  # dict.copy is atomic under the GIL
        raw_pods = self.state.raw_pods
        return {key: raw for key in keys if (raw := raw_pods.get(key)) is not None}
