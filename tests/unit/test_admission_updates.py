"""What the PodGroup webhooks decide on a PodGroup's creation and its updates, through kopf's own admission
path in process (as its webhook server calls it): Kubernetes' own PodGroups (the Workload API) are checked
as volsched's are, so that a tenant cannot move a running gang into a queue that refuses its namespace
(its pods would hold that queue's share: the scheduler does not evict running jobs); an update that
changes nothing the rules read is let through, so an object whose queue's rules changed under it can
still be written (a finalizer taken off)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kopf._cogs.structs import references

from tests.builders import namespace, podgroup, queue
from tests.unit.test_admission_log import PODGROUPS, _registry, _review
from volsched.cache.state import ClusterState
from volsched.cache.workload import WORKLOAD_API_VERSION, WORKLOAD_GROUP, WORKLOAD_VERSION
from volsched.model.vocabulary import API_GROUP, QUEUE_ANNOTATION
from volsched.operator.admission import Admission

WORKLOAD_PODGROUPS = references.Resource(
    WORKLOAD_GROUP, WORKLOAD_VERSION, "podgroups", kind="PodGroup", namespaced=True
)
RULE = "queue team-a does not take jobs of namespace ns-b"


def _admission() -> Admission:
    state = ClusterState()
    objs = [
        queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}),
        queue("shared"),
        namespace("ns-b", labels={"team": "b"}),
    ]
    for obj in objs:
        state.apply(obj)
    return Admission(state, scheduler_names=frozenset({"volsched"}))


def _workload_group(queue_name: str | None, **meta: Any) -> dict[str, Any]:
    annotations = {QUEUE_ANNOTATION: queue_name} if queue_name else {}
    return {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns-b", "annotations": annotations, **meta},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }


def _ours(queue_name: str, **meta: Any) -> dict[str, Any]:
    obj = podgroup("g", ns="ns-b", queue=queue_name)
    obj["metadata"].update(meta)
    return obj


def _with(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].update(meta)
    return out


# Each case: the kind, the object before (None: its creation), the object written, and the refusal (None:
# let in).
CASES = [
    pytest.param("workload", None, _workload_group("team-a"), RULE, id="workload-created-in-a-queue-not-its"),
    pytest.param("workload", None, _workload_group("shared"), None, id="workload-created-in-an-open-queue"),
    pytest.param("workload", None, _workload_group(None), None, id="workload-naming-no-queue"),
    pytest.param(
        "workload",
        _workload_group("shared"),
        _workload_group("team-a"),
        RULE,
        id="workload-moved-to-a-queue-not-its",
    ),
    pytest.param(
        "workload",
        _workload_group("team-a", finalizers=["x/y"]),
        _workload_group("team-a"),
        None,
        id="workload-finalizer-taken-off-its-queue-refusing-it",
    ),
    pytest.param("ours", _ours("shared"), _ours("team-a"), RULE, id="ours-moved-to-a-queue-not-its"),
    pytest.param(
        "ours",
        _ours("team-a", finalizers=["x/y"]),
        _ours("team-a"),
        None,
        id="ours-finalizer-taken-off-its-queue-refusing-it",
    ),
    pytest.param(
        "ours", _ours("team-a"), _with(_ours("team-a"), labels={"l": "v"}), None, id="ours-label-added"
    ),
]


@pytest.mark.parametrize(("kind", "old", "new", "refusal"), CASES)
def test_podgroup_creations_and_updates(
    kind: str, old: dict[str, Any] | None, new: dict[str, Any], refusal: str | None
) -> None:
    """The defect: Kubernetes' PodGroups had no webhook, so a tenant moved a running gang's queue
    annotation to another team's queue and its pods held that queue's share (its own jobs then waited);
    and an update to a PodGroup whose queue's rules had changed under it was refused whatever it changed."""
    registry = _registry(_admission())
    if kind == "workload":
        response = _review(registry, WORKLOAD_PODGROUPS, new, f"podgroup-{WORKLOAD_GROUP}", old=old)
    else:
        response = _review(registry, PODGROUPS, new, f"podgroup-{API_GROUP}", old=old)
    if refusal is None:
        assert response["allowed"] is True, response
    else:
        assert response["allowed"] is False
        assert refusal in response["status"]["message"]
