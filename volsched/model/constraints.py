"""Where a pod may run given the other pods: inter-pod affinity and anti-affinity, topology spread,
counted per node and per topology domain. Pure logic (no session, no I/O), so the scheduler's plugins and
the descheduler's strategies share it.

* **counting** (:class:`ConstraintState`): how many pods matching a selector each node and each topology
  domain holds, as numpy arrays, updated one pod at a time by :meth:`ConstraintState.add` and
  :meth:`ConstraintState.remove`. A counter is made the first time a selector is asked about (one pass over
  the placed pods, narrowed by a label index) and kept current from then on, so a placement costs a few
  counter increments. Existing pods' anti-affinity terms (which repel new pods: the rule is symmetric)
  and preferred terms are kept as per-domain counts of their owners the same way.
* **node masks** for a task (:func:`node_placement_masks`), from :mod:`volsched.model.nodeterms`.

Not here: the selector and term types (:mod:`volsched.model.selectors`), reading them from a pod spec
(:mod:`volsched.model.constraintdecode`), node-level matching (:mod:`volsched.model.nodeterms`).

Topology domains: for a key, :meth:`Topology.domains` numbers the distinct label values; nodes without
the label get the extra index ``D`` (one past the last domain), whose count is always 0, so
``counts[node_domain]`` is a single gather over all nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.nodeterms import (
    HARD_EFFECTS,
    UNSCHEDULABLE_TAINT,
    matches_affinity,
    matches_node_selector,
    tolerates,
)
from volsched.model.selectors import AffinityTerm, SpreadConstraint
from volsched.model.vocabulary import NodeSpec, Task
from volsched.records import dataclass

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]

HOSTNAME = "kubernetes.io/hostname"


def node_placement_masks(specs: Sequence[NodeSpec], task: Task) -> tuple[BoolArray, BoolArray]:
    """(node selector and required node affinity accepted, NoSchedule/NoExecute taints tolerated)."""
    n = len(specs)
    if task.node_selector or task.affinity_terms:
        sel = task.node_selector
        affinity = np.fromiter(
            (matches_node_selector(s, sel) and matches_affinity(s, task.affinity_terms) for s in specs),
            dtype=bool,
            count=n,
        )
    else:
        affinity = np.ones(n, dtype=bool)
    taints = np.fromiter(
        (
            all(tolerates(task.tolerations, t) for t in s.taints if t[2] in HARD_EFFECTS)
            and (not s.unschedulable or tolerates(task.tolerations, UNSCHEDULABLE_TAINT))
            for s in specs
        ),
        dtype=bool,
        count=n,
    )
    return affinity, taints


# --- topology -----------------------------------------------------------------------------------------------


class Topology:
    """Node -> topology domain index, per label key, for one ordered list of nodes."""

    def __init__(
        self, specs: Sequence[NodeSpec], *, extra: Sequence[Mapping[str, str]] | None = None
    ) -> None:
        """``extra``: per node, more labels (the attributes its devices share), below its own."""
        self.specs = specs
        self.extra = extra
        self._keys: dict[str, tuple[IntArray, list[str]]] = {}

    def domains(self, key: str) -> tuple[IntArray, list[str]]:
        """(domain index of each node, domain values); nodes without the label get ``len(values)``."""
        hit = self._keys.get(key)
        if hit is None:
            values: dict[str, int] = {}
            raw = [s.labels.get(key) for s in self.specs]
            if self.extra is not None:
                raw = [v if v is not None else more.get(key) for v, more in zip(raw, self.extra, strict=True)]
            for v in raw:
                if v is not None and v not in values:
                    values[v] = len(values)
            missing = len(values)
            dom = np.fromiter(
                (missing if v is None else values[v] for v in raw), dtype=np.intp, count=len(raw)
            )
            hit = (dom, list(values))
            self._keys[key] = hit
        return hit


# --- counting -----------------------------------------------------------------------------------------------

Matcher = Callable[[str, Mapping[str, str]], bool]


class PodCounter:
    """Pods matching one predicate, per node and (for the keys asked) per topology domain."""

    def __init__(self, match: Matcher, n_nodes: int, topology: Topology) -> None:
        self.match = match
        self.topology = topology
        self.node_counts: FloatArray = np.zeros(n_nodes)
        self._domains: dict[str, tuple[IntArray, FloatArray]] = {}

    def domain_counts(self, key: str) -> tuple[IntArray, FloatArray]:
        """(node -> domain, matching pods per domain with a trailing 0 for nodes without the label)."""
        hit = self._domains.get(key)
        if hit is None:
            dom, values = self.topology.domains(key)
            counts = np.bincount(dom, weights=self.node_counts, minlength=len(values) + 1).astype(np.float64)
            counts[len(values)] = 0.0
            hit = (dom, counts)
            self._domains[key] = hit
        return hit

    def update(self, node: int, delta: float) -> None:
        self.node_counts[node] += delta
        for dom, counts in self._domains.values():
            d = dom[node]
            if d < len(counts) - 1:
                counts[d] += delta


#: How :meth:`ConstraintState.check`'s reasons begin, each followed by `` (`` and the term it quotes: those
#: that quote the pod's own terms, and the placed pods' anti-affinity that repels it.
POD_AFFINITY = "pod affinity"
POD_ANTI_AFFINITY = "pod anti-affinity"
POD_SPREAD = "pod topology spread"
OWN_TERMS = (POD_AFFINITY, POD_ANTI_AFFINITY, POD_SPREAD)
PLACED_ANTI_AFFINITY = "existing pods' anti-affinity"


@dataclass
class _TermGroup:
    """Placed pods carrying one (anti-)affinity term: per-domain weight of their owners."""

    term: AffinityTerm
    dom: IntArray
    counts: FloatArray
    #: the same weight per node (what the domain's count owes to each node's own pods)
    node_counts: FloatArray
    owners: int = 0

    def add(self, node: int, owners: float, weight: float = 1.0) -> None:
        """``owners`` (+1 or -1) pods carrying the term came to or left ``node``."""
        d = self.dom[node]
        if d < len(self.counts) - 1:
            self.counts[d] += owners * weight
        self.node_counts[node] += owners * weight
        self.owners += int(owners)


@dataclass
class ConstraintCheck:
    """A filter's verdict over all nodes, and each failing part with its reason (for "why pending")."""

    mask: BoolArray
    parts: list[tuple[Callable[[IntArray], list[tuple[str, int]]], BoolArray]] = field(default_factory=list)

    def explain(self, idx: IntArray) -> list[tuple[str, int]]:
        """Reasons for the nodes ``idx``, each node counted once, by the first part that rejects it."""
        out: list[tuple[str, int]] = []
        for describe, ok in self.parts:
            failing = ~ok[idx]
            bad = idx[failing]
            if len(bad):
                out.extend(describe(bad))
                idx = idx[~failing]
        return out


