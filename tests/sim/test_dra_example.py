"""examples/dra-gpus.yaml: a GPU fleet claimed through Dynamic Resource Allocation, as `volsched simulate`
runs it (the what-if docs/dra.md shows)."""

from __future__ import annotations

from pathlib import Path

from volsched.simulate import Simulator, load_documents, to_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-gpus.yaml"


def test_the_gang_takes_the_a100s_and_serving_the_t4s() -> None:
    result = Simulator(load_documents([str(EXAMPLE)])).run(20)
    data = to_json(result)
    where = {k: v["node"] for k, v in data["pods"].items()}
    assert {where[f"research/train-{i}"] for i in range(4)} == {"a100-0", "a100-1"}
    assert all(where[f"serving/infer-{i}"] in ("t4-0", "t4-1") for i in range(3))
    devices = [
        (r.pool, r.device)
        for c in result.state.resource_claims.values()
        if c.allocation is not None
        for r in c.allocation.results
    ]
    assert len(devices) == 7 == len(set(devices))
    assert data["queues"]["research"]["allocated"]["devices/gpu.example.com"] == 4
