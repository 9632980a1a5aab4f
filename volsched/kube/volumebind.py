"""Volume binding's pre-bind on a real cluster: before the pods of a commit whose claims wait for their first
consumer are bound, every claim of theirs is bound as the session decided, as kube-scheduler's VolumeBinding
does it, and only then are the pods bound.

* A claim given a volume that exists: the volume's ``claimRef`` names the claim (with
  ``pv.kubernetes.io/bound-by-controller``), written at the resourceVersion read, so a volume another claim
  took meanwhile is never taken from it; the PersistentVolume controller (kube-controller-manager) then
  binds the claim.
* A claim to provision: its ``volume.kubernetes.io/selected-node`` annotation names the pod's node; the
  external provisioner makes the volume there and the PersistentVolume controller binds the claim.

Then every claim is read until it is bound (``spec.volumeName`` and ``pv.kubernetes.io/bind-completed``):
a claim bound to another volume, a volume whose ``claimRef`` was taken off, a provisioner that took the
annotation off (it could not provision there), a pod deleted, or no claim bound within
``volume_bind_timeout`` is a failure. A failure undoes what was written that did not bind (the annotation
taken off, a ``claimRef`` taken off a volume the claim is not bound to), binds none of the commit's pods
(a gang is bound whole or not at all), and says why on each pod (its PodScheduled condition and a
FailedScheduling event); the cycle then forgets their placement and a later session places them again.

It is not the choice of volumes (``volsched.model.volumes``) nor the bind itself (``KubeWriter.bind``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from volsched.cycle import FAILED, FENCED, GONE, SKIPPED, BindOutcome
from volsched.framework.decisions import Bind
from volsched.kube.errors import ApiException
from volsched.kube.rest import pod_path
from volsched.kube.writer import Fenced, KubeWriter
from volsched.model.raw import Raw, meta_of
from volsched.model.volumes import BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE, VolumeBinding
from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")

#: The event reason on a pod whose claims could not be bound (kube-scheduler's, for any failed attempt).
FAILED_SCHEDULING = "FailedScheduling"


def claim_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"


def volume_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{name}"


class _Failed(Exception):
    """Why the commit's claims could not be bound (said on its pods)."""