class ConstraintState:
    """Placed pods as counts per node and topology domain, for the constraints asked about so far.

    ``nodes`` fixes the node order (index i is ``nodes[i]``). Callers add every placed pod with
    :meth:`add` and keep the state current with :meth:`add`/:meth:`remove` as pods come and go; a
    pod is counted once however often it is added."""

    def __init__(self, nodes: Sequence[NodeSpec], namespace_labels: Mapping[str, Mapping[str, str]]) -> None:
        self.nodes = nodes
        self.n = len(nodes)
        self.namespace_labels = namespace_labels
        self.topology = Topology(nodes)
        self._where: dict[str, tuple[Task, int]] = {}
        self._by_pair: dict[tuple[str, str], dict[str, None]] = {}
        self._counters: dict[Hashable, PodCounter] = {}
        self._counters_by_pair: dict[tuple[str, str], list[PodCounter]] = {}
        self._counters_any: list[PodCounter] = []
        #: ("anti" | "score", term) -> owners of the term placed per domain
        self._groups: dict[tuple[str, AffinityTerm], _TermGroup] = {}
        self._groups_by_pair: dict[tuple[str, str], list[tuple[str, _TermGroup]]] = {}
        self._groups_any: list[tuple[str, _TermGroup]] = []
        self._node_masks: dict[str, tuple[BoolArray, BoolArray]] = {}
        self._spread_cache: dict[tuple[Any, ...], tuple[BoolArray, BoolArray, bool]] = {}

    # --- pods coming and going -----------------------------------------------------------------------

    def add(self, task: Task, node: int) -> None:
        key = task.key
        if key in self._where:
            return
        self._where[key] = (task, node)
        for pair in task.labels.items():
            self._by_pair.setdefault(pair, {})[key] = None
        self._count(task, node, 1.0)

    def remove(self, task: Task) -> None:
        hit = self._where.pop(task.key, None)
        if hit is None:
            return
        _, node = hit
        for pair in task.labels.items():
            pods = self._by_pair.get(pair)
            if pods is not None:
                pods.pop(task.key, None)
        self._count(task, node, -1.0)

    def node_of(self, task: Task) -> int | None:
        hit = self._where.get(task.key)
        return None if hit is None else hit[1]

    def placed(self) -> Iterable[tuple[Task, int]]:
        return self._where.values()

    def _count(self, task: Task, node: int, delta: float) -> None:
        ns, labels = task.namespace, task.labels
        if self._counters:
            for counter in self._candidates(self._counters_by_pair, self._counters_any, labels):
                if counter.match(ns, labels):
                    counter.update(node, delta)
        c = task.constraints
        if c is None:
            return
        for term in c.anti_affinity:
            self._group("anti", term).add(node, delta)
        for term in c.affinity:  # an existing pod's required affinity attracts (hardPodAffinityWeight 1)
            self._group("score", term).add(node, delta)
        for term, weight in c.preferred:
            self._group("score", term).add(node, delta, weight)

    @staticmethod
    def _candidates(
        by_pair: Mapping[tuple[str, str], list[Any]], rest: list[Any], labels: Mapping[str, str]
    ) -> list[Any]:
        """``rest`` and what ``by_pair`` holds under the labels' pairs (``rest`` itself when that is
        nothing: the common case costs no list)."""
        out: list[Any] | None = None
        for pair in labels.items():
            hit = by_pair.get(pair)
            if hit:
                if out is None:
                    out = list(rest)
                out.extend(hit)
        return rest if out is None else out

    def _group(self, kind: str, term: AffinityTerm) -> _TermGroup:
        g = self._groups.get((kind, term))
        if g is None:
            dom, values = self.topology.domains(term.topology_key)
            g = _TermGroup(term, dom, np.zeros(len(values) + 1), np.zeros(self.n))
            self._groups[(kind, term)] = g
            pairs = term.selector.index_pairs() if term.selector is not None else None
            if term.selector is None:
                pass  # matches no pod: never consulted
            elif pairs is None:
                self._groups_any.append((kind, g))
            else:
                for pair in pairs:
                    self._groups_by_pair.setdefault(pair, []).append((kind, g))
        return g

    # --- counters ----------------------------------------------------------------------------------------

    def counter(self, key: Hashable, match: Matcher, index: tuple[tuple[str, str], ...] | None) -> PodCounter:
        """The counter named ``key`` (made on first use from the pods placed now). ``index``: label pairs
        of which every pod ``match`` accepts carries one (None: any pod may match)."""
        counter = self._counters.get(key)
        if counter is not None:
            return counter
        counter = PodCounter(match, self.n, self.topology)
        if index is None:
            pods: Iterable[tuple[Task, int]] = self._where.values()
            self._counters_any.append(counter)
        else:
            keys: dict[str, None] = {}
            for pair in index:
                keys.update(self._by_pair.get(pair, {}))
                self._counters_by_pair.setdefault(pair, []).append(counter)
            pods = (self._where[k] for k in keys)
        for task, node in pods:
            if match(task.namespace, task.labels):
                counter.node_counts[node] += 1.0
        self._counters[key] = counter
        return counter

    def term_counter(self, terms: tuple[AffinityTerm, ...]) -> PodCounter:
        """Pods matching every term of ``terms`` (namespaces included)."""
        nsl = self.namespace_labels

        def match(ns: str, labels: Mapping[str, str]) -> bool:
            return all(t.matches(ns, labels, nsl) for t in terms)

        first = terms[0].selector
        index = first.index_pairs() if first is not None else ()
        key = ("terms", tuple((t.selector, t.namespaces, t.namespace_selector) for t in terms))
        return self.counter(key, match, index)

    def spread_counter(self, c: SpreadConstraint) -> PodCounter:
        def match(ns: str, labels: Mapping[str, str]) -> bool:
            return c.matches(ns, labels)

        index = c.selector.index_pairs() if c.selector is not None else ()
        return self.counter(("spread", c.selector, c.namespace), match, index)

    def existing_terms(self, task: Task, kind: str) -> list[_TermGroup]:
        """Groups of placed pods' terms of ``kind`` ("anti" or "score") that ``task`` matches."""
        labels, nsl = task.labels, self.namespace_labels
        out = []
        for k, g in self._candidates(self._groups_by_pair, self._groups_any, labels):
            if k == kind and g.owners and g.term.matches(task.namespace, labels, nsl):
                out.append(g)
        return out

    def node_masks(self, task: Task) -> tuple[BoolArray, BoolArray]:
        hit = self._node_masks.get(task.placement_key)
        if hit is None:
            hit = node_placement_masks(self.nodes, task)
            self._node_masks[task.placement_key] = hit
        return hit

    # --- spread ------------------------------------------------------------------------------------------

    def spread_eligible(self, task: Task, constraints: Sequence[SpreadConstraint]) -> BoolArray:
        """Nodes whose pods count for ``constraints`` (the policies of the first): they carry every
        topology key of them, and pass the pod's node selector and required node affinity
        (nodeAffinityPolicy Honor) and its tolerations of NoSchedule/NoExecute taints (nodeTaintsPolicy
        Honor). Read-only."""
        return self._spread_basis(task, constraints[0], constraints)[0]

    def _spread_basis(
        self, task: Task, c: SpreadConstraint, constraints: Sequence[SpreadConstraint]
    ) -> tuple[BoolArray, BoolArray, bool]:
        """(eligible nodes, domains present among them, whether they are every node with the key)."""
        keys = tuple(sorted({s.topology_key for s in constraints}))
        honor = c.honor_node_affinity or c.honor_taints
        cache_key = (
            task.placement_key if honor else None,
            keys,
            c.topology_key,
            c.honor_node_affinity,
            c.honor_taints,
        )
        hit = self._spread_cache.get(cache_key)
        if hit is not None:
            return hit
        eligible = np.ones(self.n, dtype=bool)
        for key in keys:
            dom, values = self.topology.domains(key)
            eligible &= dom < len(values)
        if honor:
            affinity, taints = self.node_masks(task)
            if c.honor_node_affinity:
                eligible &= affinity
            if c.honor_taints:
                eligible &= taints
        dom, values = self.topology.domains(c.topology_key)
        present = np.bincount(dom[eligible], minlength=len(values) + 1) > 0
        present[-1] = False
        full = bool(eligible.sum() == (dom < len(values)).sum())
        hit = (eligible, present, full)
        self._spread_cache[cache_key] = hit
        return hit

    def spread_counts(
        self, task: Task, c: SpreadConstraint, eligible: BoolArray
    ) -> tuple[IntArray, FloatArray, BoolArray]:
        """(node -> domain, matching pods per domain over ``eligible`` nodes, which domains exist there)."""
        dom, values = self.topology.domains(c.topology_key)
        counter = self.spread_counter(c)
        size = len(values) + 1
        counts = np.bincount(dom[eligible], weights=counter.node_counts[eligible], minlength=size).astype(
            np.float64
        )
        present = np.bincount(dom[eligible], minlength=size) > 0
        present[-1] = False
        counts[-1] = 0.0
        return dom, counts, present

    def _spread_counts(
        self, task: Task, c: SpreadConstraint, constraints: Sequence[SpreadConstraint]
    ) -> tuple[IntArray, FloatArray, BoolArray]:
        """:meth:`spread_counts` over the nodes eligible for ``c`` among the pod's ``constraints``, from
        caches (read-only arrays): when every node with the key is eligible, the counter's own counts."""
        eligible, present, full = self._spread_basis(task, c, constraints)
        counter = self.spread_counter(c)
        if full:  # every node with the key counts: the counter's own per-domain counts
            dom, counts = counter.domain_counts(c.topology_key)
            return dom, counts, present
        dom, values = self.topology.domains(c.topology_key)
        counts = np.bincount(
            dom[eligible], weights=counter.node_counts[eligible], minlength=len(values) + 1
        ).astype(np.float64)
        counts[-1] = 0.0
        return dom, counts, present

    # --- filters and scores --------------------------------------------------------------------------

    def check(self, task: Task) -> ConstraintCheck | None:
        """Required pod affinity, anti-affinity (the pod's own and placed pods' against it) and
        DoNotSchedule spread, over all nodes; None when none applies to ``task``."""
        c = task.constraints
        repelled = self.existing_terms(task, "anti") if self._groups else []
        if (
            c is None or not (c.affinity or c.anti_affinity or any(s.hard for s in c.spread))
        ) and not repelled:
            return None
        mask = np.ones(self.n, dtype=bool)
        parts: list[tuple[Callable[[IntArray], list[tuple[str, int]]], BoolArray]] = []

        def add(ok: BoolArray, describe: Callable[[IntArray], list[tuple[str, int]]]) -> None:
            nonlocal mask
            mask = mask & ok
            parts.append((describe, ok))

        if c is not None and c.affinity:
            add(*self._affinity(task, c.affinity))
        for term in c.anti_affinity if c is not None else ():
            dom, counts = self.term_counter((term,)).domain_counts(term.topology_key)
            reason = f"{POD_ANTI_AFFINITY} ({term.describe()})"
            add(counts[dom] == 0, _fixed(reason))
        for g in repelled:
            reason = f"{PLACED_ANTI_AFFINITY} ({g.term.describe()})"
            add(g.counts[g.dom] == 0, _fixed(reason))
        hard = [s for s in c.spread if s.hard] if c is not None else []
        for s in hard:
            add(*self._spread_filter(task, s, hard))
        return ConstraintCheck(mask, parts)

    def relievable(self, task: Task) -> BoolArray | None:
        """Nodes where the required anti-affinity between ``task`` and placed pods (its own terms, and
        theirs that match it) counts only pods on the node itself, and the other filters here pass: where
        evicting pods of that node may let the task in (reclaim and preempt try them). None when no
        anti-affinity applies to ``task``."""
        c = task.constraints
        repelled = self.existing_terms(task, "anti") if self._groups else []
        if not (c is not None and c.anti_affinity) and not repelled:
            return None
        mask = np.ones(self.n, dtype=bool)
        if c is not None and c.affinity:
            mask &= self._affinity(task, c.affinity)[0]
        for term in c.anti_affinity if c is not None else ():
            counter = self.term_counter((term,))
            dom, counts = counter.domain_counts(term.topology_key)
            mask &= counts[dom] - counter.node_counts < 0.5
        for g in repelled:
            mask &= g.counts[g.dom] - g.node_counts < 0.5
        hard = [s for s in c.spread if s.hard] if c is not None else []
        for s in hard:
            mask &= self._spread_filter(task, s, hard)[0]
        return mask

    def _affinity(
        self, task: Task, terms: tuple[AffinityTerm, ...]
    ) -> tuple[BoolArray, Callable[[IntArray], list[tuple[str, int]]]]:
        counter = self.term_counter(terms)
        ok = np.ones(self.n, dtype=bool)
        have_key = np.ones(self.n, dtype=bool)
        anywhere = False
        for term in terms:
            dom, counts = counter.domain_counts(term.topology_key)
            ok &= counts[dom] > 0
            have_key &= dom < len(counts) - 1
            anywhere = anywhere or bool(counts.any())
        # The first pod of a group with affinity to itself: no pod matches anywhere yet, and it matches its
        # own terms, so it may go to any node that carries the topology keys.
        nsl = self.namespace_labels
        if not anywhere and all(t.matches(task.namespace, task.labels, nsl) for t in terms):
            ok = have_key
        what = "; ".join(t.describe() for t in terms)
        return ok, _fixed(f"{POD_AFFINITY} ({what})")

    def _spread_filter(
        self, task: Task, s: SpreadConstraint, constraints: Sequence[SpreadConstraint]
    ) -> tuple[BoolArray, Callable[[IntArray], list[tuple[str, int]]]]:
        dom, counts, present = self._spread_counts(task, s, constraints)
        n_domains = int(present.sum())
        least = float(counts[:-1][present[:-1]].min()) if n_domains else 0.0
        if s.min_domains is not None and n_domains < s.min_domains:
            least = 0.0
        own = 1.0 if s.matches(task.namespace, task.labels) else 0.0
        missing = dom == len(counts) - 1
        ok = ~missing & (counts[dom] + own - least <= s.max_skew)
        values = self.topology.domains(s.topology_key)[1]

        def describe(bad: IntArray) -> list[tuple[str, int]]:
            out: list[tuple[str, int]] = []
            head = f"{POD_SPREAD} ({s.describe()})"
            lacking = int(missing[bad].sum())
            if lacking:
                out.append((f"{head}: node(s) without label {s.topology_key}", lacking))
            at_skew = bad[~missing[bad]]
            if len(at_skew):
                doms = sorted({int(d) for d in dom[at_skew]}, key=lambda d: (-counts[d], values[d]))
                shown = ", ".join(f"{s.topology_key}={values[d]} has {counts[d]:g}" for d in doms[:3])
                more = f" (+{len(doms) - 3} more domains)" if len(doms) > 3 else ""
                out.append(
                    (
                        f"{head}: {shown}{more} matching pod(s), at maxSkew {s.max_skew} over the "
                        f"least ({least:g})",
                        len(at_skew),
                    )
                )
            return out

        return ok, describe

    def score(
        self, task: Task, feasible: BoolArray, *, affinity_weight: float, spread_weight: float
    ) -> FloatArray | None:
        """Preferred pod affinity/anti-affinity (the pod's own terms and placed pods' terms that match it)
        and ScheduleAnyway spread, each 0..100 over ``feasible`` as kube-scheduler normalises them and
        weighted; None when nothing applies."""
        c = task.constraints
        attracted = self.existing_terms(task, "score") if (self._groups and affinity_weight) else []
        soft = [s for s in c.spread if not s.hard] if (c is not None and spread_weight) else []
        preferred = c.preferred if (c is not None and affinity_weight) else ()
        if not (attracted or soft or preferred):
            return None
        out = np.zeros(self.n)
        if preferred or attracted:
            raw = np.zeros(self.n)
            for term, weight in preferred:
                dom, counts = self.term_counter((term,)).domain_counts(term.topology_key)
                raw += weight * counts[dom]
            for g in attracted:
                raw += g.counts[g.dom]
            out += affinity_weight * _min_max(raw, feasible)
        if soft:
            raw = np.zeros(self.n)
            ignored = np.zeros(self.n, dtype=bool)
            for s in soft:
                dom, counts, present = self._spread_counts(task, s, soft)
                tp_weight = math.log(int(present.sum()) + 2)
                raw += counts[dom] * tp_weight + (s.max_skew - 1)
                ignored |= dom == len(counts) - 1
            considered = feasible & ~ignored
            norm = np.zeros(self.n)
            if considered.any():
                hi, lo = float(raw[considered].max()), float(raw[considered].min())
                norm = np.where(considered, 100.0 * (hi + lo - raw) / hi if hi > 0 else 100.0, 0.0)
            out += spread_weight * norm
        return out


def _fixed(reason: str) -> Callable[[IntArray], list[tuple[str, int]]]:
    def describe(bad: IntArray) -> list[tuple[str, int]]:
        return [(reason, len(bad))]

    return describe


def _min_max(raw: FloatArray, feasible: BoolArray) -> FloatArray:
    """0..100 by (raw - min) / (max - min) over ``feasible`` (0 everywhere when they are all equal)."""
    if not feasible.any():
        return np.zeros(len(raw))
    hi, lo = float(raw[feasible].max()), float(raw[feasible].min())
    if hi - lo <= 0:
        return np.zeros(len(raw))
    out: FloatArray = np.clip(100.0 * (raw - lo) / (hi - lo), 0.0, 100.0)
    return out
