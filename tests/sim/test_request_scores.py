"""nodeorder's least-, most-requested and balanced scores, as kube-scheduler's noderesources plugins
compute them: a container that asks no cpu or memory counts 100m and 200Mi in least- and most-requested
(never in what fits), balanced counts requests as they are and leaves a pod that asks nothing unscored,
and the resources scored and their weights are configurable, extended resources included."""

from __future__ import annotations

import json

import pytest

from tests.builders import Obj, config, node, pod, run
from volsched.framework.config import SchedulerConfig
from volsched.model.errors import InputError

GPU = "nvidia.com/gpu"


def nodeorder(**arguments: object) -> SchedulerConfig:
    return config(
        'actions: "enqueue, allocate, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, "
        f"{{name: nodeorder, arguments: {json.dumps(arguments)}}}]\n"
    )


def bare(name: str, on: str) -> Obj:
    """A bound pod that asks for nothing (its container has no requests)."""
    return pod(name, node=on, cpu=None)


def with_gpu(name: str, *, gpu: str, on: str | None = None, cpu: str = "1") -> Obj:
    p = pod(name, node=on, cpu=cpu, memory="0" if on else "1Gi")
    p["spec"]["containers"][0]["resources"]["requests"][GPU] = gpu
    return p


LEAST = {"leastrequested.weight": 1, "mostrequested.weight": 0, "balancedresource.weight": 0}
MOST = {"leastrequested.weight": 0, "mostrequested.weight": 1, "balancedresource.weight": 0}
BALANCED = {"leastrequested.weight": 0, "mostrequested.weight": 0, "balancedresource.weight": 1}

