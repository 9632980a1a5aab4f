"""PodGroups the operator creates, and events on Volcano objects that lose to ours.

* A workload whose pods name no PodGroup but have a controller owner (a Job, JobSet, ReplicaSet,
  StatefulSet...) is one job per owner (``ClusterState.last_derived``). The operator creates the
  PodGroup that stands for it, named after the owner's UID (``podgroup-<uid>``, as Volcano names it)
  with an ownerReference to it,
  so that ``kubectl get podgroups`` shows the workload and the garbage collector deletes the PodGroup
  with its owner.
* An earlier volsched named that PodGroup ``<kind>-<name>`` (lower case), which two owners could
  share. After an upgrade the owner's pods join ``podgroup-<uid>`` and the old object is left empty:
  :class:`LeftBehind` deletes it, only if volsched created it (its label, one ownerReference whose
  old name it bears) and no pod in the cache (or refused by it) refers to it, and only the object it
  read (preconditions on uid and resourceVersion). One pass after the operator's first session; again every few minutes
  while a left-behind PodGroup is still referred to or a delete failed.
* A Volcano PodGroup or Queue shadowed by volsched's object of the same name gets one Warning event
  saying so (``volsched.cache.volcano``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cache.volcano import CONFLICT_REASON, VOLCANO_API_VERSION
from volsched.cache.workload import WORKLOAD_API_VERSION, WORKLOAD_PODGROUP
from volsched.kube import status as render
from volsched.kube.writer import KubeWriter
from volsched.model.raw import meta_of
from volsched.model.vocabulary import API_GROUP, PodGroupSpec
from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")

#: Label on the PodGroups the operator creates for a controller owner's pods.
CREATED_BY_LABEL = "scheduling.volsched.io/created-by"
CREATED_BY = "volsched"


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
            "labels": {CREATED_BY_LABEL: CREATED_BY},
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
    "it exists"). Off (``enabled`` False) where the operator may not create PodGroups: the owner's pods
    are scheduled as one job all the same, only the object that shows it is not made."""

    def __init__(self, writer: KubeWriter) -> None:
        self.writer = writer
        self.enabled = True
        self._created: set[str] = set()

    def would_create(self, specs: list[PodGroupSpec]) -> bool:
        """Whether :meth:`ensure` would try to create one of ``specs`` (or say why it does not)."""
        return self.enabled and any(s.owner is not None and s.key not in self._created for s in specs)

    def ensure(self, specs: list[PodGroupSpec]) -> list[str]:
        """Create the PodGroups of ``specs`` not created yet. Returns error messages."""
        if not self.enabled:
            return []
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


def old_owner_name(obj: Mapping[str, Any]) -> str | None:
    """The ``<kind>-<name>`` an earlier volsched gave the PodGroup ``obj`` it created for a controller
    owner, if ``obj`` is one: our label, exactly one ownerReference (with a uid, whose
    ``podgroup-<uid>`` is not this name) and this name, the old name of that owner. Else None."""
    meta = meta_of(obj)
    labels = meta.get("labels") or {}
    refs = meta.get("ownerReferences") or []
    if labels.get(CREATED_BY_LABEL) != CREATED_BY or not isinstance(refs, list) or len(refs) != 1:
        return None
    ref = refs[0]
    if not isinstance(ref, Mapping) or not ref.get("uid") or not ref.get("kind") or not ref.get("name"):
        return None
    name = meta.get("name")
    old = f"{str(ref['kind']).lower()}-{ref['name']}"[:253]
    return old if name == old and name != f"podgroup-{ref['uid']}" else None


def groups_referred_to(feeder: Feeder) -> Callable[[str], bool]:
    """Whether a pod refers to the PodGroup ``ns/name``: one the cache holds belongs to it (its task's
    job), or one the cache refused names it (:attr:`Rejection.group`: not held, still its group). The
    set is built at the first question, from the cache as it is then (a sweep asks only when it finds
    a PodGroup left behind)."""
    groups: frozenset[str] | None = None

    def referenced(key: str) -> bool:
        nonlocal groups
        if groups is None:
            held = {t.job_key for t in list(feeder.state.tasks.values())}
            groups = frozenset(held.union(r.group for r in list(feeder.rejected.values()) if r.group))
        return key in groups

    return referenced


