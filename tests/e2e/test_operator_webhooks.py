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

from tests.e2e.operator_fixtures import (
    Kube,
    Start,
    a_later_second,
    free_port,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)
from volsched.model.admitted import BOUND_UNDER, bound_under

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


def _cycle_refused(k: Kube, *, what: str) -> str:
    """Queue q1 (parent q2), then q2 (parent q1), asked again until the webhook refuses q2: its message."""
    k.queue(queue("q1", parent="q2"))
    return wait_for(
        lambda: _refused(
            lambda: k.queue(queue("q2", parent="q1")),
            lambda: k.custom.delete_cluster_custom_object(
                "scheduling.volsched.io", "v1beta1", "queues", "q2"
            ),
            "would form a cycle",
        ),
        60,
        what=what,
    )


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

    said = _cycle_refused(k, what="the Queue closing a cycle refused")
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


def test_the_queue_of_an_orphan_whose_podgroup_a_pod_of_its_name_takes_is_not_deleted(
    k: Kube, start_operator: Start
) -> None:
    """note15 Found 3: pod g, naming no group, made before PodGroup g, keeps its name, so PodGroup g is no
    job and its running pods m1 (under a record of queue alpha) and m2 (of beta) are orphans the sessions
    count in those queues. The Queue webhook's delete check skipped them (their group exists: it counted
    PodGroup g, held to the least record, alpha's) and let beta go; it asks the snapshot's rule now
    (volsched.cache.names) and refuses."""
    k.nodes(node("n1", cpu="4"))
    for name in ("alpha", "beta", "other"):
        k.queue(queue(name))
    k.core.create_namespace({"metadata": {"name": "taken"}})
    k.pods("taken", pod("g", cpu="1"))  # names no group
    a_later_second(k.core.read_namespaced_pod("g", "taken").metadata.creation_timestamp)
    k.podgroup("taken", podgroup("g", 2, queue="other"))
    for name, under in (("m1", "alpha"), ("m2", "beta")):
        m = pod(name, cpu="1", group="g")
        record = bound_under(uid="gone-uid", queue=under, priority_class="", priority=0, min_member=2)
        m["metadata"]["annotations"][BOUND_UNDER] = record
        m["spec"]["nodeName"] = "n1"  # (running under its record, as a bind wrote it)
        k.pods("taken", m)
    # The operator starts after them: its key's Secret is made in a later second, and the records, as a
    # bind before signing wrote them, are taken unsigned (docs/tenancy.md "The signed record").
    a_later_second(k.core.read_namespaced_pod("m2", "taken").metadata.creation_timestamp)
    op = start_operator("--webhook-port", str(free_port()))
    wait_for(op.healthy, 60, what="the cache synced")
    _cycle_refused(k, what="the webhooks served")  # (a Queue closing a cycle is refused)
    wait_for(
        lambda: any(
            e.reason == "PodGroupGone" and e.involved_object.name == "m2"
            for e in k.core.list_namespaced_event("taken").items
        ),
        60,
        what="m2 told it counts in queue beta",
        operator=op,
    )
    with pytest.raises(ApiException) as in_use:  # before: deleted, while m2 counted there
        k.custom.delete_cluster_custom_object("scheduling.volsched.io", "v1beta1", "queues", "beta")
    assert "queue beta still holds 1 job(s)" in json.loads(in_use.value.body)["message"]
    op.check_running()


def test_a_pod_standing_alone_made_after_a_podgroup_of_its_name_is_held_to_its_queue_at_admission(
    k: Kube, start_operator: Start
) -> None:
    """A pod x naming no group, made after PodGroup x of its namespace, is that PodGroup's member (its job
    runs in queue capped, maxPriority 100): the pod webhook asks capped's rules, as for a pod naming x,
    and refuses class high (1000); before, it asked those of open, the pod's own annotation's."""
    client.SchedulingV1Api(k.api).create_priority_class({"metadata": {"name": "high-joins"}, "value": 1000})
    k.queue(queue("capped", maxPriority=100))
    k.queue(queue("open"))
    k.core.create_namespace({"metadata": {"name": "joins"}})
    op = start_operator("--webhook-port", str(free_port()))
    wait_for(op.healthy, 60, what="the cache synced")
    a_later_second(k.podgroup("joins", podgroup("x", 1, queue="capped"))["metadata"]["creationTimestamp"])
    x = pod("x", cpu="1", priority_class="high-joins")
    x["metadata"]["annotations"] = {"scheduling.volsched.io/queue-name": "open"}
    said = wait_for(
        lambda: _refused(
            lambda: k.pods("joins", x),
            lambda: k.core.delete_namespaced_pod("x", "joins", grace_period_seconds=0),
            "priority 1000 is above",
        ),
        60,
        what="pod x refused at admission by PodGroup x's queue",
        operator=op,
    )
    assert "capped" in said
    op.check_running()
