"""PodGroups the operator creates, and events on Volcano objects that lose to ours.

* A workload whose pods name no PodGroup but have a controller owner (a Job, JobSet, ReplicaSet,
  StatefulSet...) is one job per owner (``ClusterState.last_derived``). The operator creates the
  PodGroup that stands for it, named after the owner's UID (``podgroup-<uid>``, as Volcano names it)
  with an ownerReference to it,
  so that ``kubectl get podgroups`` shows the workload and the garbage collector deletes the PodGroup
  with its owner.
* A Volcano PodGroup or Queue shadowed by volsched's object of the same name gets one Warning event
  saying so (``volsched.cache.volcano``).
"""

from __future__ import annotations

import logging
from typing import Any

from volsched.cache.volcano import CONFLICT_REASON, VOLCANO_API_VERSION
from volsched.kube import status as render
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import API_GROUP, PodGroupSpec

log = logging.getLogger("volsched.kube")

#: Label on the PodGroups the operator creates for a controller owner's pods.
CREATED_BY_LABEL = "scheduling.volsched.io/created-by"


def owner_podgroup_body(spec: PodGroupSpec) -> dict[str, Any]:
    """The PodGroup object for a group that stands for a controller owner's pods."""
    owner = spec.owner
    assert owner is not None
    body: dict[str, Any] = {
        "apiVersion": f"{API_GROUP}/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": {CREATED_BY_LABEL: "volsched"},
            "ownerReferences": [
                {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid}
            ],
        },
        "spec": {"minMember": spec.min_member, "queue": spec.queue},
    }
    if spec.priority_class_name:
        body["spec"]["priorityClassName"] = spec.priority_class_name
    return body


class PodGroupCreator:
    """Creates each owner's PodGroup once (again only if an attempt failed for a reason other than
    "it exists")."""

    def __init__(self, writer: KubeWriter) -> None:
        self.writer = writer
        self._created: set[str] = set()

    def ensure(self, specs: list[PodGroupSpec]) -> list[str]:
        """Create the PodGroups of ``specs`` not created yet. Returns error messages."""
        todo = [s for s in specs if s.owner is not None and s.key not in self._created]
        errors: list[str] = []
        for spec in todo:
            assert spec.owner is not None
            if not spec.owner.uid or not spec.owner.api_version:
                self._created.add(spec.key)  # an ownerReference without uid cannot be garbage-collected
                log.warning("PodGroup %s not created: the pods' owner reference has no uid", spec.key)
                continue
            error = self.writer.create_podgroup(owner_podgroup_body(spec))
            if error:
                errors.append(error)
            else:
                self._created.add(spec.key)
                log.info("created PodGroup %s for %s %s", spec.key, spec.owner.kind, spec.owner.name)
        return errors

    def forget(self, key: str) -> None:
        """The PodGroup is gone (deleted with its owner): create it again if pods still need it."""
        self._created.discard(key)


class ConflictReporter:
    """One Warning event on each Volcano object shadowed by volsched's object of the same name."""

    def __init__(self, writer: KubeWriter) -> None:
        self.writer = writer
        self._reported: dict[tuple[str, str], str] = {}

    def report(self, conflicts: dict[tuple[str, str], str], uids: dict[tuple[str, str], str]) -> list[str]:
        errors: list[str] = []
        for (kind, key), message in conflicts.items():
            if self._reported.get((kind, key)) == message:
                continue
            ns, _, name = key.rpartition("/")
            log.warning("Volcano %s %s: %s", kind, key, message)
            body = render.object_event(
                kind=kind, api_version=VOLCANO_API_VERSION, namespace=ns, name=name,
                uid=uids.get((kind, key), ""), reason=CONFLICT_REASON, message=message,
                now=render.now_rfc3339(), event_name=f"{name}.volsched-shadowed",
            )  # fmt: skip
            error = self.writer.post_event(body)
            if error:
                errors.append(error)
            else:
                self._reported[(kind, key)] = message
        for gone in [k for k in self._reported if k not in conflicts]:
            del self._reported[gone]
        return errors
