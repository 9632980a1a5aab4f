"""The records' key Secret's life against the real apiserver (note18 Found 6, docs/tenancy.md "The signed
record"). The defect: the Secret deleted (by hand, or with its namespace), the next start made a new key,
and every running pod's record stopped verifying: an orphan among them counted in its namespace's
default queue, a whole cluster's accounting moved without a word. Now the running leader puts back the key
it holds (its key changed: the new one signs, the held one stays as ``previous``), told by a log line and
an Event on the Secret; and a start that made a new key while pods carry records signed by another says
so, once, with their count."""

from __future__ import annotations

import base64

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.operator_fixtures import (
    GROUP,
    OPERATOR_NS,
    VERSION,
    Kube,
    OperatorProcess,
    Start,
    node,
    pod,
    podgroup,
    queue,
    queue_cpu,
    wait_for,
)
from volsched.kube.recordkey import CURRENT, PREVIOUS, SECRET, SINCE
from volsched.model.admitted import BOUND_UNDER, verified

pytestmark = pytest.mark.cluster

DEFAULT_QUEUE = "scheduling.volsched.io/default-queue"
NS = "keyed"


def _gang_bound(k: Kube, start_operator: Start) -> OperatorProcess:
    """Gang g (2 pods, queue qa) bound by an operator, in namespace :data:`NS` whose default queue is qd."""
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("qa"))
    k.queue(queue("qd"))
    meta = {"name": NS, "labels": {DEFAULT_QUEUE: "qd"}}
    k.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    k.podgroup(NS, podgroup("g", 2, queue="qa"))
    k.pods(NS, *(pod(f"g-{i}", cpu="1", group="g") for i in range(2)))
    op = start_operator()
    wait_for(lambda: len(k.bound(NS)) == 2, 30, what="gang g bound", operator=op)
    return op


def _keys(k: Kube) -> dict[str, bytes] | None:
    """The key Secret's keys (None: there is none)."""
    try:
        secret = k.core.read_namespaced_secret(SECRET, OPERATOR_NS)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return {name: base64.b64decode(value) for name, value in (secret.data or {}).items()}


def _told(k: Kube, ns: str, kind: str, name: str, reason: str) -> list[str]:
    return [
        e.message or ""
        for e in k.core.list_namespaced_event(ns).items
        if e.reason == reason and e.involved_object.kind == kind and e.involved_object.name == name
    ]


def _orphans_told(k: Kube, op: OperatorProcess) -> str:
    """Gang g's PodGroup deleted while no operator runs, ``op`` started then: what pod g-0 is told of where
    it counts now (its record decides it)."""
    wait_for(
        lambda: _told(k, NS, "Pod", "g-0", "PodGroupGone"), 30, what="g-0 told where it counts", operator=op
    )
    [said] = _told(k, NS, "Pod", "g-0", "PodGroupGone")
    return said


def test_the_key_secret_deleted_under_a_running_operator_is_put_back_with_its_key(
    k: Kube, start_operator: Start
) -> None:
    op = _gang_bound(k, start_operator)
    held = _keys(k)
    assert held is not None and set(held) == {CURRENT}
    made = k.core.read_namespaced_secret(SECRET, OPERATOR_NS).metadata.creation_timestamp
    k.core.delete_namespaced_secret(SECRET, OPERATOR_NS)
    wait_for(lambda: _keys(k) == held, 30, what="the key Secret put back with its key", operator=op)
    back = k.core.read_namespaced_secret(SECRET, OPERATOR_NS)
    assert back.metadata.annotations[SINCE] == made.strftime("%Y-%m-%dT%H:%M:%SZ")
    wait_for(
        lambda: _told(k, OPERATOR_NS, "Secret", SECRET, "RecordKeyRestored"),
        30,
        what="an Event on the Secret",
        operator=op,
    )
    said = [line for line in op.log().splitlines() if f"Secret {OPERATOR_NS}/{SECRET}, the key" in line]
    assert len(said) == 1 and "WARNING" in said[0] and "was deleted: put back with the one key" in said[0]
    op.stop()

    # The gang's PodGroup deleted while no operator runs: its pods are orphans, and their records say
    # where they count. Before: a new key made at this start, the records did not verify, and both pods
    # counted in their namespace's default queue qd.
    k.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "g")
    op = start_operator()
    assert "it counts in queue qa, the one it was bound under" in _orphans_told(k, op)
    assert not _told(k, NS, "Pod", "g-0", "BoundUnderNotVerified")
    wait_for(lambda: queue_cpu(k, "qa") == "2", 30, what="queue qa charged for its pods", operator=op)
    assert "carry a record signed by a key this scheduler does not hold" not in op.log()
    op.check_running()


