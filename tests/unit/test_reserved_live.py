"""Which pods the allocated ResourceClaims are reserved for are still in a snapshot: the snapshot builder
says it by uid (``ClusterSnapshot.reserved_live``), the same as ``pod_uids`` walking every pod of the
snapshot would (what the session asked before, each session, in a cluster using DRA). A random walk of
pods arriving, bound, finished, deleted and made again, strays of a PodGroup deleted and made again,
pods another scheduler runs and one the cache refuses, and claims reserved for some of them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.builders import Obj, node, pod, podgroup, resource_claim
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.framework.session import pod_uids

BAD = {"scheduling.volsched.io/expected-runtime": "a while"}  # a pod the cache refuses


class Walk:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.feeder = Feeder(ClusterState(), assume_ttl=30)
        self.rv = 0
        self.made = 0
        self.pods: dict[str, Obj] = {}  # name -> the pod as last applied
        self.uids: list[str] = ["uid-never-seen"]  # every uid a pod had (claims reserve some of them)
        for i in range(3):
            self.apply(node(f"n{i}", cpu="64"))

    def apply(self, obj: Obj) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.feeder.apply(obj["kind"], obj)

    def new_pod(self) -> None:
        rng = self.rng
        name = f"p{rng.randrange(12)}"
        self.made += 1
        kwargs: dict[str, Any] = {"cpu": "1"}
        if rng.random() < 0.4:
            kwargs["group"] = f"g{rng.randrange(3)}"
        if rng.random() < 0.5:
            kwargs["node"] = f"n{rng.randrange(3)}"
            kwargs["phase"] = rng.choice(["Running", "Running", "Succeeded", "Failed"])
        if rng.random() < 0.2:
            kwargs["scheduler"] = "default-scheduler"
        if rng.random() < 0.1:
            kwargs["annotations"] = BAD
        obj = pod(name, **kwargs)
        obj["metadata"]["uid"] = uid = f"uid-{name}-{self.made}"
        self.uids.append(uid)
        self.pods[name] = obj
        self.apply(obj)

    def step(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.45 or not self.pods:
            self.new_pod()
        elif roll < 0.6:  # bound, or ended
            name = rng.choice(sorted(self.pods))
            obj = self.pods[name]
            obj["spec"]["nodeName"] = obj["spec"].get("nodeName") or f"n{rng.randrange(3)}"
            obj["status"] = {"phase": rng.choice(["Running", "Succeeded"])}
            self.apply(obj)
        elif roll < 0.72:
            name = rng.choice(sorted(self.pods))
            self.rv += 1
            obj = self.pods.pop(name)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.feeder.delete("Pod", obj)
        elif roll < 0.84:  # a PodGroup made, or deleted (its pods on a node become strays)
            group = podgroup(f"g{rng.randrange(3)}", min_member=1)
            if rng.random() < 0.5:
                self.apply(group)
            else:
                self.rv += 1
                group["metadata"]["resourceVersion"] = str(self.rv)
                self.feeder.delete("PodGroup", group)
        else:  # a claim allocated and reserved for some pods (of any time), or not reserved
            claim = resource_claim(f"c{rng.randrange(6)}", allocated=[("n0", "gpu-0")])
            reserved = rng.sample(self.uids, k=min(len(self.uids), rng.randrange(3)))
            claim.setdefault("status", {})["reservedFor"] = [
                {"resource": "pods", "name": "x", "uid": uid} for uid in reserved
            ]
            if rng.random() < 0.2:
                del claim["status"]["allocation"]
            self.apply(claim)

    def check(self) -> None:
        snap = self.feeder.state.snapshot(now=1000.0 + self.rv)
        wanted = {
            u for c in snap.resource_claims.values() if c.allocation is not None for u in c.reserved_for
        }
        if not snap.resource_claims:
            assert snap.reserved_live is None
            return
        assert snap.reserved_live == frozenset(pod_uids(snap) & wanted)


@pytest.mark.parametrize("seed", range(12))
def test_the_builder_finds_the_reserved_pods_a_walk_over_every_pod_finds(seed: int) -> None:
    walk = Walk(seed)
    for _ in range(150):
        for _ in range(walk.rng.randrange(1, 4)):
            walk.step()
        walk.check()
