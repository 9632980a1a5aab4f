"""The simulator's volume binding on a bind: what kube-scheduler's pre-bind, the PersistentVolume controller
and an external provisioner write for a pod's claims of a WaitForFirstConsumer StorageClass, done at once
as the pod is bound.

A claim given a volume that exists is bound to it (the volume's ``claimRef``, the claim's ``volumeName``,
both ``Bound``); a claim to provision gets a volume made for it, ``pvc-<claim uid>``, of its class, size
and access modes, a volume of the class's provisioner as a CSI driver (``spec.csi``: attach limits count it), reachable from
the node it was provisioned for alone (as local-path, the commonest such
provisioner, makes them; a zonal provisioner's volume would reach its zone). Which volume or node is the
session's (``volsched.model.volumes``); this module only writes it down. Playing the ephemeral volume
controller, it also makes the claim of each generic ephemeral volume of a pod (``<pod>-<volume>``) as the
pod arrives. See docs/placement.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from volsched.framework.decisions import Bind
from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of
from volsched.model.volumes import BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE


class VolumeController:
    """The claims and volumes as last put ("ns/name" and name -> object); ``put`` is the simulated
    apiserver's."""

    def __init__(self, put: Callable[[Mapping[str, Any]], None]) -> None:
        self._put = put
        self.claims: dict[str, Raw] = {}
        self.volumes: dict[str, Raw] = {}
        #: StorageClass -> its provisioner.
        self.provisioners: dict[str, str] = {}

    def seen(self, obj: Raw) -> None:
        """An object put: kept when it is a claim or a volume."""
        kind, meta = obj.get("kind"), meta_of(obj)
        if kind == "PersistentVolumeClaim":
            self.claims[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = obj
        elif kind == "PersistentVolume":
            self.volumes[str(meta.get("name"))] = obj
        elif kind == "StorageClass":
            self.provisioners[str(meta.get("name"))] = str(obj.get("provisioner") or "")

    def ephemeral(self, pod: Raw) -> None:
        """Play the ephemeral volume controller: a claim ``<pod>-<volume>`` for each of the pod's generic
        ephemeral volumes that has none yet, from its ``volumeClaimTemplate``, owned by the pod."""
        meta = meta_of(pod)
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        volumes = (pod.get("spec") or {}).get("volumes")
        for i, v in enumerate(volumes if isinstance(volumes, list) else ()):  # (else the cache refuses it)
            if not isinstance(v, Mapping) or not isinstance(v.get("ephemeral"), Mapping):
                continue
            key = f"{ns}/{name}-{v.get('name')}"
            if key in self.claims:
                continue
            where = f"Pod {ns}/{name}: spec.volumes[{i}].ephemeral.volumeClaimTemplate"
            template = _map(v["ephemeral"].get("volumeClaimTemplate"), where)
            tmeta = _map(template.get("metadata"), f"{where}.metadata")
            owner = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": name,
                "uid": meta.get("uid") or f"{ns}/{name}",
            }
            self._put(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": f"{name}-{v.get('name')}",
                        "namespace": ns,
                        "uid": key,
                        "labels": dict(_map(tmeta.get("labels"), f"{where}.metadata.labels")),
                        "annotations": dict(_map(tmeta.get("annotations"), f"{where}.metadata.annotations")),
                        "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
                    },
                    "spec": dict(_map(template.get("spec"), f"{where}.spec")),
                }
            )

    def bind(self, bind: Bind) -> None:
        """Bind ``bind``'s claims as decided, before the pod is bound."""
        for b in bind.volumes:
            claim = self.claims.get(b.key)
            if claim is None or (claim.get("spec") or {}).get("volumeName"):
                continue  # (bound already: for another pod of the session that shares it)
            spec = claim.get("spec") or {}
            name = b.volume
            ref = {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": b.namespace,
                "name": b.claim,
                "uid": b.claim_uid,
            }
            if name:
                volume = self.volumes.get(name)
                if volume is None:
                    continue
                meta = meta_of(volume)
                annotations = {**(meta.get("annotations") or {}), BOUND_BY_CONTROLLER: "yes"}
                self._put(
                    {
                        **volume,
                        "metadata": {**meta, "annotations": annotations},
                        "spec": {**(volume.get("spec") or {}), "claimRef": ref},
                        "status": {"phase": "Bound"},
                    }
                )
            else:
                name = f"pvc-{b.claim_uid or b.namespace + '-' + b.claim}"
                requests = (spec.get("resources") or {}).get("requests") or {}
                # A volume of the class's provisioner, as a CSI driver provisions it (its attach limits
                # count it; the driver's name is the provisioner's).
                provisioner = self.provisioners.get(str(spec.get("storageClassName") or ""), "")
                source = {"csi": {"driver": provisioner, "volumeHandle": name}} if provisioner else {}
                self._put(
                    {
                        "apiVersion": "v1",
                        "kind": "PersistentVolume",
                        "metadata": {"name": name},
                        "spec": {
                            "storageClassName": spec.get("storageClassName") or "",
                            "capacity": {"storage": requests.get("storage", "0")},
                            "accessModes": list(spec.get("accessModes") or []),
                            "claimRef": ref,
                            **source,
                            "nodeAffinity": {
                                "required": {
                                    "nodeSelectorTerms": [
                                        {
                                            "matchExpressions": [
                                                {
                                                    "key": "kubernetes.io/hostname",
                                                    "operator": "In",
                                                    "values": [bind.node],
                                                }
                                            ]
                                        }
                                    ]
                                }
                            },
                        },
                        "status": {"phase": "Bound"},
                    }
                )
            meta = meta_of(claim)
            annotations = {**(meta.get("annotations") or {}), BIND_COMPLETED: "yes"}
            if not b.volume:
                annotations[SELECTED_NODE] = bind.node
            self._put(
                {
                    **claim,
                    "metadata": {**meta, "annotations": annotations},
                    "spec": {**spec, "volumeName": name},
                    "status": {**(claim.get("status") or {}), "phase": "Bound"},
                }
            )


def _map(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` when it is a map (none: an empty one); else the pod is refused, naming the field."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a map, got {type(value).__name__}")
    return value