class LeftBehind:
    """Deletes the PodGroups an earlier volsched created for controller owners under their old names
    (see the module's docstring), once no pod refers to them."""

    def __init__(
        self, writer: KubeWriter, *, every: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.writer = writer
        self.every = every
        self.clock = clock
        self._next = -float("inf")
        #: Nothing is left behind (a pass found none it did not delete): no pass is due again.
        self.done = False

    def due(self) -> bool:
        return not self.done and self.clock() >= self._next

    def sweep(self, referenced: Callable[[str], bool]) -> list[str]:
        """One pass: list our labelled PodGroups, delete those left behind that no pod refers to
        (``referenced(ns/name)``: a pod in the cache names the PodGroup or is its owner's). Returns
        error messages."""
        self._next = self.clock() + self.every
        try:
            items = self.writer.list_podgroups(f"{CREATED_BY_LABEL}={CREATED_BY}")
        except Exception as exc:
            return [f"list PodGroups created by volsched: {error_summary(exc)}"]
        errors: list[str] = []
        left = 0
        for obj in items:
            meta = meta_of(obj)
            if old_owner_name(obj) is None or meta.get("deletionTimestamp"):
                continue
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            if referenced(key):
                left += 1
                continue
            gone, error = self.writer.delete_podgroup(
                str(meta.get("namespace")), str(meta.get("name")),
                uid=str(meta.get("uid") or ""), resource_version=str(meta.get("resourceVersion") or ""),
            )  # fmt: skip
            if error:
                errors.append(error)
            if gone:
                ref = meta["ownerReferences"][0]
                log.info(
                    "deleted PodGroup %s, left behind by an earlier volsched for %s %s (now podgroup-%s)",
                    key, ref["kind"], ref["name"], ref["uid"],
                )  # fmt: skip
            else:
                left += 1
        self.done = left == 0
        return errors


class ConflictReporter:
    """One Warning event on each Volcano object shadowed by volsched's object of the same name (and on
    each Kubernetes PodGroup shadowed by either)."""

    def __init__(self, writer: KubeWriter) -> None:
        self.writer = writer
        self._reported: dict[tuple[str, str], str] = {}

    def would_report(self, conflicts: dict[tuple[str, str], str]) -> bool:
        """Whether :meth:`report` would post an event or forget a conflict it reported (one now gone)."""
        return conflicts != self._reported

    def report(self, conflicts: dict[tuple[str, str], str], uids: dict[tuple[str, str], str]) -> list[str]:
        errors: list[str] = []
        for (kind, key), message in conflicts.items():
            if self._reported.get((kind, key)) == message:
                continue
            ns, _, name = key.rpartition("/")
            api_version = WORKLOAD_API_VERSION if kind == WORKLOAD_PODGROUP else VOLCANO_API_VERSION
            log.warning("%s %s %s: %s", api_version, kind, key, message)
            body = render.object_event(
                kind="PodGroup" if kind == WORKLOAD_PODGROUP else kind, api_version=api_version,
                namespace=ns, name=name,
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


def fit_to_rights(
    creator: PodGroupCreator, left_behind: LeftBehind, *, may_create: bool, may_delete: bool
) -> list[str]:
    """Turn off what the operator's rights do not allow (rather than fail at it every session), and say
    what is off and why: the PodGroups of controller owners' pods without ``create``, the deletion of
    those an earlier volsched left behind without ``delete``. Returns the lines to log."""
    said = []
    where = f"podgroups.{API_GROUP}"
    if not may_create:
        creator.enabled = False
        said.append(
            f"this operator may not create {where} (the chart's rbac.createOwnerPodGroups: false): the pods "
            "of a controller owner (a Job, a ReplicaSet...) that name no PodGroup are scheduled as one job, "
            "but no PodGroup object shows it"
        )
    if not may_delete:
        left_behind.done = True
        said.append(
            f"this operator may not delete {where} (the chart's rbac.deleteLeftBehindPodGroups: false): "
            "PodGroups an earlier volsched named <kind>-<name> are left as they are"
        )
    return said
