"""Who may use a queue, enforced by the scheduler (conformance): a job that breaks its queue's rules
stays pending with an event naming the rule; a tenant's own annotation or priority class protects
nothing its queue does not allow; per namespace, a queue admits at most so many jobs and pods. The
rules hold with no admission webhook in front (docs/tenancy.md)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import namespace, node, placed, pod, podgroup, priority_class, queue, run
from tests.sim._eviction_helpers import Staged, eviction_config, job

PRIORITIES = [priority_class("high", 1000), priority_class("low", 10)]
CRITICAL = [priority_class("system-cluster-critical", 2000000000)]


def _events(data: dict[str, Any], obj: str) -> list[str]:
    return [e["message"] for e in data["events"] if obj in e["object"]]


def _ns(name: str, *, team: str | None = None, default_queue: str | None = None, label: bool = False) -> dict:
    out = namespace(name, labels={"team": team} if team else None)
    if default_queue:
        key = "scheduling.volsched.io/default-queue"
        if label:
            out["metadata"]["labels"][key] = default_queue
        else:
            out["metadata"]["annotations"] = {key: default_queue}
    return out


# Each case: the queue's tenancy fields, the job's namespace and priority class, and the rule it breaks
# (None: it runs).
ACCESS_CASES = [
    pytest.param({}, "ns-a", None, None, id="no-rules-every-namespace"),
    pytest.param({"namespaceSelector": {"matchLabels": {"team": "a"}}}, "ns-a", None, None, id="selected-ns"),
    pytest.param(
        {"namespaceSelector": {"matchLabels": {"team": "a"}}},
        "ns-b",
        None,
        "queue qa does not take jobs of namespace ns-b (its namespaceSelector: team=a)",
        id="namespace-not-selected",
    ),
    pytest.param(
        {
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ns-b"]}
                ]
            }
        },
        "ns-b",
        None,
        None,
        id="selected-by-the-name-label",
    ),
    pytest.param({"priorityClasses": ["low"]}, "ns-a", "low", None, id="listed-class"),
    pytest.param({"priorityClasses": ["low"]}, "ns-a", None, None, id="no-class-always-allowed"),
    pytest.param(
        {"priorityClasses": ["low"]},
        "ns-a",
        "high",
        "priority class high is not allowed in queue qa (its priorityClasses: low)",
        id="unlisted-class",
    ),
    pytest.param({"maxPriority": 1000}, "ns-a", "high", None, id="at-the-ceiling"),
    pytest.param(
        {"maxPriority": 999}, "ns-a", "high", "priority 1000 is above queue qa's maxPriority 999", id="above"
    ),
    pytest.param(
        {},
        "ns-a",
        "system-cluster-critical",
        "priority class system-cluster-critical is for kube-system: queue qa does not allow it in namespace ns-a",
        id="critical-outside-kube-system",
    ),
    pytest.param({}, "kube-system", "system-cluster-critical", None, id="critical-in-kube-system"),
    pytest.param(
        {"priorityClasses": ["system-cluster-critical"]},
        "ns-a",
        "system-cluster-critical",
        None,
        id="critical-where-the-queue-allows-it",
    ),
]


@pytest.mark.parametrize(("rules", "ns", "pclass", "broken"), ACCESS_CASES)
@pytest.mark.parametrize("kind", ["podgroup", "lone-pod", "kubernetes-podgroup"])
def test_a_job_that_breaks_its_queues_rules_stays_pending_naming_the_rule(rules, ns, pclass, broken, kind):
    """A Kubernetes PodGroup (no webhook of ours in front of it) whose pod names an open queue of its own is
    held to its group's queue, the one its job runs in: the scheduler's own check, whatever was admitted."""
    objs = [node("n1", cpu="8"), *PRIORITIES, *CRITICAL, queue("qa", **rules), queue("open")]
    objs += [_ns("ns-a", team="a"), _ns("ns-b", team="b"), _ns("kube-system")]
    if kind == "podgroup":
        objs += [podgroup("j", ns=ns, queue="qa", priority_class=pclass)]
        objs += [pod("j-0", ns=ns, group="j", priority_class=pclass)]
    elif kind == "kubernetes-podgroup":
        group = {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": "j",
                "namespace": ns,
                "annotations": {"scheduling.volsched.io/queue-name": "qa"},
            },
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        }
        member = pod("j-0", ns=ns, queue="open", priority_class=pclass)
        member["spec"]["schedulingGroup"] = {"podGroupName": "j"}
        objs += [group, member]
    else:
        objs += [pod("j-0", ns=ns, queue="qa", priority_class=pclass)]
    data = run(objs)
    assert placed(data) == ({} if broken else {f"{ns}/j-0": "n1"})
    if broken:
        events = _events(data, f"{ns}/j")
        assert any(broken in m for m in events), events


@pytest.mark.parametrize(
    ("action", "rules", "protection", "expect_evicted"),
    [
        pytest.param("preempt", {}, {"preemptable": False}, 4, id="preempt-not-preemptable-ignored"),
        pytest.param(
            "preempt",
            {"allowNotPreemptable": True},
            {"preemptable": False},
            0,
            id="preempt-not-preemptable-allowed",
        ),
        pytest.param("reclaim", {}, {"preemptable": False}, 4, id="reclaim-not-preemptable-ignored"),
        pytest.param(
            "reclaim",
            {"allowNotPreemptable": True},
            {"preemptable": False},
            0,
            id="reclaim-not-preemptable-allowed",
        ),
        # (preempt never names a system-critical victim whatever its queue: it outranks the preemptor)
        pytest.param(
            "reclaim", {}, {"priority_class": "system-cluster-critical"}, 4, id="reclaim-critical-ignored"
        ),
        pytest.param(
            "reclaim",
            {"priorityClasses": ["system-cluster-critical"]},
            {"priority_class": "system-cluster-critical"},
            0,
            id="reclaim-critical-allowed",
        ),
    ],
)
def test_a_tenants_own_protection_holds_only_where_its_queue_allows_it(
    action, rules, protection, expect_evicted
):
    """Running pods that declare themselves not preemptable, or name a system-critical class, in a
    namespace other than kube-system: evicted as any other unless their queue allows it."""
    pclass = protection.get("priority_class")
    annotations = {"scheduling.volsched.io/preemptable": "false"} if "preemptable" in protection else None
    before = [node("n1", cpu="8"), *PRIORITIES, *CRITICAL, queue("qa", **rules)]
    before += [podgroup("a", ns="ns-a", queue="qa", phase="Running", priority_class=pclass)]
    before += [
        pod(f"a-{i}", ns="ns-a", group="a", node="n1", annotations=annotations, priority_class=pclass)
        for i in range(8)
    ]
    if action == "preempt":  # in qa too, above the victims' priority
        after = job("b", ns="ns-b", queue="qa", size=4, priority_class="high")
    else:
        after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=4)]
    s = Staged(before, after, eviction_config())
    assert len(s.evicted("ns-a/")) == expect_evicted
    assert s.running("ns-b/") == expect_evicted


@pytest.mark.parametrize("label", [False, True], ids=["annotation", "label"])
def test_a_namespace_names_the_queue_its_jobs_go_to(label):
    objs = [node("n1", cpu="8"), queue("qa"), _ns("ns-a", default_queue="qa", label=label), _ns("ns-b")]
    objs += [pod("a-0", ns="ns-a"), pod("b-0", ns="ns-b")]
    objs += [podgroup("g", ns="ns-a"), pod("g-0", ns="ns-a", group="g")]
    objs += [pod("named-0", ns="ns-a", queue="default")]  # `default` is no choice: the namespace's
    data = run(objs)
    assert len(placed(data)) == 4
    assert float(data["queues"]["qa"]["allocated"]["cpu"]) == 3
    assert float(data["queues"]["default"]["allocated"]["cpu"]) == 1


def test_a_namespace_default_queue_is_held_to_that_queues_rules():
    """Naming a queue for a namespace opens no door: the queue's selector still decides."""
    objs = [node("n1", cpu="8"), queue("qa", namespaceSelector={"matchLabels": {"team": "a"}})]
    objs += [_ns("ns-b", team="b", default_queue="qa"), pod("b-0", ns="ns-b")]
    data = run(objs)
    assert placed(data) == {}
    assert any("does not take jobs of namespace ns-b" in m for m in _events(data, "ns-b/b-0"))


