"""What the admission webhooks decide (volsched.operator.admission.Admission) over the operator's cache:
the queue rules for PodGroups and pods, a Queue's cycle and guarantee, the namespace's default queue."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import namespace, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.cache.workload import WORKLOAD_API_VERSION, WORKLOAD_PODGROUP
from volsched.model.admitted import BOUND_UNDER, bound_under
from volsched.model.vocabulary import QUEUE_ANNOTATION
from volsched.operator.admission import Admission

#: Groups of ns-b the pods of test_pod join: one in an open queue, one of Kubernetes' own (the Workload
#: API: no webhook of ours in front of it) in team-a, which does not take ns-b.
GROUPS = [
    podgroup("open", ns="ns-b", queue="shared"),
    {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": WORKLOAD_PODGROUP,  # as the watch hands it to the cache
        "metadata": {"name": "wl", "namespace": "ns-b", "annotations": {QUEUE_ANNOTATION: "team-a"}},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
    },
]


def _member(name: str, group: str, **kw: Any) -> dict[str, Any]:
    """A pod of a Kubernetes PodGroup (``spec.schedulingGroup``)."""
    obj = pod(name, **kw)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def _admission() -> Admission:
    state = ClusterState()
    objs: list[dict[str, Any]] = [
        queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}, maxPriority=100),
        queue("shared", priorityClasses=["low"]),
        queue("q1", parent="q2"),
        queue("q2", parent="top"),
        priority_class("low", 10),
        priority_class("high", 1000),
        namespace("ns-a", labels={"team": "a"}),
        namespace("ns-b", labels={"team": "b"}),
    ]
    ns = namespace("ns-c", labels={"team": "a"})
    ns["metadata"]["annotations"] = {"scheduling.volsched.io/default-queue": "team-a"}
    objs.append(ns)
    objs.append(podgroup("pg", ns="ns-b", queue="team-a"))
    for obj in objs:
        state.apply(obj)
    return Admission(state, scheduler_names=frozenset({"volsched"}))


@pytest.mark.parametrize(
    ("obj", "ns", "refusal"),
    [
        (podgroup("j", ns="ns-a", queue="team-a"), "ns-a", None),
        (
            podgroup("j", ns="ns-b", queue="team-a"),
            "ns-b",
            "queue team-a does not take jobs of namespace ns-b",
        ),
        (podgroup("j", ns="ns-a", queue="team-a", priority_class="high"), "ns-a", "priority 1000 is above"),
        (
            podgroup("j", ns="ns-a", queue="shared", priority_class="high"),
            "ns-a",
            "priority class high is not",
        ),
        (podgroup("j", ns="ns-a", queue="nowhere"), "ns-a", None),  # the scheduler says it does not exist
        (podgroup("j", ns="ns-b"), "ns-b", None),  # default: every namespace
        (podgroup("j", ns="ns-b", priority_class="system-cluster-critical"), "ns-b", "is for kube-system"),
        (podgroup("j", ns="kube-system", priority_class="system-cluster-critical"), "kube-system", None),
        (podgroup("j", ns="ns-c"), "ns-c", None),  # its namespace's queue takes it
    ],
)
def test_podgroup(obj: dict[str, Any], ns: str, refusal: str | None) -> None:
    out = _admission().podgroup(obj, ns)
    assert out is None if refusal is None else refusal in (out or "")


@pytest.mark.parametrize(
    ("obj", "ns", "refusal"),
    [
        (pod("p", ns="ns-b", queue="team-a"), "ns-b", "does not take jobs of namespace ns-b"),
        (
            pod("p", ns="ns-b", group="pg"),
            "ns-b",
            "does not take jobs of namespace ns-b",
        ),  # its group's queue
        # A grouped pod is held to its group's queue (the job's), whatever its own annotation names:
        (pod("p", ns="ns-b", group="pg", queue="shared"), "ns-b", "does not take jobs of namespace ns-b"),
        (pod("p", ns="ns-b", group="open", queue="team-a"), "ns-b", None),
        (_member("p", "wl", ns="ns-b", queue="shared"), "ns-b", "does not take jobs of namespace ns-b"),
        (pod("p", ns="ns-b", group="absent", queue="team-a"), "ns-b", "does not take jobs"),  # not known yet
        (pod("p", ns="ns-b", queue="team-a", scheduler="default-scheduler"), "ns-b", None),  # not ours
        (pod("p", ns="ns-a", queue="shared", priority_class="low"), "ns-a", None),
        (pod("p", ns="ns-b", priority_class="system-node-critical"), "ns-b", "is for kube-system"),
    ],
)
def test_pod(obj: dict[str, Any], ns: str, refusal: str | None) -> None:
    """The defect: a grouped pod was held to its own queue annotation, not its group's (the queue its job
    runs in): refused for a queue its group overrides, let in for one its group's queue refuses."""
    admission = _admission()
    for group in GROUPS:
        admission.state.apply(group)
    out = admission.pod(obj, ns)
    assert out is None if refusal is None else refusal in (out or "")


