"""Volume binding's pre-bind on a real cluster: before the pods of a commit whose claims wait for their first
consumer are bound, every claim of theirs is bound as the session decided, as kube-scheduler's VolumeBinding
does it, and only then are the pods bound.

* A claim given a volume that exists: the volume's ``claimRef`` names the claim (with
  ``pv.kubernetes.io/bound-by-controller``), written at the resourceVersion read, so a volume another claim
  took meanwhile is never taken from it; the PersistentVolume controller (kube-controller-manager) then
  binds the claim.
* A claim to provision: its ``volume.kubernetes.io/selected-node`` annotation names the pod's node; the
  external provisioner makes the volume there and the PersistentVolume controller binds the claim.

Then the commit waits, with every other commit waiting, on one thread that reads the cache (the watches of
claims, volumes and pods), woken by their events, as kube-scheduler's binder waits on its informers: no
read of the apiserver while it waits. It judges a claim only from an event at or past what the pre-bind
wrote (or read): an event in flight from before it says nothing. A claim bound (``spec.volumeName`` and
``pv.kubernetes.io/bind-completed``) is done; a claim bound to another volume, a volume whose ``claimRef``
was taken off, a provisioner that took the annotation off (it could not provision there), a claim or pod
deleted (a claim being deleted too: its finalizer keeps it, never bound, while a pod refers to it), or no
claim bound within ``timeout`` is a failure. A failure undoes what was written that did not bind (the
annotation taken off, a ``claimRef`` taken off a volume the claim is not bound to), binds none of
the commit's pods (a gang is bound whole or not at all), and says why on each pod (its PodScheduled
condition and a FailedScheduling event); the cycle then forgets their placement and a later session places
them again. The claims of a failed commit back off (as kube-scheduler backs a pod off): the next commit
that binds one of them waits, its pods held where they were placed, 1 s after the first failure, twice as
long after each next one, up to ``BACKOFF_MAX``; a claim bound forgets its failures.

The writes (pre-bind, the pods' binds, the undo) go out on a few threads of the binder's own, never on the
waiting one. It is not the choice of volumes (``volsched.model.volumes``) nor the bind itself
(``KubeWriter.bind``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from volsched.cache.state import ClusterState
from volsched.cycle import FAILED, FENCED, GONE, SKIPPED, BindOutcome
from volsched.framework.decisions import Bind
from volsched.kube.errors import ApiException
from volsched.kube.writer import Fenced, KubeWriter
from volsched.model.raw import Raw, meta_of
from volsched.model.volumes import BOUND_BY_CONTROLLER, SELECTED_NODE, VolumeBinding
from volsched.records import dataclass
from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")

#: The event reason on a pod whose claims could not be bound (kube-scheduler's, for any failed attempt).
FAILED_SCHEDULING = "FailedScheduling"
#: A claim's backoff after its first failed binding (seconds), doubled after each next one up to the most.
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
#: The longest the wait sleeps without an event (seconds): it reads only the cache.
_LOOK_EVERY = 1.0

#: What the wait's look says of a commit that waits on.
_WAITS = object()

PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"


def claim_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"


def volume_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{name}"


class _Failed(Exception):
    """Why the commit's claims could not be bound (said on its pods). ``claims``: their doing (they back
    off), not the pod's deletion or the scheduler stopping; ``gone``: a pod of the commit was deleted."""

    def __init__(self, why: str, *, claims: bool = True, gone: bool = False) -> None:
        super().__init__(why)
        self.claims, self.gone = claims, gone


