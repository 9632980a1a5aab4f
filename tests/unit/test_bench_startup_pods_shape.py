"""bench/bench_startup.py's ``--pods-shape``: the template's pods alike to the byte; ``token``, a service
account's token volume in each pod named apart (no two specs the same JSON) and mounted in every
container, which volsched's pruning drops (what it reads is the template's); ``token-bound``, those bound to
the nodes in turn. Without a cluster: the bodies the bench would create."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_startup import SHAPES, shaped
from builders import pod_body

from volsched.kube.prune import prune_pod


def bodies(shape: str, count: int = 4, nodes: int = 3) -> list[dict[str, Any]]:
    args = argparse.Namespace(pods_shape=shape, nodes=nodes)
    return [shaped(pod_body(f"pod-{i:06d}", "volsched"), i, args) for i in range(count)]


def test_the_default_is_the_template_alike_to_the_byte() -> None:
    assert SHAPES[0] == "template"
    made = bodies("template")
    assert [json.dumps(b["spec"]) for b in made] == [json.dumps(pod_body("x", "volsched")["spec"])] * 4


@pytest.mark.parametrize("shape", ["token", "token-bound"])
def test_a_token_volume_each_named_apart_and_mounted_in_every_container(shape: str) -> None:
    made = bodies(shape)
    names = [b["spec"]["volumes"][0]["name"] for b in made]
    assert len(set(names)) == len(names)  # no two specs the same JSON
    assert names == [b["spec"]["volumes"][0]["name"] for b in bodies(shape)]  # the same at every run
    for body, name in zip(made, names, strict=True):
        spec = body["spec"]
        assert spec["serviceAccountName"] == "default"  # (the apiserver refuses a token volume without)
        sources = spec["volumes"][0]["projected"]["sources"]
        assert [next(iter(s)) for s in sources] == ["serviceAccountToken", "configMap", "downwardAPI"]
        assert [m["name"] for c in spec["containers"] for m in c["volumeMounts"]] == [name] * len(
            spec["containers"]
        )


@pytest.mark.parametrize("shape", ["token", "token-bound"])
def test_what_volsched_reads_of_a_token_pod_is_the_templates_but_for_the_node(shape: str) -> None:
    template = prune_pod(pod_body("x", "volsched"))["spec"]
    for i, body in enumerate(bodies(shape, count=5, nodes=3)):
        spec = dict(prune_pod(body)["spec"])
        node = spec.pop("nodeName", None)
        assert spec == template
        assert node == (f"node-{i % 3:05d}" if shape == "token-bound" else None)


def test_only_the_bound_shape_names_a_node() -> None:
    assert all("nodeName" not in b["spec"] for s in ("template", "token") for b in bodies(s))
    assert [b["spec"]["nodeName"] for b in bodies("token-bound", count=4, nodes=3)] == [
        "node-00000",
        "node-00001",
        "node-00002",
        "node-00000",
    ]
