"""What the operator's log says when its webhooks answer (kopf's own admission path, in process, the way
its webhook server calls it): a refusal is the webhook doing its job, logged once at INFO with the object
and the reason, not as kopf's ERROR "failed permanently"; a webhook that breaks (an exception) is still an
ERROR with its traceback."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf
import pytest
from kopf._cogs.structs import ephemera, references
from kopf._core.engines import admission as kopf_admission
from kopf._core.engines import indexing
from kopf._core.intents import causes
from kopf._core.reactor import inventory

from tests.builders import namespace, queue
from volsched.cache.state import ClusterState
from volsched.model.vocabulary import API_GROUP
from volsched.operator.admission import Admission
from volsched.operator.kopfrun import VALIDATING, register_webhooks

QUEUES = references.Resource(API_GROUP, "v1beta1", "queues", kind="Queue", namespaced=False)
PODGROUPS = references.Resource(API_GROUP, "v1beta1", "podgroups", kind="PodGroup", namespaced=True)


def _registry(admission: Admission) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    register_webhooks(registry, admission, fail_open=False)
    return registry


def _review(
    registry: kopf.OperatorRegistry,
    resource: references.Resource,
    obj: dict[str, Any],
    webhook: str,
    *,
    old: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """kopf's answer to an AdmissionReview of ``obj`` for ``webhook`` (one id, as the apiserver asks):
    its creation, or with ``old`` its update from ``old``."""
    request: Any = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
            "resource": {"group": resource.group, "version": resource.version, "resource": resource.plural},
            "operation": "CREATE" if old is None else "UPDATE",
            "userInfo": {"username": "someone"},
            "object": obj,
            **({"oldObject": old} if old is not None else {}),
            "dryRun": False,
        },
    }
    insights = references.Insights(webhook_resources={resource})

    async def serve() -> Any:
        return await kopf_admission.serve_admission_request(
            request,
            webhook=webhook,
            settings=kopf.OperatorSettings(),
            memories=inventory.ResourceMemories(),
            memobase=ephemera.Memo(),
            registry=registry,
            insights=insights,
            indices=indexing.OperatorIndexers().indices,
        )

    return dict(asyncio.run(serve())["response"])


def _state() -> ClusterState:
    state = ClusterState()
    for obj in (queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}), namespace("ns-b")):
        state.apply(obj)
    return state


def test_validating_ids_are_those_of_the_webhooks_that_refuse() -> None:
    registry = _registry(Admission(ClusterState(), scheduler_names=frozenset({"volsched"})))
    handlers = registry._webhooks.get_all_handlers()
    assert {str(h.id) for h in handlers if h.reason == causes.WebhookType.VALIDATING} == VALIDATING


def test_a_refused_podgroup_is_logged_once_at_info_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    registry = _registry(Admission(_state(), scheduler_names=frozenset({"volsched"})))
    pg = {
        "apiVersion": f"{API_GROUP}/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "steal", "namespace": "ns-b"},
        "spec": {"minMember": 1, "queue": "team-a"},
    }
    with caplog.at_level(logging.DEBUG):
        response = _review(registry, PODGROUPS, pg, f"podgroup-{API_GROUP}")
    assert response["allowed"] is False
    reason = response["status"]["message"]
    assert "does not take jobs of namespace ns-b" in reason
    assert [r.levelname for r in caplog.records if r.levelno >= logging.WARNING] == []
    [said] = [r for r in caplog.records if r.name == "volsched.admission"]
    assert said.levelno == logging.INFO
    assert said.getMessage() == f"create of PodGroup ns-b/steal refused: {reason}"


def test_an_admitted_object_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    registry = _registry(Admission(_state(), scheduler_names=frozenset({"volsched"})))
    q = {"apiVersion": f"{API_GROUP}/v1beta1", "kind": "Queue", "metadata": {"name": "fine"}, "spec": {}}
    with caplog.at_level(logging.DEBUG):
        assert _review(registry, QUEUES, q, "queue")["allowed"] is True
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [r for r in caplog.records if r.name == "volsched.admission"] == []


def test_a_webhook_that_breaks_is_still_an_error_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Admission):
        def queue(self, body: Any) -> str | None:
            raise KeyError("a defect")

    registry = _registry(Broken(ClusterState(), scheduler_names=frozenset({"volsched"})))
    q = {"apiVersion": f"{API_GROUP}/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {}}
    with caplog.at_level(logging.DEBUG):
        response = _review(registry, QUEUES, q, "queue")
    assert response["allowed"] is False  # kopf refuses what it could not judge (failure policy aside)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "a defect" in errors[0].getMessage() and errors[0].exc_info is not None