@pytest.mark.parametrize(
    ("obj", "refusal"),
    [
        (queue("top", parent="q1"), "parent q1 would form a cycle (top -> q1 -> q2 -> top)"),
        (queue("q3", parent="q3"), "parent q3 would form a cycle (q3 -> q3)"),
        (queue("q3", parent="q1"), None),
        (
            queue("g", guarantee={"cpu": "4"}, capability={"cpu": "2"}),
            "guarantee of cpu (4) exceeds its capability (2)",
        ),
        (queue("g", guarantee={"cpu": "50%"}, capability={"cpu": "2"}), None),
        (queue("bad", maxPriority="high"), "spec.maxPriority: expected an integer"),
    ],
)
def test_queue(obj: dict[str, Any], refusal: str | None) -> None:
    out = _admission().queue(obj)
    assert out is None if refusal is None else refusal in (out or "")


@pytest.mark.parametrize(
    ("obj", "ns", "kind", "patched"),
    [
        (podgroup("j", ns="ns-c"), "ns-c", "PodGroup", "team-a"),
        (podgroup("j", ns="ns-c", queue="default"), "ns-c", "PodGroup", "team-a"),
        (podgroup("j", ns="ns-c", queue="shared"), "ns-c", "PodGroup", None),
        (podgroup("j", ns="ns-a"), "ns-a", "PodGroup", None),  # no default named
        (pod("p", ns="ns-c"), "ns-c", "Pod", "team-a"),
        (pod("p", ns="ns-c", group="g"), "ns-c", "Pod", None),  # its PodGroup names the queue
        (pod("p", ns="ns-c", queue="shared"), "ns-c", "Pod", None),
        (pod("p", ns="ns-c", scheduler="default-scheduler"), "ns-c", "Pod", None),
    ],
)
def test_default_queue(obj: dict[str, Any], ns: str, kind: str, patched: str | None) -> None:
    assert _admission().default_queue_patch(obj, ns, kind=kind) == patched


def test_self_signed_certificates_verify_as_the_apiserver_would(tmp_path: Any) -> None:
    import ssl

    from volsched.operator.certs import self_signed

    certs = self_signed(["127.0.0.1", "volsched.volsched-system.svc"])
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(certs.certfile, certs.pkeyfile)
    client = ssl.create_default_context(cafile=str(certs.cafile))
    assert client.verify_mode == ssl.CERT_REQUIRED
    assert oct(certs.pkeyfile.stat().st_mode & 0o777) == "0o600"


def test_a_queue_in_use_may_not_be_deleted() -> None:
    a = _admission()
    assert "queue team-a still holds 1 job(s)" in (a.queue_deletion("team-a") or "")  # ns-b/pg
    assert a.queue_deletion("shared") is None
    a.state.apply(pod("alone", ns="ns-a", queue="shared"))
    a.state.apply(pod("done", ns="ns-a", queue="q1", phase="Succeeded", node="n1"))
    a.state.apply(pod("theirs", ns="ns-a", queue="q2", scheduler="default-scheduler"))
    assert "queue shared still holds 1 job(s)" in (a.queue_deletion("shared") or "")
    assert a.queue_deletion("q1") is None and a.queue_deletion("q2") is None
    a.state.apply(pod("routed", ns="ns-c"))  # its namespace's queue
    assert "still holds 2 job(s)" in (a.queue_deletion("team-a") or "")
    # A pod whose PodGroup is gone, bound under q1 (its record): a job of q1 (before: none held it).
    record = bound_under(uid="u", queue="q1", priority_class="", priority=0, min_member=2)
    a.state.apply(pod("orphan", ns="ns-a", group="gone", node="n1", annotations={BOUND_UNDER: record}))
    assert "queue q1 still holds 1 job(s)" in (a.queue_deletion("q1") or "")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("volsched-system/volsched-webhook", ("volsched-system", "volsched-webhook", 443)),
        ("ns/svc:8443", ("ns", "svc", 8443)),
        ("svc", None),
        ("ns/svc:https", None),
    ],
)
def test_the_webhook_service_reference(text: str, parsed: tuple[str, str, int] | None) -> None:
    from volsched.operator.settings import parse_service

    if parsed is None:
        with pytest.raises(ValueError, match="expected namespace/name"):
            parse_service(text)
    else:
        assert parse_service(text) == parsed


