"""A decided bind's ResourceClaims are assumed in the cache, as the bind is: the next session never
gives their devices again before the API shows the allocation, and a bind that fails gives them back."""

from __future__ import annotations

from tests.builders import Obj, claiming, device_class, gpu, node, resource_claim, resource_slice
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.cycle import FAILED, run_cycle

GPU = device_class("gpu.example.com", 'device.driver == "gpu.example.com"')


def objects() -> list[Obj]:
    return [
        node("n1"),
        GPU,
        resource_slice("n1-gpus", [gpu("gpu-0")], node="n1"),
        resource_claim("a"),
        resource_claim("b"),
        claiming("p", "a", created="2024-01-01T00:00:00Z"),
    ]


def test_the_next_session_does_not_give_an_assumed_claims_devices_again() -> None:
    feeder = cache(*objects())
    port = FakePort()  # binds succeed; nothing reaches the claims (no watch event yet)
    run_cycle(feeder, CONFIG, port, now=0.0)
    assert port.bound == {"default/p": "n1"}
    claim = feeder.state.resource_claims["default/a"]
    assert claim.allocation is not None and claim.reserved_for == ("uid-p",)
    q = claiming("q", "b", created="2024-01-01T00:00:01Z")
    q["metadata"].update(resourceVersion="50", uid="uid-q")
    feeder.apply("Pod", q)
    run_cycle(feeder, CONFIG, port, now=1.0)
    assert "default/q" not in port.bound  # the one GPU is a's, though the API does not say so yet


def test_a_failed_bind_gives_the_claims_devices_back() -> None:
    feeder = cache(*objects())
    port = FakePort({"default/p": [FAILED]})
    run_cycle(feeder, CONFIG, port, now=0.0)
    assert port.bound == {}
    assert feeder.state.resource_claims["default/a"].allocation is None
    run_cycle(feeder, CONFIG, port, now=1.0)
    assert port.bound == {"default/p": "n1"}
