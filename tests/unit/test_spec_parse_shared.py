"""Pods of one template share their spec's parse (build_task parses a spec once): each task is what a
parse of its own pod gives, whatever the pods parsed before it."""

from __future__ import annotations

import dataclasses
import datetime
import math
from typing import Any

import numpy as np
import pytest

from tests.builders import pod
from volsched.model import decode
from volsched.model.decode import build_task
from volsched.model.errors import InputError

Obj = dict[str, Any]

SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "a"}},
        "matchLabelKeys": ["run"],
    }
]
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "a"}}}
        ]
    }
}


def _fields(task: Any) -> list[Any]:
    """A task's fields, arrays as lists (a Task's == would compare them elementwise)."""
    return [
        (f.name, v.tolist() if isinstance(v := getattr(task, f.name), np.ndarray) else v)
        for f in dataclasses.fields(task)
    ]


def _fresh(obj: Obj) -> Any:
    decode._SPECS.clear()
    return build_task(obj, priority_classes={"high": 100})


@pytest.mark.parametrize(
    "pods",
    [
        # one template, bound to different nodes, pending, another priority: only the spec is shared
        [pod("a", node="n1"), pod("b", node="n2"), pod("c"), pod("d", priority_class="high")],
        # spread's matchLabelKeys read the pod's own labels: same spec, other labels, other constraints
        [pod("a", spread=SPREAD, labels={"run": "1"}), pod("b", spread=SPREAD, labels={"run": "2"})],
        # pod anti-affinity defaults to the pod's own namespace
        [pod("a", ns="x", affinity=ANTI), pod("b", ns="y", affinity=ANTI)],
        [pod("a", cpu="1"), pod("b", cpu="2"), pod("c", node_selector={"z": "1"}), pod("d", host_ports=[80])],
        [pod("a", tolerations=[{"key": "k", "operator": "Exists"}]), pod("b", claims=["data"])],
        [pod("a", gates=["wait"]), pod("b"), pod("c", scheduler="other")],
        # a pending pod's spec is keyed whole (its priority, scheduler and gates in its key), a bound
        # pod's without them: pending and bound pods of one template, in either order, one field apart
        [
            pod("a"),
            pod("b", node="n1"),
            pod("c", priority_class="high"),
            pod("d", node="n2", priority_class="high"),
            pod("e", gates=["wait"]),
            pod("f", node="n1", cpu="2"),
            pod("g", cpu="2"),
            pod("h"),
        ],
        # JSON has no NaN nor infinity (a YAML .nan, .inf): a key that wrote them as null would give
        # these pods the first one's tolerations (value "" where theirs read "nan", "inf")
        [
            pod(n, tolerations=[{"key": "k", "value": v}])
            for n, v in zip("abcd", (None, math.nan, math.inf, -math.inf), strict=True)
        ],
        # the key is searched for null only at its parse: a NaN first (not kept), then the null's kept
        # parse asked again, by a NaN after it and by a null after that
        [
            pod(n, tolerations=[{"key": "k", "value": v}])
            for n, v in zip("abcdef", (math.nan, None, None, math.inf, None, math.nan), strict=True)
        ],
    ],
    ids=[
        "nodes",
        "spread-labels",
        "anti-affinity-namespace",
        "requests-and-placement",
        "tolerations-claims",
        "gates",
        "pending-and-bound",
        "non-finite-floats",
        "non-finite-floats-around-a-kept-null",
    ],
)
def test_a_task_parsed_after_others_of_its_template_is_the_task_of_its_own_pod(pods: list[Obj]) -> None:
    want = [_fresh(p) for p in pods]
    decode._SPECS.clear()
    got = [build_task(p, priority_classes={"high": 100}) for p in pods]
    assert [_fields(t) for t in got] == [_fields(t) for t in want]


def test_a_bad_spec_is_refused_for_each_pod_naming_it() -> None:
    bad = [pod(n, node_selector={"z": 1}) for n in ("a", "b")]  # type: ignore[dict-item]
    for p in bad:
        with pytest.raises(InputError, match=f"Pod default/{p['metadata']['name']}: spec.nodeSelector"):
            build_task(p, priority_classes={})


def test_a_spec_refused_alone_is_refused_after_one_whose_json_reads_the_same() -> None:
    # A YAML date (an unquoted 2020-01-01) is no string: refused in a node selector. orjson would write
    # it as the string it looks like, and the quoted spec's parse would be taken for it.
    good = pod("a", node_selector={"z": "2020-01-01"})
    dated = pod("b", node_selector={"z": datetime.date(2020, 1, 1)})  # type: ignore[dict-item]
    decode._SPECS.clear()
    build_task(good, priority_classes={})
    with pytest.raises(InputError, match=r"Pod default/b: spec\.nodeSelector"):
        build_task(dated, priority_classes={})


def test_the_pods_of_one_template_share_its_parse_pending_or_bound() -> None:
    decode._SPECS.clear()
    pending = [
        build_task(pod(n, tolerations=[{"key": "k", "operator": "Exists"}]), priority_classes={})
        for n in "ab"
    ]
    bound = [
        build_task(
            pod(n, node=f"n{n}", tolerations=[{"key": "k", "operator": "Exists"}]), priority_classes={}
        )
        for n in "cd"
    ]
    other = build_task(pod("e", tolerations=[{"key": "k", "operator": "Equal"}]), priority_classes={})
    assert pending[0].tolerations is pending[1].tolerations
    assert bound[0].tolerations is bound[1].tolerations
    assert bound[0].tolerations == pending[0].tolerations
    assert other.tolerations != pending[0].tolerations
