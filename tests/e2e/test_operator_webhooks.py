"""Admission webhooks served through kopf on the real apiserver (which reaches them on loopback, with the
operator's self-signed CA in the webhook configurations kopf keeps): a PodGroup for a queue its namespace
may not use is refused at once, a Queue whose parent would close a cycle too, and the deletion of a
Queue that jobs still name; a PodGroup or a pod
standing alone that names no queue gets its namespace's; with the operator gone, PodGroups are refused
(failure policy Fail) while pods still come in (pods always fail open)."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import Kube, Start, free_port, pod, podgroup, queue, wait_for

pytestmark = pytest.mark.cluster


def _refused(create: Any, undo: Any, text: str) -> str | None:
    """Create; the refusal's message when it holds ``text``. Created (the webhook not in place yet, or
    the cache behind): undone, and None (asked again)."""
    try:
        create()
    except ApiException as exc:
        message = str(json.loads(exc.body or "{}").get("message") or "")
        return message if text in message else None
    undo()
    return None


def test_webhooks_refuse_what_the_rules_refuse_and_fill_in_the_namespaces_queue(
    k: Kube, start_operator: Start
) -> None:
    k.queue(queue("default"))
    k.queue(queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}))
    k.queue(queue("shared"))
    k.core.create_namespace(
        {
            "metadata": {
                "name": "team-b",
                "labels": {"team": "b"},
                "annotations": {"scheduling.volsched.io/default-queue": "shared"},
            }
        }
    )
    op = start_operator("--webhook-port", str(free_port()))
    wait_for(op.healthy, 60, what="the cache synced")

    said = wait_for(
        lambda: _refused(
            lambda: k.podgroup("team-b", podgroup("steal", 1, queue="team-a")),
            lambda: k.custom.delete_namespaced_custom_object(
                "scheduling.volsched.io", "v1beta1", "team-b", "podgroups", "steal"
            ),
            "does not take jobs of namespace team-b",
        ),
        60,
        what="the PodGroup for another team's queue refused at admission",
    )
    assert "queue team-a does not take jobs of namespace team-b (its namespaceSelector: team=a)" in said

    k.queue(queue("q1", parent="q2"))
    said = wait_for(
        lambda: _refused(
            lambda: k.queue(queue("q2", parent="q1")),
            lambda: k.custom.delete_cluster_custom_object(
                "scheduling.volsched.io", "v1beta1", "queues", "q2"
            ),
            "would form a cycle",
        ),
        60,
        what="the Queue closing a cycle refused",
    )
    assert "q2 -> q1 -> q2" in said
    # A refusal is the webhook doing its job: one INFO line with the object and the reason, no ERROR.
    log = op.log()
    assert "INFO volsched.admission: create of Queue q2 refused: queue q2: parent" in log
    assert "does not take jobs of namespace team-b" in log
    assert "failed permanently" not in log, op.log_tail()

    # The namespace's queue filled in: a PodGroup naming none (the CRD defaults it to `default`), and
    # a pod standing alone.
    k.podgroup("team-b", {**podgroup("mine", 1), "spec": {"minMember": 1}})
    assert k.get_podgroup("team-b", "mine")["spec"]["queue"] == "shared"
    k.pods("team-b", pod("alone"))
    annotations = k.core.read_namespaced_pod("alone", "team-b").metadata.annotations or {}
    assert annotations.get("scheduling.volsched.io/queue-name") == "shared"
    # A queue in use is not deleted (once a session saw the PodGroup, the cache has it).
    wait_for(lambda: (k.get_podgroup("team-b", "mine").get("status") or {}).get("phase"), 30, what="seen")
    with pytest.raises(ApiException) as in_use:
        k.custom.delete_cluster_custom_object("scheduling.volsched.io", "v1beta1", "queues", "shared")
    assert "queue shared still holds 2 job(s)" in json.loads(in_use.value.body)["message"]
    names = [
        w.metadata.name
        for w in client.AdmissionregistrationV1Api(k.api).list_validating_webhook_configuration().items
    ]
    assert "volsched.io" in names

    # The operator gone (killed: on a graceful exit kopf withdraws the webhooks it manages, so that a
    # stopped operator blocks nothing): PodGroups are refused (Fail), pods still come in (Ignore).
    op.stop(signal.SIGKILL)
    with pytest.raises(ApiException) as refused:
        k.podgroup("team-b", podgroup("later", 1, queue="shared"))
    assert "failed calling webhook" in str(refused.value.body)
    k.pods("team-b", pod("still"))
