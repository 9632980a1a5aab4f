"""A simulator's object with a field of the wrong shape is refused naming the field, never a traceback
(hunt, after a4e5cc5): a Pod whose spec, volumes' claim templates, resource claims or claim statuses
are of the wrong shape (the simulator's controllers read them before the cache did), and node selector
terms whose expressions are no list or no maps, in a pod's node affinity, a
PersistentVolume's node affinity or a ResourceSlice's node selector (only the pod's were checked; the
others raised AttributeError or TypeError where the terms were matched). The apiserver types these
fields: the operator never meets them. Found by replacing each field of the examples' objects with
wrong-shaped values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.cli import main
from volsched.model.decode import build_task, persistent_volume, resource_slice
from volsched.model.errors import InputError

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
}


@pytest.mark.parametrize("spec", ["x", ["x"], 5], ids=["str", "list", "int"])
def test_a_pod_whose_spec_is_no_map_is_refused_naming_it(
    spec: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": spec}
    path.write_text(yaml.safe_dump_all([NODE, pod]))
    assert main(["simulate", "-f", str(path)]) == 2  # before: AttributeError out of the port
    err = capsys.readouterr().err
    assert err.endswith(f"document 2: Pod default/a: spec must be a map, got {type(spec).__name__}\n"), err


def _terms(exprs: Any) -> list[Any]:
    return [{"matchExpressions": exprs}]


WRONG = [
    ({"a": 1}, "nodeSelectorTerms[0].matchExpressions: expected a list, got dict"),
    (-1, "nodeSelectorTerms[0].matchExpressions: expected a list, got int"),
    (["x"], "nodeSelectorTerms[0].matchExpressions[0] needs key and operator"),
    (
        [{"key": "k", "operator": "Near"}],
        "nodeSelectorTerms[0].matchExpressions[0].operator 'Near' is not one",
    ),
]


@pytest.mark.parametrize(("exprs", "said"), WRONG)
def test_a_persistent_volumes_node_terms_of_the_wrong_shape_are_refused_naming_them(
    exprs: Any, said: str
) -> None:
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": _terms(exprs)}},
        },
    }
    with pytest.raises(InputError) as error:
        persistent_volume(pv)
    assert str(error.value).startswith(f"PersistentVolume pv: spec.nodeAffinity.required: {said}"), (
        error.value
    )


@pytest.mark.parametrize(("exprs", "said"), WRONG)
def test_a_resource_slices_node_selector_of_the_wrong_shape_is_refused_naming_it(
    exprs: Any, said: str
) -> None:
    rs = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "nodeSelector": {"nodeSelectorTerms": _terms(exprs)},
            "devices": [{"name": "gpu-0"}],
        },
    }
    with pytest.raises(InputError) as error:
        resource_slice(rs)
    assert str(error.value).startswith(f"ResourceSlice s: spec.nodeSelector: {said}"), error.value


@pytest.mark.parametrize(("exprs", "said"), WRONG)
def test_a_pods_node_affinity_of_the_wrong_shape_is_refused_naming_the_field(exprs: Any, said: str) -> None:
    required = {"nodeSelectorTerms": _terms(exprs)}
    pod = {
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
        },
    }
    with pytest.raises(InputError) as error:
        build_task(pod, priority_classes={})
    # (before, a list of the wrong shape was said to be nodeSelectorTerms[0] itself)
    assert str(error.value).startswith(f"Pod default/a: {said}"), error.value


def _ephemeral(template: Any) -> dict[str, Any]:
    return {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}


CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"}}
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu", "namespace": "default"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
}


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("volumes", 1.5, "Pod default/a: spec.volumes: expected a list, got float"),
        (
            "volumes",
            [_ephemeral("x")],
            "Pod default/a: spec.volumes[0].ephemeral.volumeClaimTemplate must be a map, got str",
        ),
        (
            "volumes",
            [_ephemeral({"spec": True})],
            "Pod default/a: spec.volumes[0].ephemeral.volumeClaimTemplate.spec must be a map, got bool",
        ),
        (
            "volumes",
            [_ephemeral({"metadata": {"labels": "ab"}, "spec": {}})],
            "Pod default/a: spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.labels must be a map, got str",
        ),
        ("resourceClaims", [5], "Pod default/a: spec.resourceClaims[0] must be a map"),
        ("resourceClaims", 5, "Pod default/a: spec.resourceClaims: expected a list, got int"),
        (
            "status",
            {"resourceClaimStatuses": 5},
            "Pod default/a: status.resourceClaimStatuses: expected a list, got int",
        ),
    ],
)
def test_what_the_simulators_controllers_read_of_a_pod_is_refused_naming_it_when_of_the_wrong_shape(
    field: str, value: Any, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ephemeral volume controller and the claim controller read a pod as it arrives, before the
    cache: a field of theirs of the wrong shape raised TypeError, AttributeError or ValueError there."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a"},
        "spec": {"containers": [{"name": "c"}]},
    }
    if field == "status":
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        pod["status"] = value
    else:
        pod["spec"][field] = value
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([NODE, CLASS, TEMPLATE, pod]))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"document 4: {said}\n"), err