def _version(obj: Mapping[str, Any]) -> int:
    try:
        return int(meta_of(obj).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


class _Commit:
    """One commit's binds on their way: held back, pre-bound, waited for, finished."""

    def __init__(
        self,
        binds: list[Bind],
        skipped: list[BindOutcome],
        pods: Mapping[str, Raw],
        holding: float | None,
        done: Callable[[list[BindOutcome]], None],
    ) -> None:
        self.binds, self.skipped, self.pods, self.holding, self.done = binds, skipped, pods, holding, done
        #: What the pre-bind wrote (undone on a failure).
        self.written: list[tuple[Bind, VolumeBinding]] = []
        #: Claim key -> the versions (claim, volume) from which the cache's word about it counts.
        self.since: dict[str, tuple[int, int]] = {}
        #: Until when the wait waits for it (``clock``): the end of its backoff, then of its timeout.
        self.deadline = 0.0
        #: Held back (a claim of it backs off) until ``deadline``, then pre-bound.
        self.holding_back = False


@dataclass(slots=True)
class _Backoff:
    """A claim's failed pre-binds so far and when it may be tried again."""

    failures: int
    until: float


class VolumeBinder:
    """Pre-binds the claims of a commit's binds, waits until the cache shows them bound, then binds the pods
    through ``writer``. ``cache``: the operator's, fed by the watches (the binder is told of its claim,
    volume and pod events). ``timeout``: seconds to wait for every claim to be bound (kube-scheduler's
    ``bindTimeoutSeconds``); ``workers``: threads for the writes; ``clock`` for the waits."""

    def __init__(
        self,
        writer: KubeWriter,
        cache: ClusterState,
        *,
        timeout: float,
        workers: int = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer, self.cache, self.timeout, self.clock = writer, cache, timeout, clock
        self._cond = threading.Condition()
        self._waiting: list[_Commit] = []
        self._woken = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="volsched-volumes")
        #: Claim ("ns/name", uid) -> its failed bindings and the end of its backoff.
        self._backoff: dict[tuple[str, str], _Backoff] = {}
        #: Times the wait looked at the cache (for tests).
        self.looks = 0
        cache.watch_volumes(self._wake)

    # --- handing over ------------------------------------------------------------------------------

    def submit(
        self,
        binds: Sequence[Bind],
        pods: Mapping[str, Raw],
        *,
        holding: float | None = None,
        done: Callable[[list[BindOutcome]], None],
    ) -> None:
        """Bind ``binds`` (one commit: a gang's together), their claims first; ``done`` is called once with
        one outcome each (on one of the binder's threads, or here for a commit with nothing of ours)."""
        ours = [b for b in binds if self.writer.schedules(pods.get(b.pod))]
        skipped = [BindOutcome(b, SKIPPED, "not scheduled by volsched") for b in binds if b not in ours]
        if not ours:
            done(skipped)
            return
        commit = _Commit(ours, skipped, pods, holding, done)
        until = self._backing_off(commit)
        if until is None:
            self._run(self._prebind_all, commit)
        else:
            commit.holding_back, commit.deadline = True, until
            self._wait_for(commit)

    def bind_all(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, holding: float | None = None
    ) -> list[BindOutcome]:
        """:meth:`submit`, waited for: the outcomes."""
        out: list[BindOutcome] = []
        finished = threading.Event()

        def done(outcomes: list[BindOutcome]) -> None:
            out.extend(outcomes)
            finished.set()

        self.submit(binds, pods, holding=holding, done=done)
        finished.wait()
        return out

    def close(self) -> None:
        """Stop: commits still waiting fail (what they wrote undone, their pods told), and no new one is
        taken."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        self._pool.shutdown(wait=True)

    def _run(self, step: Callable[[_Commit], None], commit: _Commit) -> None:
        """``step`` of ``commit`` on a write thread (here, once closed)."""
        try:
            self._pool.submit(self._step, step, commit)
        except RuntimeError:  # shut down
            self._step(step, commit)

    def _step(self, step: Callable[[_Commit], None], commit: _Commit) -> None:
        try:
            step(commit)
        except Exception as exc:  # each step answers for itself; anything else fails the commit
            log.warning("binding volumes: %s", error_summary(exc))
            commit.done(commit.skipped + [BindOutcome(b, FAILED, error_summary(exc)) for b in commit.binds])

    # --- pre-bind ----------------------------------------------------------------------------------

    def _renew(self) -> None:
        if self.writer.fence is not None:
            self.writer.fence.renew_if_due()

    def _prebind_all(self, commit: _Commit) -> None:
        self._renew()
        try:
            for b in commit.binds:
                for v in b.volumes:
                    self._prebind(commit, b, v)
        except (Fenced, _Failed) as exc:
            self._finish(commit, exc)
            return
        commit.holding_back, commit.deadline = False, self.clock() + self.timeout
        self._wait_for(commit)

    def _read(self, path: str, what: str) -> dict[str, Any]:
        try:
            return self.writer.read(path)
        except ApiException as exc:
            if exc.status == 404:
                raise _Failed(f"{what} does not exist any more") from exc
            raise _Failed(f"{what}: {exc.status} reading it") from exc
        except Fenced:
            raise
        except Exception as exc:
            raise _Failed(f"{what}: {error_summary(exc)}") from exc

    def _write(self, path: str, body: Any, what: str, holding: float | None) -> dict[str, Any]:
        try:
            return self.writer.replace(path, body, holding=holding)
        except ApiException as exc:
            why = "changed meanwhile" if exc.status == 409 else f"{exc.status} writing it"
            raise _Failed(f"{what}: {why}") from exc
        except Fenced:
            raise
        except Exception as exc:
            raise _Failed(f"{what}: {error_summary(exc)}") from exc

    def _prebind(self, commit: _Commit, bind: Bind, v: VolumeBinding) -> None:
        """Write ``v``'s pre-bind (nothing for a claim bound already), and note from which versions the
        cache's word about it counts."""
        what = f"persistentvolumeclaim {v.key}"
        path = claim_path(v.namespace, v.claim)
        claim = self._read(path, what)
        if v.claim_uid and meta_of(claim).get("uid") != v.claim_uid:
            raise _Failed(f"{what} was deleted and made again")
        if meta_of(claim).get("deletionTimestamp"):
            raise _Failed(f"{what} is being deleted")
        bound_to = (claim.get("spec") or {}).get("volumeName") or ""
        if bound_to:
            if v.volume and bound_to != v.volume:
                raise _Failed(f"{what} was bound to persistentvolume {bound_to} meanwhile")
            self._since(commit, v, _version(claim), 0)
            return
        if not v.volume:
            meta = meta_of(claim)
            annotations = {**(meta.get("annotations") or {}), SELECTED_NODE: bind.node}
            body = {**claim, "metadata": {**meta, "annotations": annotations}}
            written = self._write(path, body, what, commit.holding)
            commit.written.append((bind, v))
            self._since(commit, v, _version(written), 0)
            return
        pv_what = f"persistentvolume {v.volume}"
        volume = self._read(volume_path(v.volume), pv_what)
        meta, spec = meta_of(volume), volume.get("spec") or {}
        ref = spec.get("claimRef") or {}
        if meta.get("deletionTimestamp"):
            raise _Failed(f"{pv_what} is being deleted")
        if ref and (ref.get("namespace"), ref.get("name")) != (v.namespace, v.claim):
            raise _Failed(f"{pv_what} was bound to claim {ref.get('namespace')}/{ref.get('name')} meanwhile")
        if ref and ref.get("uid") == v.claim_uid:  # pre-bound to it already
            self._since(commit, v, _version(claim), _version(volume))
            return
        annotations = {**(meta.get("annotations") or {}), BOUND_BY_CONTROLLER: "yes"}
        claim_ref = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": v.namespace,
            "name": v.claim,
            "uid": v.claim_uid or meta_of(claim).get("uid"),
            "resourceVersion": meta_of(claim).get("resourceVersion"),
        }
        body = {
            **volume,
            "metadata": {**meta, "annotations": annotations},
            "spec": {**spec, "claimRef": claim_ref},
        }
        written = self._write(volume_path(v.volume), body, pv_what, commit.holding)
        commit.written.append((bind, v))
        self._since(commit, v, _version(claim), _version(written))

    def _since(self, commit: _Commit, v: VolumeBinding, claim: int, volume: int) -> None:
        commit.since[v.key] = (claim, volume)
        # The cache's assumption of this pre-bind ends at an event at or past it, whatever it shows.
        if v.volume:
            self.cache.volume_written(PV, v.volume, volume)
        else:
            self.cache.volume_written(PVC, v.key, claim)

    # --- waiting ---------------------------------------------------------------------------------------

    @property
    def waiting(self) -> int:
        """Commits waiting (held back, or for their claims)."""
        with self._cond:
            return len(self._waiting)

    def _wake(self) -> None:
        """A claim, volume or pod event came (the cache's feeding thread: never blocks for long)."""
        with self._cond:
            if self._waiting:
                self._woken = True
                self._cond.notify()

    def _wait_for(self, commit: _Commit) -> None:
        """Hand ``commit`` to the waiting thread (started with the first)."""
        with self._cond:
            closed = self._closed
            if not closed:
                self._waiting.append(commit)
                self._woken = True
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._watch, name="volsched-volume-wait", daemon=True
                    )
                    self._thread.start()
                self._cond.notify()
        if closed:
            self._finish(commit, _Failed("the scheduler is stopping", claims=False))

    def _watch(self) -> None:
        """The one thread that waits for every commit: looks at the cache when an event came, when a
        deadline is up, and at least every ``_LOOK_EVERY`` seconds; hands each commit decided to a write
        thread."""
        while True:
            with self._cond:
                while not self._woken and not self._closed:
                    soonest = min((c.deadline for c in self._waiting), default=None)
                    if soonest is None:
                        self._cond.wait()
                        continue
                    left = soonest - self.clock()
                    if left <= 0:
                        break
                    self._cond.wait(min(left, _LOOK_EVERY))
                    break
                self._woken = False
                closed = self._closed
                commits = list(self._waiting)
            decided: list[tuple[_Commit, Exception | None]] = []
            for commit in commits:
                verdict = _Failed("the scheduler is stopping", claims=False) if closed else self._look(commit)
                if verdict is not _WAITS:
                    decided.append((commit, verdict))
            self.looks += 1
            with self._cond:
                for commit, _ in decided:
                    self._waiting.remove(commit)
                if closed:
                    self._thread = None
            for commit, verdict in decided:
                if closed:
                    self._step(partial(self._finish, verdict=verdict), commit)
                elif verdict is None and commit.holding_back:
                    self._run(self._prebind_all, commit)
                else:
                    self._run(partial(self._finish, verdict=verdict), commit)
            if closed:
                return

    def _look(self, commit: _Commit) -> Any:
        """What the cache says of ``commit`` now: None when every claim is bound (or its backoff is over),
        the failure (an exception) when one cannot be, ``_WAITS`` while it waits."""
        fence = self.writer.fence
        if fence is not None and fence.time_left() <= 0:
            return Fenced("this replica may have lost the scheduler Lease while volumes were being bound")
        for b in commit.binds:
            if self.cache.pod_uid(b.pod) != b.uid:
                return _Failed(f"pod {b.pod}: pod does not exist any more", claims=False, gone=True)
        now = self.clock()
        if commit.holding_back:
            return None if now >= commit.deadline else _WAITS
        try:
            pending = [v.key for b in commit.binds for v in b.volumes if not self._bound(commit, b, v)]
        except _Failed as exc:
            return exc
        if not pending:
            return None
        if now >= commit.deadline:
            return _Failed(
                f"persistentvolumeclaim(s) {', '.join(sorted(set(pending)))} not bound within {self.timeout:g} s "
                "(waiting for the volume's provisioner and the PersistentVolume controller)"
            )
        return _WAITS

    def _bound(self, commit: _Commit, bind: Bind, v: VolumeBinding) -> bool:
        """Whether the cache shows ``v``'s claim bound as asked (raises :class:`_Failed` when it cannot be
        any more). What the cache held before the pre-bind's own versions says nothing yet."""
        what = f"persistentvolumeclaim {v.key}"
        claim = self.cache.claim_as_seen(v.key)
        if claim is None:
            raise _Failed(f"{what} does not exist any more")
        claim_since, volume_since = commit.since.get(v.key, (0, 0))
        if claim.version < claim_since:
            return False
        if v.claim_uid and claim.uid != v.claim_uid:
            raise _Failed(f"{what} was deleted and made again")
        if claim.deleting:  # kept by its pvc-protection finalizer while a pod refers to it: never bound
            raise _Failed(f"{what} is being deleted")
        if v.volume:
            if claim.volume and claim.volume != v.volume:
                raise _Failed(f"{what} was bound to persistentvolume {claim.volume} instead")
            if not claim.volume:
                pv = self.cache.volume_as_seen(v.volume)
                if pv is None:
                    raise _Failed(f"persistentvolume {v.volume} does not exist any more")
                if pv.version >= volume_since and (pv.claim_ref is None or pv.claim_ref[0] != v.key):
                    raise _Failed(f"persistentvolume {v.volume}'s claimRef was taken off")
                return False
        elif not claim.volume:
            if claim.selected_node != bind.node:
                raise _Failed(f"provisioning failed for {what} (its provisioner took the selected node off)")
            return False
        return claim.bind_completed

    # --- backoff ---------------------------------------------------------------------------------------

    def _claims(self, commit: _Commit) -> list[tuple[str, str]]:
        return [(v.key, v.claim_uid) for b in commit.binds for v in b.volumes]

    def _backing_off(self, commit: _Commit) -> float | None:
        """Until when ``commit`` waits before its pre-bind (a claim of it failed lately), None: it does not."""
        with self._cond:
            until = max(
                (self._backoff[c].until for c in self._claims(commit) if c in self._backoff), default=None
            )
        return until if until is not None and until > self.clock() else None

    def _backoff_after(self, commit: _Commit, failed: bool) -> tuple[int, float]:
        """Note the commit's outcome for its claims' backoff; after a failure, (its failures, the seconds
        the next binding of them waits)."""
        now = self.clock()
        with self._cond:
            if not failed:
                for c in self._claims(commit):
                    self._backoff.pop(c, None)
                return 0, 0.0
            for key, entry in list(self._backoff.items()):  # forgotten once long over
                if entry.until + BACKOFF_MAX < now:
                    del self._backoff[key]
            failures = 1 + max(
                (self._backoff[c].failures for c in self._claims(commit) if c in self._backoff), default=0
            )
            delay = min(BACKOFF_FIRST * 2 ** (failures - 1), BACKOFF_MAX)
            for c in self._claims(commit):
                self._backoff[c] = _Backoff(failures, now + delay)
        return failures, delay

    # --- the end ---------------------------------------------------------------------------------------

    def _finish(self, commit: _Commit, verdict: Exception | None) -> None:
        """Bind the pods (every claim bound), or undo and tell why; then hand the outcomes over."""
        binds = commit.binds
        if verdict is None:
            self._backoff_after(commit, failed=False)
            self._renew()
            outcomes = [self.writer.bind(b, commit.pods.get(b.pod), holding=commit.holding) for b in binds]
        elif isinstance(verdict, Fenced):  # the next leader sees what was written
            outcomes = [BindOutcome(b, FENCED, str(verdict)) for b in binds]
        else:
            why = f"binding volumes: {verdict}; not bound"
            gone = isinstance(verdict, _Failed) and verdict.gone
            if not isinstance(verdict, _Failed) or verdict.claims:
                failures, delay = self._backoff_after(commit, failed=True)
                times = "time" if failures == 1 else "times"
                why += f"; backing off {delay:g} s (failed {failures} {times})"
            self._undo(commit.written, commit.holding)
            self._tell(binds, why)
            outcomes = [BindOutcome(b, GONE if gone else FAILED, why) for b in binds]
        commit.done(commit.skipped + outcomes)

    def _undo(self, written: Sequence[tuple[Bind, VolumeBinding]], holding: float | None) -> None:
        """Take off what was written for claims that are not bound: the selected node, a volume's
        ``claimRef`` (a conflict read again and retried; what cannot be undone is logged)."""
        for bind, v in reversed(written):
            for _attempt in range(3):
                try:
                    claim = self.writer.read(claim_path(v.namespace, v.claim))
                    meta, spec = meta_of(claim), claim.get("spec") or {}
                    if spec.get("volumeName"):
                        break  # bound after all: the claim keeps its volume
                    if not v.volume:
                        annotations = dict(meta.get("annotations") or {})
                        if annotations.pop(SELECTED_NODE, None) != bind.node:
                            break
                        body = {**claim, "metadata": {**meta, "annotations": annotations}}
                        self.writer.replace(claim_path(v.namespace, v.claim), body, holding=holding)
                        break
                    volume = self.writer.read(volume_path(v.volume))
                    vmeta, vspec = meta_of(volume), dict(volume.get("spec") or {})
                    ref = vspec.get("claimRef") or {}
                    if (ref.get("namespace"), ref.get("name")) != (v.namespace, v.claim):
                        break
                    vspec.pop("claimRef", None)
                    annotations = dict(vmeta.get("annotations") or {})
                    annotations.pop(BOUND_BY_CONTROLLER, None)
                    body = {**volume, "metadata": {**vmeta, "annotations": annotations}, "spec": vspec}
                    self.writer.replace(volume_path(v.volume), body, holding=holding)
                    break
                except ApiException as exc:
                    if exc.status == 409:
                        continue
                    if exc.status != 404:
                        log.warning("could not undo the binding of claim %s: %s", v.key, exc.status)
                    break
                except Exception as exc:
                    log.warning("could not undo the binding of claim %s: %s", v.key, error_summary(exc))
                    break

    def _tell(self, binds: Sequence[Bind], why: str) -> None:
        """Say ``why`` on each pod: its PodScheduled condition and a FailedScheduling event."""
        for b in binds:
            try:
                errors = self.writer.tell_unschedulable(b.pod, b.uid, why, reason=FAILED_SCHEDULING)
            except Exception as exc:
                errors = [error_summary(exc)]
            for err in errors:
                log.warning("could not tell pod %s why its volumes were not bound: %s", b.pod, err)
