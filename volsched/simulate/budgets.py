"""PodDisruptionBudgets in the simulator: the Eviction API's check, played on the simulated pods.

:class:`DisruptionController` plays the disruption controller (each budget's status, which the ``pdb``
plugin reads) and the eviction subresource's refusal, with the apiserver's rule (policy/v1), for the
simulator's port, so a simulation ends as the cluster would. It is not the engine's victim filter (that is ``plugins/pdb.py``). Users:
docs/simulator.md; the rule case by case: docs/design/modules.md#budgets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from volsched.cycle import BLOCKED, FAILED
from volsched.model.decode import disruption_budget, pod_ready
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.vocabulary import DisruptionBudget
from volsched.records import dataclass

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
    #: ``spec.unhealthyPodEvictionPolicy: AlwaysAllow`` (else IfHealthyBudget).
    always_allow_unhealthy: bool = False

    @property
    def scaled(self) -> bool:
        """Whether the expected pods come from the controllers' scale (maxUnavailable, or a percentage)."""
        return self.min_available is None or isinstance(self.min_available, str)

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def key(self) -> str:
        return self.rule.key

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return self.rule.selects(namespace, labels)

    def desired_healthy(self, expected: int) -> int:
        """``desiredHealthy`` given the expected pods (see :attr:`scaled`)."""
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
    if isinstance(raw, str) and raw.isdigit():  # the apiserver refuses it: a string must be a percentage
        raise InputError(
            f"{where}: a string must be a percentage such as 50% (the apiserver refuses {raw!r});"
            f" for a count, write the number without quotes: {int(raw)}"
        )
    raise InputError(f"{where}: must be a whole number >= 0 or a percentage such as 50%, got {raw!r}")


def parse_budget(obj: Mapping[str, Any]) -> Budget:
    """A ``policy/v1`` PodDisruptionBudget. Raises :class:`InputError` naming the bad field."""
    meta = meta_of(obj)
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    where = f"PodDisruptionBudget {ns}/{name}"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: missing field spec")
    given = [k for k in ("minAvailable", "maxUnavailable") if spec.get(k) is not None]
    if len(given) != 1:
        raise InputError(f"{where}: spec needs exactly one of minAvailable and maxUnavailable")
    amount = _amount(spec[given[0]], where=f"{where}: spec.{given[0]}")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy not in (None, "IfHealthyBudget", "AlwaysAllow"):
        raise InputError(
            f"{where}: spec.unhealthyPodEvictionPolicy: must be IfHealthyBudget or AlwaysAllow, got {policy!r}"
        )
    rule = disruption_budget({**obj, "metadata": {**meta, "namespace": ns}})
    always = policy == "AlwaysAllow"
    if given[0] == "minAvailable":
        return Budget(rule, min_available=amount, always_allow_unhealthy=always)
    return Budget(rule, max_unavailable=amount, always_allow_unhealthy=always)


#: Controllers with a scale subresource the disruption controller reads (Kubernetes' own finders).
SCALED_KINDS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController", "Deployment"})
#: A controller: (namespace, kind, name).
Owner = tuple[str, str, str]


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return meta_of(pod).get("labels") or {}


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def controller_of(pod: Mapping[str, Any]) -> Owner | None:
    """The pod's controller (its ownerReference with ``controller: true``), or None."""
    meta = meta_of(pod)
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return (
                str(meta.get("namespace") or "default"),
                str(ref.get("kind") or ""),
                str(ref.get("name") or ""),
            )
    return None


def observe_scales(pods: Iterable[Mapping[str, Any]], scales: dict[Owner, int]) -> None:
    """Raise each scaled controller's replicas in ``scales`` to its pods now, not finished nor being
    deleted (the simulator holds no ReplicaSet: its replicas are the most pods of it seen; nothing
    scales down, and a pod being deleted is one its controller replaces)."""
    now: dict[Owner, int] = {}
    for pod in pods:
        owner = controller_of(pod)
        gone = _phase(pod) in ("Succeeded", "Failed") or meta_of(pod).get("deletionTimestamp")
        if owner is not None and owner[1] in SCALED_KINDS and not gone:
            now[owner] = now.get(owner, 0) + 1
    for owner, n in now.items():
        if n > scales.get(owner, 0):
            scales[owner] = n


@dataclass(frozen=True, slots=True)
class Health:
    """A budget's status as the disruption controller computes it; ``unscaled`` names the controller
    without a scale subresource that made it fail safe (then nothing is allowed)."""

    expected: int
    healthy: int
    desired: int
    unscaled: str | None = None

    @property
    def allowed(self) -> int:
        """``disruptionsAllowed``: none while no pod is expected (the controller's guard for a budget
        whose first pods it has not counted yet)."""
        return 0 if self.unscaled or self.expected <= 0 else max(0, self.healthy - self.desired)