# (name, objects, nodeorder arguments (None: the defaults), where the pod named "p" goes)
CASES: list[tuple[str, list[Obj], dict[str, object] | None, str]] = [
    # Ten pods without requests on a: 1 cpu and 2000Mi as kube-scheduler counts them, not nothing.
    ("least_requested_counts_pods_without_requests", [node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi"), *(bare(f"x{i}", "a") for i in range(10)), pod("p", memory="1Gi")], None, "b"),
    ("most_requested_counts_pods_without_requests", [node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi"), *(bare(f"x{i}", "b") for i in range(10)), pod("p", memory="1Gi")], MOST, "b"),
    # The pod itself asks nothing: it counts 100m and 200Mi, which fill a's 400Mi by half.
    ("a_pod_without_requests_counts_the_defaults", [node("a", cpu="4", memory="400Mi"), node("b", cpu="4", memory="8Gi"), pod("p", cpu=None)], LEAST, "b"),
    # The defaults are for scores only: a pod of 1 cpu still fits beside ten pods counted 100m each.
    ("the_defaults_never_decide_what_fits", [node("a", cpu="1", memory="8Gi"), *(bare(f"x{i}", "a") for i in range(10)), pod("p", memory="1Gi")], None, "a"),
    # A container that asks 0 explicitly asks 0 (kube-scheduler overrides only what is unset).
    ("zero_asked_explicitly_stays_zero", [node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi"), *(pod(f"x{i}", node="a", cpu="0", memory="0") for i in range(10)), pod("p", memory="1Gi")], LEAST, "a"),
    # Balanced counts requests as they are (a's request-less pods leave it balanced, b's cpu-only pod
    # does not) and leaves unscored a pod that asks nothing (a tie, by name).
    ("balanced_counts_requests_as_they_are", [node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi"), *(bare(f"x{i}", "a") for i in range(10)), pod("y", node="b", cpu="2", memory="0"), pod("p", memory="1Gi")], BALANCED, "a"),
    ("balanced_leaves_a_pod_asking_nothing_unscored", [node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi"), pod("y", node="a", cpu="2", memory="0"), pod("p", cpu=None)], BALANCED, "a"),
    # Per-resource weights: a holds cpu, b memory; which counts decides.
    ("cpu_weight_zero_scores_memory_alone", [node("a", cpu="8", memory="32Gi"), node("b", cpu="8", memory="32Gi"), pod("y", node="a", cpu="6", memory="0"), pod("z", node="b", cpu="0", memory="16Gi"), pod("p", memory="1Gi")], {**LEAST, "nodeorder.cpu": 0}, "a"),
    ("memory_weight_zero_scores_cpu_alone", [node("a", cpu="8", memory="32Gi"), node("b", cpu="8", memory="32Gi"), pod("y", node="a", cpu="6", memory="0"), pod("z", node="b", cpu="0", memory="16Gi"), pod("p", memory="1Gi")], {**LEAST, "nodeorder.memory": 0}, "b"),
    # Extended resources: scored for a pod that asks for them once named.
    ("extended_resources_are_not_scored_unless_named", [node("a", gpu="4"), node("b", gpu="4"), with_gpu("y", gpu="3", on="a", cpu="0"), with_gpu("p", gpu="1")], LEAST, "a"),
    ("a_named_extended_resource_is_scored", [node("a", gpu="4"), node("b", gpu="4"), with_gpu("y", gpu="3", on="a", cpu="0"), with_gpu("p", gpu="1")], {**LEAST, "nodeorder.resources": GPU}, "b"),
    ("a_named_extended_resource_packs_with_most_requested", [node("a", gpu="4"), node("b", gpu="4"), with_gpu("y", gpu="3", on="b", cpu="0"), with_gpu("p", gpu="1")], {**MOST, "nodeorder.resources": GPU, f"nodeorder.resources.{GPU}": 5}, "b"),
    # A pod that asks no gpu is scored on cpu and memory alone, wherever the gpus are.
    ("an_extended_resource_not_asked_for_is_not_scored", [node("a", cpu="8", gpu="4"), node("b", cpu="8"), with_gpu("y", gpu="3", on="a", cpu="0"), pod("p", memory="1Gi")], {**LEAST, "nodeorder.resources": GPU}, "a"),
    # Three resources: balanced by their standard deviation (a: cpu, memory and gpu all a quarter full).
    ("balanced_over_three_resources", [node("a", cpu="4", memory="4Gi", gpu="4"), node("b", cpu="4", memory="4Gi", gpu="4"), with_gpu("y", gpu="2", on="b", cpu="0"), with_gpu("p", gpu="1")], {**BALANCED, "nodeorder.resources": GPU}, "a"),
]  # fmt: skip


@pytest.mark.parametrize(("objs", "arguments", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_request_scores_choose_as_kube_scheduler(
    objs: list[Obj], arguments: dict[str, object] | None, expected: str
) -> None:
    data = run(objs, conf=nodeorder(**arguments) if arguments is not None else nodeorder())
    assert data["pods"]["default/p"]["node"] == expected


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"nodeorder.resources": "cpu"}, "nodeorder.resources: cpu is not an extended resource (its weight is nodeorder.cpu)"),
        ({"nodeorder.resources": "pods"}, "nodeorder.resources: pods is not an extended resource"),
        ({"nodeorder.resources": f"{GPU}, {GPU}"}, f"nodeorder.resources: {GPU} is named twice"),
        ({"nodeorder.resources": "a b"}, "nodeorder.resources: 'a b' is no resource name"),
        ({"nodeorder.resources": ["x"]}, "nodeorder.resources: expected a comma-separated string"),
        ({f"nodeorder.resources.{GPU}": 2}, f"nodeorder.resources.{GPU} names a resource missing from nodeorder.resources"),
        ({"nodeorder.cpu": -1}, "argument nodeorder.cpu: must be >= 0"),
        ({"nodeorder.memory": "lots"}, "argument nodeorder.memory: expected a number"),
        ({"nodeorder.resources": GPU, f"nodeorder.resources.{GPU}": -2}, f"argument nodeorder.resources.{GPU}: must be >= 0"),
    ],
)  # fmt: skip
def test_bad_resource_weights_are_refused_naming_the_argument(
    arguments: dict[str, object], error: str
) -> None:
    with pytest.raises(InputError) as exc:
        nodeorder(**arguments)
    assert f"plugin nodeorder: {error}" in str(exc.value) or error in str(exc.value)