class VolumeBinder:
    """Pre-binds the claims of a commit's binds, waits until they are bound, then binds the pods through
    ``writer``. ``timeout``: seconds to wait for every claim to be bound (kube-scheduler's
    ``bindTimeoutSeconds``); ``sleep``/``clock`` for the waits."""

    def __init__(
        self,
        writer: KubeWriter,
        *,
        timeout: float,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer, self.timeout, self.sleep, self.clock = writer, timeout, sleep, clock

    def bind_all(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, holding: float | None = None
    ) -> list[BindOutcome]:
        """Bind ``binds`` (one commit: a gang's together), their claims first; one outcome each."""
        writer = self.writer
        ours = [b for b in binds if writer.schedules(pods.get(b.pod))]
        skipped = [BindOutcome(b, SKIPPED, "not scheduled by volsched") for b in binds if b not in ours]
        if not ours:
            return skipped
        written: list[tuple[Bind, VolumeBinding]] = []
        try:
            for b in ours:
                for v in b.volumes:
                    if self._prebind(b, v, holding):
                        written.append((b, v))
            self._wait(ours)
        except Fenced as exc:  # this replica may have lost the Lease: the next leader sees what was written
            return skipped + [BindOutcome(b, FENCED, str(exc)) for b in ours]
        except _Failed as exc:
            why = f"binding volumes: {exc}; not bound"
            gone = "pod does not exist any more" in str(exc)
            self._undo(written, holding)
            self._tell(ours, why)
            return skipped + [BindOutcome(b, GONE if gone else FAILED, why) for b in ours]
        return skipped + [writer.bind(b, pods.get(b.pod), holding=holding) for b in ours]

    # --- pre-bind ----------------------------------------------------------------------------------

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

    def _write(self, path: str, body: Any, what: str, holding: float | None) -> None:
        try:
            self.writer.replace(path, body, holding=holding)
        except ApiException as exc:
            why = "changed meanwhile" if exc.status == 409 else f"{exc.status} writing it"
            raise _Failed(f"{what}: {why}") from exc
        except Fenced:
            raise
        except Exception as exc:
            raise _Failed(f"{what}: {error_summary(exc)}") from exc

    def _prebind(self, bind: Bind, v: VolumeBinding, holding: float | None) -> bool:
        """Write ``v``'s pre-bind; whether anything was written (a claim bound already needs nothing)."""
        what = f"persistentvolumeclaim {v.key}"
        claim = self._read(claim_path(v.namespace, v.claim), what)
        if v.claim_uid and meta_of(claim).get("uid") != v.claim_uid:
            raise _Failed(f"{what} was deleted and made again")
        bound_to = (claim.get("spec") or {}).get("volumeName") or ""
        if bound_to:
            if v.volume and bound_to != v.volume:
                raise _Failed(f"{what} was bound to persistentvolume {bound_to} meanwhile")
            return False
        if not v.volume:
            meta = meta_of(claim)
            annotations = {**(meta.get("annotations") or {}), SELECTED_NODE: bind.node}
            body = {**claim, "metadata": {**meta, "annotations": annotations}}
            self._write(claim_path(v.namespace, v.claim), body, what, holding)
            return True
        pv_what = f"persistentvolume {v.volume}"
        volume = self._read(volume_path(v.volume), pv_what)
        meta, spec = meta_of(volume), volume.get("spec") or {}
        ref = spec.get("claimRef") or {}
        if meta.get("deletionTimestamp"):
            raise _Failed(f"{pv_what} is being deleted")
        if ref and (ref.get("namespace"), ref.get("name")) != (v.namespace, v.claim):
            raise _Failed(f"{pv_what} was bound to claim {ref.get('namespace')}/{ref.get('name')} meanwhile")
        if ref and ref.get("uid") == v.claim_uid:
            return False  # pre-bound to it already
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
        self._write(volume_path(v.volume), body, pv_what, holding)
        return True

    # --- waiting ---------------------------------------------------------------------------------------

    def _wait(self, binds: Sequence[Bind]) -> None:
        """Until every claim of ``binds`` is bound; raises :class:`_Failed` saying why not."""
        waiting = {(b.pod, v.key): (b, v) for b in binds for v in b.volumes}
        deadline = self.clock() + self.timeout
        pause = 0.1
        while True:
            for key, (b, v) in list(waiting.items()):
                if self._bound(b, v):
                    del waiting[key]
            if not waiting:
                return
            for pod in {b.pod for b, _ in waiting.values()}:
                ns, name = pod.split("/", 1)
                try:
                    self.writer.read(pod_path(ns, name))
                except ApiException as exc:
                    if exc.status == 404:
                        raise _Failed(f"pod {pod}: pod does not exist any more") from exc
                except Exception:  # a read that failed: asked again next time round
                    pass
            fence = self.writer.fence
            if fence is not None and fence.time_left() <= 0:
                raise Fenced("this replica may have lost the scheduler Lease while volumes were being bound")
            left = deadline - self.clock()
            if left <= 0:
                pending = sorted({v.key for _, v in waiting.values()})
                raise _Failed(
                    f"persistentvolumeclaim(s) {', '.join(pending)} not bound within {self.timeout:g} s "
                    "(waiting for the volume's provisioner and the PersistentVolume controller)"
                )
            self.sleep(min(pause, left))
            pause = min(pause * 2, 1.0)

    def _bound(self, bind: Bind, v: VolumeBinding) -> bool:
        """Whether ``v``'s claim is bound as asked (raises :class:`_Failed` when it cannot be any more)."""
        what = f"persistentvolumeclaim {v.key}"
        claim = self._read(claim_path(v.namespace, v.claim), what)
        meta, spec = meta_of(claim), claim.get("spec") or {}
        if v.claim_uid and meta.get("uid") != v.claim_uid:
            raise _Failed(f"{what} was deleted and made again")
        volume = spec.get("volumeName") or ""
        annotations = meta.get("annotations") or {}
        if v.volume:
            if volume and volume != v.volume:
                raise _Failed(f"{what} was bound to persistentvolume {volume} instead")
            if not volume:
                pv = self._read(volume_path(v.volume), f"persistentvolume {v.volume}")
                ref = (pv.get("spec") or {}).get("claimRef") or {}
                if (ref.get("namespace"), ref.get("name")) != (v.namespace, v.claim):
                    raise _Failed(f"persistentvolume {v.volume}'s claimRef was taken off")
                return False
        elif not volume:
            if annotations.get(SELECTED_NODE) != bind.node:
                raise _Failed(f"provisioning failed for {what} (its provisioner took the selected node off)")
            return False
        return BIND_COMPLETED in annotations

    # --- undo ------------------------------------------------------------------------------------------

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