def test_an_orphan_whose_record_its_queue_refuses_holds_its_namespaces_default_queue_not_that_one() -> None:
    """A pod of ns-c (default queue team-a), its PodGroup gone, its record forged as shared's at class high
    (not in shared's priorityClasses): the sessions count it in team-a, its namespace's default queue, so
    it keeps team-a from deletion, not shared (before: shared, whose sessions do not count it)."""
    a = _admission()
    record = bound_under(uid="u", queue="shared", priority_class="high", priority=1000, min_member=2)
    a.state.apply(pod("orphan", ns="ns-c", group="gone", node="n1", annotations={BOUND_UNDER: record}))
    assert a.queue_deletion("shared") is None
    assert "queue team-a still holds 2 job(s)" in (a.queue_deletion("team-a") or "")  # (ns-b/pg and it)


def test_an_orphan_whose_podgroup_a_pod_of_its_name_takes_holds_its_records_queue() -> None:
    """note15 Found 3: pod g of ns-a, naming no group, made before PodGroup g, takes its name: PodGroup g is
    no job, and its running pods m1 (bound under a record in q1) and m2 (in shared) are orphans the
    sessions count in those queues. The delete check skipped them (their group exists: it counts
    PodGroup g, held to the least record, q1's) and let shared go while m2 counted there. It now asks
    the snapshot's rule (``volsched.cache.names``)."""
    a = _admission()
    records = {
        "m1": bound_under(uid="u", queue="q1", priority_class="", priority=0, min_member=2),
        "m2": bound_under(uid="u", queue="shared", priority_class="low", priority=10, min_member=2),
    }
    a.state.apply(pod("g", ns="ns-a", queue="team-a", created="2026-01-01T00:00:01Z"))
    a.state.apply(podgroup("g", ns="ns-a", queue="q1", min_member=2, created="2026-01-01T00:00:05Z"))
    for name, record in records.items():
        a.state.apply(pod(name, ns="ns-a", group="g", node="n1", annotations={BOUND_UNDER: record}))
    snap = a.state.snapshot(now=1.0)
    assert snap.jobs["ns-a/g"].podgroup is None  # (what sessions count: m1 in q1, m2 in shared)
    assert (snap.jobs["ns-a/m1"].queue, snap.jobs["ns-a/m2"].queue) == ("q1", "shared")
    assert "queue shared still holds 1 job(s)" in (a.queue_deletion("shared") or "")  # before: None
    # Made after PodGroup g, pod g is its member: m1 and m2 are g's (counted with g), not orphans.
    a.state.apply(pod("g", ns="ns-a", queue="team-a", created="2026-01-01T00:00:09Z"))
    snap = a.state.snapshot(now=2.0)
    assert snap.jobs["ns-a/g"].podgroup is not None and sorted(snap.jobs["ns-a/g"].tasks) == [
        "ns-a/g",
        "ns-a/m1",
        "ns-a/m2",
    ]
    assert a.queue_deletion("shared") is None


@pytest.mark.parametrize(
    ("made", "owned", "refusal"),
    [
        ("2026-01-01T00:00:09Z", False, "priority 1000 is above"),  # made after PodGroup x: its member
        (None, False, "priority 1000 is above"),  # (being made now)
        ("2026-01-01T00:00:05Z", False, None),  # the same second: it keeps its name, its own queue q1
        ("2026-01-01T00:00:09Z", True, None),  # a controller owner's: in its owner's group, not x
    ],
)
def test_a_pod_standing_alone_made_after_a_podgroup_of_its_name_is_held_to_that_podgroups_queue(
    made: str | None, owned: bool, refusal: str | None
) -> None:
    """A pod x naming no group, made after PodGroup x of its namespace, is that PodGroup's member (its job
    runs in team-a, maxPriority 100): the pod webhook asks team-a's rules, as it does for a pod naming x;
    before, it asked those of q1, its own annotation's, and let in class high (1000)."""
    a = _admission()
    a.state.apply(podgroup("x", ns="ns-a", queue="team-a", created="2026-01-01T00:00:05Z"))
    body = pod(
        "x", ns="ns-a", queue="q1", priority_class="high", created=made, owner="Job/j" if owned else None
    )
    out = a.pod(body, "ns-a")
    assert out is None if refusal is None else refusal in (out or "")
