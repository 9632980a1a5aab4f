"""The signed bound-under record against the real apiserver (note17 Found 1, docs/tenancy.md "The signed
record"): the operator makes its key Secret at start and signs each bind's record with it for that pod;
a record it did not sign, on a pod made after the key, is not taken. The hole it closes, in its second
form (b066145): one pods/create with ``spec.nodeName`` and the record of a bind standing alone took an
older PodGroup's name, its pods waiting (told PodGroupNameTaken) while no policy stops such a create."""

from __future__ import annotations

import base64

import pytest

from tests.e2e.operator_fixtures import (
    DEFAULT_QUEUE,
    OPERATOR_NS,
    Kube,
    OperatorProcess,
    Start,
    a_later_second,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)
from volsched.kube.recordkey import SECRET
from volsched.model.admitted import BOUND_UNDER, STANDING_ALONE, verified

pytestmark = pytest.mark.cluster


def _signing(k: Kube, start_operator: Start, ns: str) -> OperatorProcess:
    """Node n1 of 4 cpu, queue qa, namespace ``ns`` (its default queue qa), and the operator started: its
    key made now, before any pod of ``ns``."""
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("qa"))
    meta = {"name": ns, "labels": {DEFAULT_QUEUE: "qa"}}
    k.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return start_operator()


def _told(k: Kube, ns: str, kind: str, name: str, reason: str) -> bool:
    return any(
        e.reason == reason and e.involved_object.kind == kind and e.involved_object.name == name
        for e in k.core.list_namespaced_event(ns).items
    )


def test_the_operator_signs_each_binds_record_for_its_pod_with_the_key_it_made(
    k: Kube, start_operator: Start
) -> None:
    ns = "signed-a"
    op = _signing(k, start_operator, ns)
    k.pods(ns, pod("y", cpu="1"))  # (standing alone: its bind writes {"standingAlone":true})
    wait_for(lambda: f"{ns}/y" in k.bound(ns), 30, what="y bound", operator=op)
    secret = k.core.read_namespaced_secret(SECRET, OPERATOR_NS)
    key = base64.b64decode(secret.data["key"])
    assert secret.type == "Opaque" and len(key) == 32
    y = k.core.read_namespaced_pod("y", ns)
    assert verified(y.metadata.annotations[BOUND_UNDER], uid=y.metadata.uid, keys=[key]) == STANDING_ALONE
    op.check_running()


def test_a_pod_made_on_a_node_with_a_forged_standing_alone_record_takes_no_older_podgroups_name(
    k: Kube, start_operator: Start
) -> None:
    ns = "signed-b"
    op = _signing(k, start_operator, ns)  # (the key made now: pod x comes after it)
    made = k.podgroup(ns, podgroup("x", 2, queue="qa"))
    a_later_second(made["metadata"]["creationTimestamp"])
    forged = pod("x", cpu="1")
    forged["metadata"]["annotations"] = {BOUND_UNDER: STANDING_ALONE}
    forged["spec"]["nodeName"] = "n1"  # (made bound: no scheduler asked)
    k.pods(ns, forged, pod("x-0", cpu="1", group="x"))
    wait_for(
        lambda: _told(k, ns, "Pod", "x", "BoundUnderNotVerified"),
        30,
        what="x told its record is not taken",
        operator=op,
    )
    # x is PodGroup x's member (it came after the PodGroup): the gang of two is whole once x-0 is bound.
    # Before: x kept the name as bound standing alone, PodGroup x was no job and x-0 waited.
    wait_for(lambda: f"{ns}/x-0" in k.bound(ns), 30, what="x-0 bound beside its member x", operator=op)
    assert not _told(k, ns, "PodGroup", "x", "PodGroupNameTaken")
    op.check_running()
