"""The simulator's resource claim controller (Dynamic Resource Allocation): a pod's claims made from its
ResourceClaimTemplates, a bind's allocation written into its claims before the bind (as kube-scheduler
writes them), and a pod that is gone taken out of its claims (a claim made for it deleted with it).

Not the allocation: which devices a pod gets is the session's (``volsched.model.devices``); this module
only writes down, through the simulated apiserver, what the session decided. See ``docs/dra.md``.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from volsched.framework.decisions import Bind
from volsched.model.decode import resource_claim
from volsched.model.devices import allocation_status, released_status
from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of, uid_of

#: The annotation the resource claim controller puts on a claim it made: the pod's name for the claim.
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"


class ClaimController:
    """The claims and templates as last put, and what the resource claim controller and kube-scheduler
    write into them; ``put`` and ``remove`` are the simulated apiserver's."""

    def __init__(self, put: Callable[[Mapping[str, Any]], None], remove: Callable[[str, str], None]) -> None:
        self._put, self._remove = put, remove
        #: The ResourceClaims as last put ("ns/name" -> object): a bind writes its allocation into them.
        self.claims: dict[str, Raw] = {}
        #: The ResourceClaimTemplates ("ns/name" -> object): the claims of the pods that name them are
        #: made from them.
        self.templates: dict[str, Raw] = {}

    def add_template(self, obj: Raw) -> None:
        """A ResourceClaimTemplate (raises :class:`InputError` naming a bad field)."""
        meta = meta_of(obj)
        ns, name = meta.get("namespace") or "default", meta.get("name")
        spec = (obj.get("spec") or {}).get("spec")
        if not isinstance(spec, Mapping):
            raise InputError(f"ResourceClaimTemplate {ns}/{name}: missing field spec.spec")
        resource_claim({"metadata": {"name": str(name), "namespace": ns}, "spec": spec})  # checked as a claim
        self.templates[f"{ns}/{name}"] = obj

    def made(self, pod: Raw, meta: Mapping[str, Any]) -> Raw:
        """For each of the pod's ``resourceClaims`` made from a template it has not made yet, a
        ResourceClaim from the template (named ``<pod>-<claim>-<5 characters>``, owned by the pod), and
        its name in the pod's ``status.resourceClaimStatuses``: the pod as it is to be put."""
        ns = meta.get("namespace") or "default"
        raw_status, entries = pod.get("status"), (pod.get("spec") or {}).get("resourceClaims")
        if not isinstance(raw_status or {}, Mapping) or not isinstance(entries, list):
            return pod  # (none to make, or of the wrong shape: the cache refuses the pod, naming it)
        status = dict(raw_status or {})
        listed = status.get("resourceClaimStatuses") or []
        if not isinstance(listed, list):
            where = f"Pod {ns}/{meta.get('name')}: status.resourceClaimStatuses"
            raise InputError(f"{where}: expected a list, got {type(listed).__name__}")
        made = list(listed)
        named = {m.get("name") for m in made if isinstance(m, Mapping)}
        changed = False
        for entry in entries:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                continue  # (the cache refuses the pod, naming the entry)
            template = self.templates.get(f"{ns}/{entry.get('resourceClaimTemplateName')}")
            if template is None or entry.get("name") in named:
                continue
            digest = hashlib.sha256(f"{meta.get('uid')}/{entry['name']}".encode()).hexdigest()[:5]
            name = f"{meta.get('name')}-{entry['name']}-{digest}"[:253]
            tmeta = meta_of(template.get("spec") or {})
            owner = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid")}
            self._put(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "uid": f"{ns}/{name}",
                        "labels": dict(tmeta.get("labels") or {}),
                        "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_NAME: entry["name"]},
                        "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
                    },
                    "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
                }
            )
            made.append({"name": entry["name"], "resourceClaimName": name})
            changed = True
        if not changed:
            return pod
        return {**pod, "status": {**status, "resourceClaimStatuses": made}}

    def allocate(self, bind: Bind) -> None:
        """Write the bind's allocations and the pod's reservation into its claims (before the bind)."""
        name = bind.pod.split("/", 1)[1]
        for alloc in bind.claims:
            claim = self.claims[alloc.key]
            status = allocation_status(alloc, pod_name=name, pod_uid=bind.uid, status=claim.get("status"))
            self._put({**claim, "status": status})

    def release(self, pod: Raw) -> None:
        """A pod that is gone: out of its claims' ``reservedFor``, and a claim no pod holds any more
        deallocated; a claim made for it from a template goes with it (the garbage collector's part)."""
        meta = meta_of(pod)
        uid = uid_of(pod)
        ns = meta.get("namespace") or "default"
        entries = [
            *((pod.get("spec") or {}).get("resourceClaims") or []),
            *((pod.get("status") or {}).get("resourceClaimStatuses") or []),
        ]
        names = {
            str(c["resourceClaimName"]) for c in entries if isinstance(c, dict) and c.get("resourceClaimName")
        }
        for name in sorted(names):
            claim = self.claims.get(f"{ns}/{name}")
            if claim is None:
                continue
            owners = meta_of(claim).get("ownerReferences") or []
            if any(o.get("kind") == "Pod" and o.get("uid") == uid for o in owners):
                del self.claims[f"{ns}/{name}"]
                self._remove("ResourceClaim", f"{ns}/{name}")
                continue
            status = released_status(claim.get("status"), pod_uid=uid)
            if status is not None:
                self._put({**claim, "status": status})
