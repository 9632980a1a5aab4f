"""Helpers shared by the reclaim, preempt and guarantee tests: staged simulation (a cluster settles,
then new objects appear) with the example config that enables reclaim and preempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.builders import batch_job, podgroup
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import SessionResult
from volsched.framework.messages import DELETED
from volsched.framework.registry import load_config
from volsched.simulate import Document, SimulationResult, Simulator, to_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
Obj = dict[str, Any]


def eviction_config(*, overcommit_factor: float | None = None) -> SchedulerConfig:
    text = (EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text()
    if overcommit_factor is not None:
        text = text.replace(
            "  - name: overcommit\n",
            f"  - name: overcommit\n    arguments: {{overcommit-factor: {overcommit_factor}}}\n",
        )
    return load_config(text=text)


#: Volcano's usual layout, as users bring it: the victim-naming plugins split over two tiers (priority,
#: gang, conformance first; drf, proportion in the second). Every answering plugin counts, in every tier.
VOLCANO_TWO_TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def volcano_two_tier_config(
    actions: str = "enqueue, allocate, reclaim, preempt, backfill",
) -> SchedulerConfig:
    return load_config(text=f'actions: "{actions}"\n{VOLCANO_TWO_TIERS}')


def job(
    name: str,
    *,
    ns: str,
    queue: str,
    size: int,
    min_member: int = 1,
    cpu: str = "1",
    gpu: str | None = None,
    priority_class: str | None = None,
    preemption_policy: str | None = None,
    preemptable: bool | None = None,
) -> list[Obj]:
    """A PodGroup and the batch/v1 Job feeding it (the simulator replaces evicted pods)."""
    group = podgroup(name, ns=ns, queue=queue, min_member=min_member, priority_class=priority_class)
    batch = batch_job(name, ns=ns, parallelism=size, group=name, cpu=cpu, gpu=gpu)
    template = batch["spec"]["template"]
    if preemption_policy:
        template["spec"]["preemptionPolicy"] = preemption_policy
    if preemptable is not None:
        template["metadata"]["annotations"]["scheduling.volsched.io/preemptable"] = str(preemptable).lower()
    return [group, batch]


class Staged:
    """Run ``before`` to a steady state, then add ``after`` and run to a steady state again."""

    def __init__(
        self, before: list[Obj], after: list[Obj], conf: SchedulerConfig, sessions: int = 60
    ) -> None:
        self.sim = Simulator([Document(f"before {i}", o) for i, o in enumerate(before)], conf)
        self.first = self.sim.run(sessions)
        self.first_data = to_json(self.first)
        self.sim.add([Document(f"after {i}", o) for i, o in enumerate(after)])
        self.second: SimulationResult = self.sim.run(sessions)
        self.data = to_json(self.second)

    @property
    def history(self) -> list[SessionResult]:
        return self.second.history

    def running(self, prefix: str, *, before: bool = False) -> int:
        data = self.first_data if before else self.data
        return sum(1 for k, v in data["pods"].items() if v["node"] and k.startswith(prefix))

    def held(self, queue: str, resource: str = "cpu") -> float:
        return float((self.data["queues"][queue]["allocated"] or {}).get(resource, 0))

    def deserved(self, queue: str, resource: str = "cpu") -> float:
        return float((self.data["queues"][queue]["deserved"] or {}).get(resource, 0))

    def evicted(self, prefix: str = "") -> list[str]:
        """The pods evicted through the Eviction API (not those it refused to evict, nor those deleted
        past their disruption budget: :meth:`deleted`)."""
        return [
            e["pod"]
            for e in self.data["evictions"]
            if e["pod"].startswith(prefix) and e["result"] == "evicted" and e["detail"] != DELETED
        ]

    def deleted(self, prefix: str = "") -> list[str]:
        """The victims reclaim or preempt took past their disruption budget (deleted, not evicted)."""
        return [
            e["pod"]
            for e in self.data["evictions"]
            if e["pod"].startswith(prefix) and e["result"] == "evicted" and e["detail"] == DELETED
        ]

    def refused(self) -> list[dict[str, Any]]:
        """The evictions the Eviction API refused (a PodDisruptionBudget)."""
        return [e for e in self.data["evictions"] if e["result"] != "evicted"]

    def settled(self) -> bool:
        """The run stopped because a session changed nothing (not because it ran out of sessions)."""
        return not self.history[-1].changed

    def stays_settled(self, sessions: int = 20) -> bool:
        for _ in range(sessions):
            result, changed = self.sim.step()
            if changed or result.binds or result.evictions:
                return False
        return True
