"""PodDisruptionBudgets in the simulator: the Eviction API's check, played on the simulated pods.

The apiserver's eviction subresource refuses an eviction a budget does not allow, and the disruption
controller keeps each budget's status (``disruptionsAllowed``, which the engine's ``pdb`` plugin reads
to name no protected victim; a config without that plugin chooses victims without budgets). The
simulator's port plays both, with their rule (policy/v1), so a simulation ends as the cluster would:

* a pod that is not Running (Pending, Succeeded, Failed) or is being deleted is evicted without asking
  any budget;
* a pod no budget of its namespace selects is evicted; one that more than one selects is not (the
  apiserver answers 500: the eviction subresource does not support it);
* else it is evicted only while its budget allows a disruption: ``currentHealthy`` (the Running pods
  it selects, not being deleted) above ``desiredHealthy`` (``minAvailable``; or the expected pods
  minus ``maxUnavailable``; a percentage is of the expected pods, rounded up). The expected pods are
  the pods it selects that have not finished (the controller reads them from their owners' scale).
  Each eviction deletes the pod at once, so the next one sees one healthy pod fewer.

An empty selector selects every pod of the namespace; a budget without one selects none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from volsched.cycle import BLOCKED, FAILED
from volsched.model.decode import disruption_budget
from volsched.model.errors import InputError
from volsched.model.vocabulary import DisruptionBudget

#: What the apiserver answers (429) when a budget does not allow the eviction.
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."
#: What it answers (500) when more than one budget selects the pod.
MORE_THAN_ONE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)


@dataclass(frozen=True, slots=True)
class Budget:
    """A budget's spec as the Eviction API and the disruption controller read it: which pods it
    selects is the cache's own decoding (``rule``, whose ``disruptions_allowed`` is what this module
    computes, not read here); what it adds is the spec's minimum or maximum."""

    rule: DisruptionBudget
    #: ``minAvailable`` or ``maxUnavailable`` (exactly one is set): a count or a percentage ("50%").
    min_available: int | str | None = None
    max_unavailable: int | str | None = None

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def key(self) -> str:
        return self.rule.key

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return self.rule.selects(namespace, labels)

    def desired_healthy(self, expected: int) -> int:
        if self.min_available is not None:
            return _scaled(self.min_available, expected)
        assert self.max_unavailable is not None
        return max(0, expected - _scaled(self.max_unavailable, expected))


def _scaled(value: int | str, total: int) -> int:
    """A count, or a percentage of ``total`` rounded up (as Kubernetes' GetScaledValueFromIntOrPercent)."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value[:-1]) * total / 100)


def _amount(raw: Any, *, where: str) -> int | str:
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if isinstance(raw, str) and raw.endswith("%") and raw[:-1].isdigit() and int(raw[:-1]) <= 100:
        return raw
    if isinstance(raw, str) and raw.isdigit():  # an IntOrString given as a string of digits
        return int(raw)
    raise InputError(f"{where}: must be a whole number >= 0 or a percentage such as 50%, got {raw!r}")


def parse_budget(obj: Mapping[str, Any]) -> Budget:
    """A ``policy/v1`` PodDisruptionBudget. Raises :class:`InputError` naming the bad field."""
    meta = obj.get("metadata") or {}
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    where = f"PodDisruptionBudget {ns}/{name}"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: missing field spec")
    given = [k for k in ("minAvailable", "maxUnavailable") if spec.get(k) is not None]
    if len(given) != 1:
        raise InputError(f"{where}: spec needs exactly one of minAvailable and maxUnavailable")
    amount = _amount(spec[given[0]], where=f"{where}: spec.{given[0]}")
    rule = disruption_budget({**obj, "metadata": {**meta, "namespace": ns}})
    if given[0] == "minAvailable":
        return Budget(rule, min_available=amount)
    return Budget(rule, max_unavailable=amount)


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def refusal(
    pod: Mapping[str, Any], budgets: Iterable[Budget], pods: Iterable[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """How and why the Eviction API would refuse to evict ``pod`` now (None: it would evict it), given
    the cluster's ``budgets`` and ``pods`` (every pod, ``pod`` among them): ``BLOCKED`` (its 429: the
    budget allows no disruption) or ``FAILED`` (its 500: more than one budget selects the pod), and
    the apiserver's words."""
    meta = pod.get("metadata") or {}
    if _phase(pod) != "Running" or meta.get("deletionTimestamp"):
        return None
    ns = str(meta.get("namespace") or "default")
    mine = [b for b in budgets if b.selects(ns, _labels(pod))]
    if not mine:
        return None
    if len(mine) > 1:
        return FAILED, f"{MORE_THAN_ONE} ({', '.join(sorted(b.name for b in mine))})"
    (budget,) = mine
    expected, healthy = _health(budget, pods)
    desired = budget.desired_healthy(expected)
    if healthy - desired > 0:
        return None
    return (
        BLOCKED,
        f"{VIOLATES} The disruption budget {budget.name} needs {desired} healthy pods and has {healthy} currently",
    )


def _health(budget: Budget, pods: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """The pods ``budget`` expects (selected, not finished) and the healthy ones (Running, not being
    deleted), as the disruption controller counts them."""
    expected = healthy = 0
    for other in pods:
        other_meta = other.get("metadata") or {}
        if not budget.selects(str(other_meta.get("namespace") or "default"), _labels(other)):
            continue
        phase = _phase(other)
        if phase in ("Succeeded", "Failed"):
            continue
        expected += 1
        if phase == "Running" and not other_meta.get("deletionTimestamp"):
            healthy += 1
    return expected, healthy


def disruptions_allowed(budget: Budget, pods: Iterable[Mapping[str, Any]]) -> int:
    """The budget's ``status.disruptionsAllowed``, as the disruption controller keeps it."""
    expected, healthy = _health(budget, pods)
    return max(0, healthy - budget.desired_healthy(expected))