def test_max_running_jobs_per_namespace_is_enforced_at_enqueue():
    objs = [node("n1", cpu="16"), queue("qa", perNamespace={"maxRunningJobs": 2})]
    for ns in ("ns-a", "ns-b"):
        objs += [pod(f"j{i}", ns=ns, queue="qa") for i in range(4)]
    data = run(objs)
    assert len(placed(data, "ns-a/")) == 2 and len(placed(data, "ns-b/")) == 2
    waiting = [k for k in data["pods"] if k.startswith("ns-a/") and not data["pods"][k]["node"]]
    assert len(waiting) == 2
    for key in waiting:
        assert any(
            "namespace ns-a runs 2 jobs in queue qa, its perNamespace.maxRunningJobs is 2" in m
            for m in _events(data, key)
        ), _events(data, key)


def test_max_running_pods_per_namespace_is_enforced_at_enqueue_and_placement():
    objs = [node("n1", cpu="16"), queue("qa", perNamespace={"maxRunningPods": 3})]
    # a gang of 2, then another: 2 + 2 > 3, the second waits at enqueue
    objs += [podgroup("g1", ns="ns-a", queue="qa", min_member=2)]
    objs += [pod(f"g1-{i}", ns="ns-a", group="g1", created=f"2026-01-01T00:00:0{i}Z") for i in range(2)]
    objs += [podgroup("g2", ns="ns-a", queue="qa", min_member=2)]
    objs += [pod(f"g2-{i}", ns="ns-a", group="g2", created=f"2026-01-01T00:01:0{i}Z") for i in range(2)]
    # a job that may grow past its minimum: placement stops at the namespace's third pod
    objs += [podgroup("big", ns="ns-b", queue="qa", min_member=1)]
    objs += [pod(f"big-{i}", ns="ns-b", group="big") for i in range(5)]
    data = run(objs)
    assert len(placed(data, "ns-a/g1-")) == 2 and len(placed(data, "ns-a/g2-")) == 0
    assert any("2 more would pass its perNamespace.maxRunningPods 3" in m for m in _events(data, "ns-a/g2"))
    assert len(placed(data, "ns-b/big-")) == 3


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"namespaceSelector": "team=a"}, "spec.namespaceSelector: must be a map"),
        ({"priorityClasses": "low"}, "spec.priorityClasses must be a list of priority class names"),
        ({"maxPriority": "high"}, "spec.maxPriority: expected an integer"),
        ({"allowNotPreemptable": "maybe"}, "spec.allowNotPreemptable: expected true or false"),
        ({"perNamespace": {"maxJobs": 1}}, "spec.perNamespace.maxJobs is not a field volsched knows"),
        (
            {"perNamespace": {"maxRunningPods": -1}},
            "spec.perNamespace.maxRunningPods: expected an integer >= 0",
        ),
        # A queue capped at 2 pods held 3, its status saying capability pods 2 beside allocated pods 3.
        ({"capability": {"pods": "2"}}, "spec.capability.pods: a queue's capability and guarantee"),
        ({"guarantee": {"pods": "2"}}, "spec.guarantee.resource.pods: a queue's capability and guarantee"),
    ],
)
def test_a_queue_with_a_bad_tenancy_field_is_refused_naming_it(spec, message):
    from volsched.model.decode import build_queue
    from volsched.model.errors import InputError

    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        build_queue(queue("qa", **spec))
