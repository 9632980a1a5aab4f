"""The pods of one template listed at start share their decoded spec (:func:`volsched.kube.prune.decode_pruned`):
a spec whose JSON is the same to the byte as one listed before is one read-only object (a
:class:`~volsched.model.raw.FrozenMap`) for all of them, and its parse (:func:`build_task`) is kept with it.
Pods that differ in any field, or whose JSON differs where the values compare equal (``true`` and ``1``,
``1`` and ``1.0``, two key orders), do not share; every task is what a fresh build of its own pod gives; a
change in place of a shared spec, at any depth, is refused, and a copy of it is a plain dict that may be
changed without touching the others."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from tests.unit.test_spec_parse_shared import ANTI, SPREAD, _fields
from volsched.kube import prune
from volsched.kube.prune import decode_pruned
from volsched.model import decode
from volsched.model.decode import build_task
from volsched.model.errors import InputError
from volsched.model.raw import FrozenList, FrozenMap

Obj = dict[str, Any]


def listed_pod(name: str, **spec: Any) -> Obj:
    """A pending pod as the apiserver lists it (its spec's defaults, fields volsched does not read)."""
    body: Obj = {
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "schedulerName": "volsched",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
        "priority": 0,
    }
    body.update(spec)
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "resourceVersion": "7",
            "labels": {"app": "a", "run": name},
            "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {k: v for k, v in body.items() if v is not None},
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def listing(*pods: Obj) -> list[Obj]:
    """``pods`` listed on one page, decoded as the listing decodes them (their kind set, as the watch sets it)."""
    data = json.dumps({"metadata": {"resourceVersion": "9"}, "items": list(pods)}).encode()
    page = decode_pruned("Pod", data)
    assert page is not None
    for item in page["items"]:
        item["kind"], item["apiVersion"] = "Pod", "v1"
    return list(page["items"])


@pytest.fixture(autouse=True)
def _fresh_tables() -> None:
    prune._SHARED_SPECS.clear()
    prune._PRUNED_SPECS.clear()
    prune._SHARING.unshared_left = 0
    prune._SHARING.unshared_next = prune._SpecSharing.UNSHARED_PAGES
    decode._SPECS.clear()
    decode._SPEC_TASKS.clear()


def fresh_task(pod: Obj) -> list[Any]:
    """The fields of the task a build of a plain copy of ``pod`` gives, with no parse kept from before."""
    decode._SPECS.clear()
    decode._SPEC_TASKS.clear()
    return _fields(build_task(copy.deepcopy(pod), priority_classes={}))


def test_the_pods_of_one_template_share_one_read_only_spec_and_its_parse(monkeypatch: Any) -> None:
    a, b, c, d = listing(*(listed_pod(n) for n in "abcd"))
    # The first pod of a spec has a dict of its own (a spec seen once costs no frozen copy); the others
    # share one.
    assert type(a["spec"]) is dict and type(b["spec"]) is FrozenMap
    assert b["spec"] is c["spec"] is d["spec"] and a["spec"] == b["spec"]
    assert type(b["spec"]["containers"]) is FrozenList and type(b["spec"]["containers"][0]) is FrozenMap
    # what the pruning keeps, as before
    assert b["spec"]["containers"] == [
        {
            "name": "main",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        }
    ]
    # a later page's pods share it too
    (e,) = listing(listed_pod("e"))
    assert e["spec"] is b["spec"]

    parses: list[str] = []
    real = decode.pod_request

    def counted(pod: Any, **kwargs: Any) -> Any:
        parses.append(pod["metadata"]["name"])
        return real(pod, **kwargs)

    monkeypatch.setattr(decode, "pod_request", counted)
    tasks = [build_task(p, priority_classes={}) for p in (a, b, c, d, e)]
    assert parses == [
        "a"
    ]  # a's spec parsed, kept by its key; the shared spec's parse found once, kept with it
    assert b["spec"].memo is not None
    assert tasks[2].request_map is tasks[1].request_map and tasks[2].tolerations is tasks[1].tolerations
    monkeypatch.setattr(decode, "pod_request", real)
    assert [_fields(t) for t in tasks] == [fresh_task(p) for p in (a, b, c, d, e)]


def own(pod: Obj, name: str, *, meta: Obj | None = None, status: Obj | None = None) -> Obj:
    """``pod`` named ``name``, with ``meta`` over its metadata and ``status`` for its status."""
    out = copy.deepcopy(pod)
    out["metadata"] |= {"name": name, "uid": f"u-{name}", **(meta or {})}
    if status is not None:
        out["status"] = status
    return out


#: Pods of one template that differ in what is their own: their metadata and status.
OWN_FIELDS: list[tuple[Obj, Obj | None]] = [
    ({}, None),
    ({"annotations": {"scheduling.k8s.io/group-name": "g1"}}, None),
    ({"annotations": {"scheduling.volsched.io/expected-runtime": "45m"}}, None),
    ({"annotations": {"scheduling.volsched.io/preemptable": "false"}, "labels": {"volcano.sh/preemptable": "true"}}, None),
    ({"labels": {"app": "b"}, "creationTimestamp": "2026-01-02T03:04:05Z"}, None),
    ({"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "ju", "controller": True}]}, None),
    ({"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "controller": True}],
      "annotations": {"kubernetes.io/config.mirror": "x"}}, None),
    ({}, {"phase": "Pending", "nominatedNodeName": "n2"}),
    ({}, {"phase": "Running", "startTime": "2026-01-02T03:04:05Z"}),
    ({}, {"phase": "Succeeded"}),
    ({"deletionTimestamp": "2026-01-02T03:04:05Z"}, {"phase": "Pending"}),
]  # fmt: skip


@pytest.mark.parametrize("change", [{}, {"activeDeadlineSeconds": 60, "preemptionPolicy": "Never"},
                                    {"schedulingGates": [{"name": "wait"}]}, {"priorityClassName": "high"},
                                    {"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {}}}]}])  # fmt: skip
def test_the_pods_of_one_template_take_its_spec_task_and_each_fills_in_its_own_fields(change: Obj) -> None:
    template = listed_pod("t", **change)
    pods = listing(
        template, template, *(own(template, f"p{i}", meta=m, status=s) for i, (m, s) in enumerate(OWN_FIELDS))
    )
    assert all(p["spec"] is pods[1]["spec"] for p in pods[2:])
    tasks = [_fields(build_task(p, priority_classes={"high": 100})) for p in pods]
    assert len(decode._SPEC_TASKS) == 1  # (every pod here sets its priority)
    fresh = []
    for p in pods:
        decode._SPECS.clear()
        decode._SPEC_TASKS.clear()
        fresh.append(_fields(build_task(copy.deepcopy(p), priority_classes={"high": 100})))
    assert tasks == fresh


def test_a_spec_task_is_not_kept_where_the_priority_is_its_class_s_or_the_scheduler_names_differ() -> None:
    _, b, c = listing(*(listed_pod(n, priority=None, priorityClassName="high") for n in "abc"))
    assert b["spec"] is c["spec"]
    assert build_task(b, priority_classes={"high": 100}).priority == 100
    # its class's priority changed (the PriorityClass replaced): the next pod reads it
    assert build_task(c, priority_classes={"high": 200}).priority == 200
    assert not decode._SPEC_TASKS
    _, e, f = listing(*(listed_pod(n) for n in "def"))
    assert build_task(e, priority_classes={}).ours
    assert not build_task(f, priority_classes={}, scheduler_names=frozenset({"other"})).ours
    assert build_task(f, priority_classes={}).ours


def test_pods_whose_specs_differ_only_where_the_scheduler_does_not_read_share_it_as_pruned(
    monkeypatch: Any,
) -> None:
    """A service account's token volume, named at random in each pod: no two specs are the same JSON, and
    as pruned (the projected volume and the mounts dropped) they are one, which the pods share with its
    parse."""
    a, b, c, d = listing(*(with_token(listed_pod(n)) for n in "abcd"))
    assert type(a["spec"]) is dict and type(b["spec"]) is FrozenMap
    assert b["spec"] is c["spec"] is d["spec"] and a["spec"] == b["spec"]
    assert "volumes" not in b["spec"] and "volumeMounts" not in b["spec"]["containers"][0]
    parses: list[str] = []
    real = decode.pod_request

    def counted(pod: Any, **kwargs: Any) -> Any:
        parses.append(pod["metadata"]["name"])
        return real(pod, **kwargs)

    monkeypatch.setattr(decode, "pod_request", counted)
    tasks = [build_task(p, priority_classes={}) for p in (a, b, c, d)]
    assert parses == ["a"] and b["spec"].memo is not None
    monkeypatch.setattr(decode, "pod_request", real)
    assert [_fields(t) for t in tasks] == [fresh_task(p) for p in (a, b, c, d)]


def test_bound_pods_of_one_template_share_all_of_their_spec_but_the_node(monkeypatch: Any) -> None:
    """Pods of one template bound to different nodes (each its node in its spec, so no two are the same
    JSON): each spec is read-only, its node its own, every other field the same objects as the others',
    and the spec's parse is found once for all of them."""
    pods = listing(*(with_token(listed_pod(n, nodeName=f"node-{n}")) for n in "abcd"))
    a, b, c, d = pods
    assert type(a["spec"]) is dict and all(type(p["spec"]) is FrozenMap for p in (b, c, d))
    assert [p["spec"]["nodeName"] for p in pods] == ["node-a", "node-b", "node-c", "node-d"]
    shared = b["spec"].of
    assert shared is not None and c["spec"].of is shared and d["spec"].of is shared
    assert (
        "nodeName" not in shared
        and b["spec"]["containers"] is c["spec"]["containers"] is shared["containers"]
    )
    assert {k: v for k, v in a["spec"].items() if k != "nodeName"} == shared
    parses: list[str] = []
    real = decode.pod_request

    def counted(pod: Any, **kwargs: Any) -> Any:
        parses.append(pod["metadata"]["name"])
        return real(pod, **kwargs)

    monkeypatch.setattr(decode, "pod_request", counted)
    tasks = [build_task(p, priority_classes={}) for p in pods]
    assert parses == ["a"] and shared.memo is not None  # kept with the shared map, for every pod over it
    monkeypatch.setattr(decode, "pod_request", real)
    assert [t.node_name for t in tasks] == ["node-a", "node-b", "node-c", "node-d"]
    assert [_fields(t) for t in tasks] == [fresh_task(p) for p in pods]
    # read-only, the node too; the others' specs as they were
    for change in (
        lambda s: s.__setitem__("nodeName", "n9"),
        lambda s: s.pop("nodeName"),
        lambda s: s["containers"][0]["resources"]["requests"].__setitem__("cpu", "64"),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change(b["spec"])
    assert (
        c["spec"]["nodeName"] == "node-c"
        and c["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    )
    made = copy.deepcopy(b["spec"])
    assert type(made) is dict and made == b["spec"]


@pytest.mark.parametrize(
    "change", [{}, {"preemptionPolicy": "Never"}, {"schedulingGates": [{"name": "wait"}]}]
)
def test_bound_pods_of_one_template_take_its_spec_task_and_each_fills_in_its_own_fields(change: Obj) -> None:
    """A cluster restarting under volsched lists its pods bound, each spec over the template's shared
    one but for its node: they take the template's spec task (kept by the shared map) as pending pods of
    one template do, each task equal to a fresh build."""
    template = listed_pod("t", **change)
    pods = listing(
        *(
            with_token(
                own(template, f"p{i}", meta=m, status=s) | {"spec": {**template["spec"], "nodeName": f"n{i}"}}
            )
            for i, (m, s) in enumerate([({}, None), ({}, None), *OWN_FIELDS])
        )
    )
    shared = pods[1]["spec"].of
    assert shared is not None and all(p["spec"].of is shared for p in pods[2:])
    tasks = [_fields(build_task(p, priority_classes={})) for p in pods]
    assert [kept[0] for kept in decode._SPEC_TASKS.values()] == [shared]  # one, kept by the shared map
    assert tasks == [fresh_task(p) for p in pods]
    assert [build_task(p, priority_classes={}).node_name for p in pods] == [f"n{i}" for i in range(len(pods))]


def test_a_node_of_no_string_is_not_shared_and_is_refused_by_the_model() -> None:
    pods = listing(*(with_token(listed_pod(n, nodeName=7)) for n in "ab"))
    assert all(type(p["spec"]) is dict and p["spec"]["nodeName"] == 7 for p in pods)
    with pytest.raises(InputError, match="nodeName must be a string"):
        build_task(pods[1], priority_classes={})


#: A field each (a spec field the scheduler reads, at any depth), set to a value other than the template's.
DIFFERENT: dict[str, dict[str, Any]] = {
    "a container's request": {
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "200m"}},
            }
        ]
    },
    "a container's image": {"containers": [{"name": "main", "image": "other", "resources": {}}]},
    "a host port": {
        "containers": [{"name": "main", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    },
    "an init container": {
        "initContainers": [{"name": "i", "image": "i", "resources": {"requests": {"cpu": "2"}}}]
    },
    "a toleration": {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
    "a node selector": {"nodeSelector": {"zone": "a"}},
    "node affinity": {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        }
    },
    "pod anti-affinity": {"affinity": ANTI},
    "spread": {"topologySpreadConstraints": SPREAD},
    "a priority": {"priority": 5},
    "a priority class": {"priorityClassName": "high", "priority": None},
    "a scheduler": {"schedulerName": "other"},
    "a node": {"nodeName": "n1"},
    "an overhead": {"overhead": {"cpu": "250m"}},
    "a claim": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
    "local storage": {"volumes": [{"name": "s", "emptyDir": {}}]},
    "gates": {"schedulingGates": [{"name": "wait"}]},
    "a preemption policy": {"preemptionPolicy": "Never"},
    "a deadline": {"activeDeadlineSeconds": 30},
    "host network true": {"hostNetwork": True},
    # the same values to Python's ==, not the same JSON: never one key
    "host network 1 (True == 1)": {"hostNetwork": 1},
    "a priority of 0.0 (0 == 0.0)": {"priority": 0.0},
    "the same fields in another order": {
        "priority": 0,
        "schedulerName": "volsched",
        "restartPolicy": "Always",
    },
}


def with_token(pod: Obj) -> Obj:
    """``pod`` with a service account's token volume, named after the pod (as the apiserver names it at
    random): in ``volumes`` and its containers' ``volumeMounts``, fields the scheduler does not read. No
    two such pods' specs are the same JSON; as pruned, they are the same as without it."""
    spec = copy.deepcopy(pod["spec"])
    volume = f"kube-api-access-{pod['metadata']['name']}"
    for c in spec["containers"]:
        c["volumeMounts"] = [{"name": volume, "readOnly": True, "mountPath": "/var/run/secrets"}]
    spec["volumes"] = [
        *spec.get("volumes", []),
        {"name": volume, "projected": {"sources": [], "defaultMode": 420}},
    ]
    return {**pod, "spec": spec}


@pytest.mark.parametrize("token", [False, True], ids=["same JSON", "token volumes"])
@pytest.mark.parametrize("change", list(DIFFERENT.values()), ids=list(DIFFERENT))
def test_pods_whose_spec_differs_do_not_share_and_each_task_is_its_own(
    change: dict[str, Any], token: bool
) -> None:
    other = listed_pod("x", **change)
    if list(change) == ["priority", "schedulerName", "restartPolicy"]:  # the same spec, reordered
        spec = listed_pod("t")["spec"]
        other["spec"] = {k: spec[k] for k in reversed(list(spec))}
    pods = [
        listed_pod("t1"), listed_pod("t2"), other, other | {"metadata": {**other["metadata"], "name": "y"}}
    ]  # fmt: skip
    pods = listing(*(with_token(p) if token else p for p in pods))
    _, t2, x, y = pods
    assert x["spec"] is not t2["spec"] and y["spec"] is not t2["spec"]
    assert (
        y["spec"] is not x["spec"] or type(y["spec"]) is FrozenMap
    )  # x's seen once: y shares from its second
    tasks: list[Any] = []
    for p in pods:
        try:
            tasks.append(_fields(build_task(p, priority_classes={"high": 100})))
        except InputError as exc:
            tasks.append(str(exc))
    fresh: list[Any] = []
    for p in pods:
        try:
            decode._SPECS.clear()
            fresh.append(_fields(build_task(copy.deepcopy(p), priority_classes={"high": 100})))
        except InputError as exc:
            fresh.append(str(exc))
    assert tasks == fresh


def test_spread_and_pod_affinity_read_the_pods_own_labels_through_a_shared_spec() -> None:
    # one spec, two pods of other labels: matchLabelKeys reads "run", so their constraints differ
    _, b, c = listing(*(listed_pod(n, topologySpreadConstraints=SPREAD) for n in "abc"))
    assert b["spec"] is c["spec"]
    tb, tc = (build_task(p, priority_classes={}) for p in (b, c))
    assert tb.constraints != tc.constraints
    assert b["spec"].memo is None  # nothing kept with the spec: its parse reads more than the spec
    assert [_fields(t) for t in (tb, tc)] == [fresh_task(p) for p in (b, c)]


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.__setitem__("nodeName", "n1"),
        lambda s: s.pop("tolerations"),
        lambda s: s.update(priority=3),
        lambda s: s.setdefault("nodeSelector", {}),
        lambda s: s.clear(),
        lambda s: s.__delitem__("containers"),
        lambda s: s["containers"].append({"name": "x"}),
        lambda s: s["containers"].__setitem__(0, {}),
        lambda s: s["containers"][0]["resources"]["requests"].__setitem__("cpu", "64"),
        lambda s: s["tolerations"][0].update(key="other"),
        lambda s: s["tolerations"].sort(key=str),
    ],
)
def test_a_shared_spec_refuses_a_change_in_place_at_any_depth(change: Any) -> None:
    _, b, c = listing(*(listed_pod(n) for n in "abc"))
    before = copy.deepcopy(c["spec"])
    with pytest.raises(TypeError, match="read-only"):
        change(b["spec"])
    assert c["spec"] == before and c["spec"] is b["spec"]


def test_a_copy_of_a_shared_spec_is_plain_and_changes_alone() -> None:
    _, b, c = listing(*(listed_pod(n) for n in "abc"))
    for made in (copy.deepcopy(b["spec"]), pickle.loads(pickle.dumps(b["spec"]))):
        assert type(made) is dict and type(made["containers"]) is list and type(made["containers"][0]) is dict
        made["containers"][0]["resources"]["requests"]["cpu"] = "64"
        made["nodeName"] = "n1"
    shallow = {**b["spec"], "nodeName": "n1"}  # the feeder's and the simulator's way to change a pod
    assert type(copy.copy(b["spec"])) is dict and shallow["nodeName"] == "n1"
    assert (
        "nodeName" not in c["spec"] and c["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    )
    assert json.loads(json.dumps(b["spec"])) == b["spec"]


def test_the_table_of_specs_never_grows_with_the_cluster(monkeypatch: Any) -> None:
    monkeypatch.setattr(prune, "SHARED_SPECS_MAX", 8)
    listing(*(listed_pod(f"p{i}", priority=i) for i in range(20)))
    assert len(prune._SHARED_SPECS) <= 8
    # emptied: a template seen before it is decoded again, and shared again from its second pod
    a, b = listing(listed_pod("a", priority=1), listed_pod("b", priority=1))
    assert b["spec"] == a["spec"]


def test_after_a_page_of_specs_that_differ_the_next_pages_are_decoded_in_one_pass() -> None:
    """A service account's token volume is named at random in each pod: keying each spec apart would cost
    more than it saves. A page where fewer than a quarter of the pods found their spec listed before sends
    the next pages to the one-pass decode (the same pods), twice as many after each such page in a row,
    then one is tried again."""

    def one_pass_pages(count: int) -> None:
        """The next ``count`` pages are decoded in one pass: the same pods pruned alike, sharing the spec
        they have as pruned (a template's pods and those with a token volume, pruned away, alike)."""
        for k in range(count):
            later = listing(
                *(with_token(listed_pod(f"q{k}-{i}")) for i in range(4)), listed_pod("t1"), listed_pod("t2")
            )
            assert type(later[0]["spec"]) is FrozenMap and all(p["spec"] is later[0]["spec"] for p in later)
            assert "volumes" not in later[0]["spec"]

    first = listing(*(with_token(listed_pod(f"p{i}")) for i in range(8)))
    # no two the same JSON: the first pod's spec its own, the others' the one they have as pruned
    assert type(first[0]["spec"]) is dict and type(first[1]["spec"]) is FrozenMap
    assert all(p["spec"] is first[1]["spec"] for p in first[1:]) and first[0]["spec"] == first[1]["spec"]
    assert prune._SHARING.unshared_left == prune._SpecSharing.UNSHARED_PAGES
    one_pass_pages(prune._SpecSharing.UNSHARED_PAGES)
    listing(*(with_token(listed_pod(f"r{i}")) for i in range(8)))  # tried again: a second such page in a row
    assert prune._SHARING.unshared_left == 2 * prune._SpecSharing.UNSHARED_PAGES
    one_pass_pages(2 * prune._SpecSharing.UNSHARED_PAGES)
    # tried again: the template's first pod finds the spec it has as pruned, the others share their JSON's
    # from the second, and the count starts again
    again = listing(*(listed_pod(f"t{i}") for i in range(8)))
    assert [type(p["spec"]) for p in again] == [FrozenMap] * 8
    assert prune._SHARING.unshared_left == 0
    assert prune._SHARING.unshared_next == prune._SpecSharing.UNSHARED_PAGES