def test_a_key_changed_under_a_running_operator_signs_and_the_one_it_held_stays_as_previous(
    k: Kube, start_operator: Start
) -> None:
    op = _gang_bound(k, start_operator)
    held = _keys(k)
    assert held is not None
    new = b"n" * 32
    secret = k.core.read_namespaced_secret(SECRET, OPERATOR_NS)
    secret.data = {CURRENT: base64.b64encode(new).decode()}
    k.core.replace_namespaced_secret(SECRET, OPERATOR_NS, secret)
    kept = {CURRENT: new, PREVIOUS: held[CURRENT]}
    wait_for(lambda: _keys(k) == kept, 30, what="the key held kept as previous", operator=op)
    wait_for(
        lambda: _told(k, OPERATOR_NS, "Secret", SECRET, "RecordKeyKept"),
        30,
        what="an Event on the Secret",
        operator=op,
    )
    k.pods(NS, pod("later", cpu="1"))  # (bound after the change: signed with the new key)
    wait_for(lambda: f"{NS}/later" in k.bound(NS), 30, what="a later pod bound", operator=op)
    later = k.core.read_namespaced_pod("later", NS)
    assert verified(later.metadata.annotations[BOUND_UNDER], uid=later.metadata.uid, keys=[new])
    g0 = k.core.read_namespaced_pod("g-0", NS)  # (signed with the key held: still verifies)
    assert verified(g0.metadata.annotations[BOUND_UNDER], uid=g0.metadata.uid, keys=list(kept.values()))
    op.check_running()


def test_a_start_that_made_a_new_key_says_how_many_pods_carry_a_record_signed_by_another(
    k: Kube, start_operator: Start
) -> None:
    op = _gang_bound(k, start_operator)
    op.stop()
    k.core.delete_namespaced_secret(SECRET, OPERATOR_NS)  # (while no operator runs: nobody puts it back)
    k.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "g")
    op = start_operator()
    said = [line for line in op.log().splitlines() if "carry a record signed by a key" in line]
    assert (
        len(said) == 1 and "2 pod(s) carry a record signed by a key this scheduler does not hold" in said[0]
    )
    assert (
        f"the key Secret {OPERATOR_NS}/{SECRET} was not found and a new key was made at this start" in said[0]
    )
    assert "it counts in queue qd, its namespace's default queue" in _orphans_told(k, op)
    wait_for(lambda: _told(k, NS, "Pod", "g-1", "BoundUnderNotVerified"), 30, what="g-1 told", operator=op)
    op.check_running()


def test_the_old_key_put_back_under_a_running_operator_takes_the_records_it_signed_at_once(
    k: Kube, start_operator: Start
) -> None:
    """The key Secret deleted while no operator ran, the next start made a new one: gang g's orphans,
    signed with the old key, count in their namespace's default queue qd, told their record is not
    verified. The old key put back from a backup while that operator runs: the leader keeps it beside the
    one it made, and its cache checks the pods it holds not verified again with it. Before, they stayed
    in qd, told so, until each pod changed or the operator restarted."""
    op = _gang_bound(k, start_operator)
    old = _keys(k)
    assert old is not None
    op.stop()
    k.core.delete_namespaced_secret(SECRET, OPERATOR_NS)
    k.custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "podgroups", "g")
    op = start_operator()
    made = _keys(k)
    assert made is not None and made[CURRENT] != old[CURRENT]
    assert "it counts in queue qd, its namespace's default queue" in _orphans_told(k, op)
    wait_for(lambda: queue_cpu(k, "qd") == "2", 30, what="queue qd charged for the orphans", operator=op)

    secret = k.core.read_namespaced_secret(SECRET, OPERATOR_NS)  # (the backup put back: its key)
    secret.data = {CURRENT: base64.b64encode(old[CURRENT]).decode()}
    k.core.replace_namespaced_secret(SECRET, OPERATOR_NS, secret)
    kept = {CURRENT: old[CURRENT], PREVIOUS: made[CURRENT]}
    wait_for(lambda: _keys(k) == kept, 30, what="the key made kept as previous", operator=op)
    wait_for(lambda: queue_cpu(k, "qa") == "2", 30, what="queue qa charged for its pods again", operator=op)
    assert queue_cpu(k, "qd") == "0"  # before: 2, until a restart
    wait_for(
        lambda: any(
            "it counts in queue qa, the one it was bound under" in m
            for m in _told(k, NS, "Pod", "g-0", "PodGroupGone")
        ),
        30,
        what="g-0 told it counts in qa",
        operator=op,
    )
    op.check_running()