def health(budget: Budget, pods: Iterable[Mapping[str, Any]], scales: Mapping[Owner, int]) -> Health:
    """The budget's expected, healthy (Running and ready, not being deleted) and desired healthy pods."""
    count = healthy = 0
    controllers: set[Owner] = set()
    unscaled: str | None = None
    for pod in pods:
        meta = meta_of(pod)
        if not budget.selects(str(meta.get("namespace") or "default"), _labels(pod)):
            continue
        count += 1
        if _phase(pod) == "Running" and not meta.get("deletionTimestamp") and pod_ready(pod):
            healthy += 1
        owner = controller_of(pod)
        if owner is None:
            continue  # unmanaged: left out of the expected pods
        if owner[1] in SCALED_KINDS:
            controllers.add(owner)
        elif unscaled is None:
            unscaled = f"{owner[1]} {owner[0]}/{owner[2]}"
    if not budget.scaled:
        return Health(count, healthy, budget.desired_healthy(count))
    expected = sum(scales.get(c, 0) for c in controllers)
    return Health(expected, healthy, budget.desired_healthy(expected), unscaled)


def refusal(
    pod: Mapping[str, Any],
    budgets: Iterable[Budget],
    pods: Iterable[Mapping[str, Any]],
    scales: Mapping[Owner, int],
) -> tuple[str, str] | None:
    """How and why the Eviction API would refuse to evict ``pod`` now (None: it would evict it), given
    the cluster's ``budgets`` and ``pods`` (every pod, ``pod`` among them) and the controllers' scale:
    ``BLOCKED`` (its 429: the budget allows no disruption) or ``FAILED`` (its 500: more than one budget
    selects the pod), and the apiserver's words."""
    meta = meta_of(pod)
    if _phase(pod) != "Running" or meta.get("deletionTimestamp"):
        return None
    ns = str(meta.get("namespace") or "default")
    mine = [b for b in budgets if b.selects(ns, _labels(pod))]
    if not mine:
        return None
    if len(mine) > 1:
        return FAILED, f"{MORE_THAN_ONE} ({', '.join(sorted(b.name for b in mine))})"
    (budget,) = mine
    status = health(budget, pods, scales)
    if not pod_ready(pod):
        if budget.always_allow_unhealthy:
            return None
        if not status.unscaled and status.desired > 0 and status.healthy >= status.desired:
            return None
    if status.allowed > 0:
        return None
    if status.unscaled:
        why = (
            f"The disruption budget {budget.name} allows no disruption: its pods' controller {status.unscaled}"
            " has no scale subresource, so the disruption controller cannot count the expected pods"
            " (use an integer minAvailable)"
        )
        return BLOCKED, f"{VIOLATES} {why}"
    return (
        BLOCKED,
        f"{VIOLATES} The disruption budget {budget.name} needs {status.desired} healthy pods"
        f" and has {status.healthy} currently",
    )


class DisruptionController:
    """The budgets the Eviction API enforces, and the disruption controller's part: each budget's status
    from the pods, put (through the simulated apiserver's ``put``) where it changed."""

    def __init__(self, put: Callable[[Mapping[str, Any]], None]) -> None:
        self._put = put
        #: The budgets ("ns/name" -> budget), as loaded.
        self.budgets: dict[str, Budget] = {}
        self._objects: dict[str, Mapping[str, Any]] = {}
        #: The status the cache was last told for each budget (see :meth:`sync`).
        self.told: dict[str, Mapping[str, Any]] = {}
        #: The replicas of the pods' controllers, as the disruption controller reads their scale.
        self._scales: dict[Owner, int] = {}

    def add(self, obj: Mapping[str, Any]) -> None:
        """A PodDisruptionBudget (raises :class:`InputError` naming a bad field): the Eviction API
        enforces it; the cache gets it with its status at the next :meth:`sync`."""
        budget = parse_budget(obj)
        key = budget.key
        self.budgets[key] = budget
        self._objects[key] = obj
        self.told.pop(key, None)

    def sync(self, pods: Collection[Mapping[str, Any]]) -> None:
        """Every budget's status (``disruptionsAllowed``, ``currentHealthy``, ``desiredHealthy``,
        ``expectedPods``) from ``pods`` (every pod now), put where it changed (as the watch would deliver
        the status update)."""
        observe_scales(pods, self._scales)  # with no budget too: one made later reads what was seen
        if not self.budgets:
            return
        for key, budget in self.budgets.items():
            h = health(budget, pods, self._scales)
            status: dict[str, Any] = {
                "disruptionsAllowed": h.allowed,
                "currentHealthy": h.healthy,
                "desiredHealthy": h.desired,
                "expectedPods": h.expected,
                "observedGeneration": 1,
            }
            if self.told.get(key) == status:
                continue
            self.told[key] = status
            obj = self._objects[key]
            meta = {**meta_of(obj), "generation": 1}
            self._put({**obj, "metadata": meta, "status": status})

    def refusal(self, pod: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
        """How and why the Eviction API would refuse to evict ``pod`` now (:func:`refusal`; None: no
        budget, or it would evict it)."""
        return refusal(pod, self.budgets.values(), pods, self._scales) if self.budgets else None
