"""What a pod says about the pods around it, as types: label selectors, (anti-)affinity terms, topology
spread constraints and a pod's :class:`PodConstraints`, each able to say whether a pod's labels match it.

Plain data below the vocabulary (a Task carries its PodConstraints). Reading them from a pod spec is
:mod:`volsched.model.constraintdecode`; counting matching pods per node and domain is
:mod:`volsched.model.constraints`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from volsched.records import dataclass

# --- label selectors --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a label selector: ``key`` ``op`` ``values``."""

    key: str
    op: str  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        return self.key not in labels

    def describe(self) -> str:
        if self.op == "In":
            return (
                f"{self.key}={self.values[0]}"
                if len(self.values) == 1
                else f"{self.key} in ({','.join(self.values)})"
            )
        if self.op == "NotIn":
            return (
                f"{self.key}!={self.values[0]}"
                if len(self.values) == 1
                else f"{self.key} notin ({','.join(self.values)})"
            )
        return self.key if self.op == "Exists" else f"!{self.key}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Kubernetes label selector; no requirements matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def index_pairs(self) -> tuple[tuple[str, str], ...] | None:
        """Label pairs of which every matching object carries one (from the first ``In``), or None."""
        for r in self.requirements:
            if r.op == "In":
                return tuple((r.key, v) for v in r.values)
        return None

    def describe(self) -> str:
        return ",".join(r.describe() for r in self.requirements) or "all pods"

    def merged(self, extra: Iterable[Requirement]) -> LabelSelector:
        return LabelSelector(tuple(sorted({*self.requirements, *extra}, key=requirement_order)))


def requirement_order(r: Requirement) -> tuple[str, str, tuple[str, ...]]:
    return (r.key, r.op, r.values)


# --- terms and constraints --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term, resolved against the pod that carries it."""

    selector: LabelSelector | None
    topology_key: str
    #: Namespaces named by the term (the owner's own when it names none and has no namespaceSelector).
    namespaces: frozenset[str] = frozenset()
    #: None: only ``namespaces``; no requirements: every namespace.
    namespace_selector: LabelSelector | None = None

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, Mapping[str, str]]
    ) -> bool:
        if self.selector is None:
            return False
        if namespace not in self.namespaces and (
            self.namespace_selector is None
            or not self.namespace_selector.matches(namespace_labels.get(namespace, {}))
        ):
            return False
        return self.selector.matches(labels)

    def describe(self) -> str:
        what = self.selector.describe() if self.selector is not None else "no pods"
        return f"{what}, {self.topology_key}"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One of a pod's topologySpreadConstraints, as the filter and the score read it."""

    max_skew: int
    topology_key: str
    #: whenUnsatisfiable DoNotSchedule (a filter); else ScheduleAnyway (a score).
    hard: bool
    selector: LabelSelector | None
    namespace: str
    min_domains: int | None = None
    #: nodeAffinityPolicy Honor (default): count only nodes the pod's node selector/affinity accept.
    honor_node_affinity: bool = True
    #: nodeTaintsPolicy Honor: count only nodes whose taints the pod tolerates (default Ignore).
    honor_taints: bool = False

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return namespace == self.namespace and self.selector is not None and self.selector.matches(labels)

    def describe(self) -> str:
        what = self.selector.describe() if self.selector is not None else "no pods"
        return f"{what}, {self.topology_key}"


@dataclass(frozen=True, slots=True)
class PodConstraints:
    """What one pod says about the pods around it."""

    affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    #: Preferred terms with signed weights: + for affinity, - for anti-affinity.
    preferred: tuple[tuple[AffinityTerm, int], ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.preferred or self.spread)
