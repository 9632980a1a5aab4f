"""Hierarchical, work-conserving fair share: the pure core behind the proportion plugin.

A tree of queues (any depth) under an implicit root that stands for the cluster. Every node has a
weight, a guarantee and a capability (vectors over the resource space; +inf where unset); leaves
carry what their jobs ask for (``request``) and hold (``allocated``), and the smallest request of their
next pending task (``unit``). :func:`fair_share` returns, for every node:

* ``guarantee``: the effective guarantee. A node without a guarantee in a dimension guarantees what
  its children guarantee; children whose guarantees sum past what their parent has (its guarantee,
  or the cluster at the top) keep ``min(guarantee, weighted share of the parent)``, found by
  water-filling the parent's amount among all siblings with the guaranteed ones capped by their
  guarantee, so siblings without a guarantee keep their weighted share. A guarantee above the node's
  own capability is cut to it. Every cut is reported.
* ``real_capability``: ``min(capability, parent's realCapability - the siblings' guarantees)``; the
  root's is the cluster.
* ``deserved``: top-down, each node's deserved is water-filled among its children by weight, each
  child capped by its subtree's request and its realCapability and floored by its guarantee; the
  root's is the cluster. The fill is solved exactly per dimension (no rounds), so any weights converge.
* ``limit``: what a leaf may hold when it takes more: its deserved, plus its part of the work-conserving
  remainder. Deserved shares are fluid but pods are not: a leaf can use its deserved only in whole
  ``unit``s, and the rest (and what no leaf within its deserved can use) is handed to leaves that still
  ask, lowest share first, one unit at a time, siblings first (inside the smallest subtree whose
  leftover covers it), never past anybody's realCapability.

Nothing here knows about sessions, pods or Kubernetes; it is numpy over nodes, per resource dimension.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.resources import EPS, format_amount
from volsched.model.vocabulary import ROOT_QUEUE
from volsched.records import dataclass

Vector = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: The parent name that means "the top of the tree" (an unset ``spec.parent`` means the same).
ROOT = ROOT_QUEUE


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with a queue's configuration, reported on the queue (condition and event)."""

    queue: str
    reason: str
    message: str


@dataclass
class Tree:
    """Parents resolved to indices (-1: the root), with children lists and a top-down order."""

    names: list[str]
    parent: IntArray
    children: list[list[int]]
    #: Nodes in top-down order (every parent before its children).
    order: list[int]
    problems: list[Problem] = field(default_factory=list)
    #: What :func:`fair_share` reads of the tree's shape alone, made at its first use (a tree is not
    #: changed once built, and ``queue_config`` keeps it from session to session while the queues are
    #: the same: each session's fair share then reads it, not the tree node by node).
    _shape: Shape | None = field(default=None, compare=False, repr=False)

    @property
    def top(self) -> list[int]:
        return [i for i in range(len(self.names)) if self.parent[i] < 0]

    @property
    def shape(self) -> Shape:
        out = self._shape
        if out is None:
            out = self._shape = Shape.of(self)
        return out

    def is_leaf(self, i: int) -> bool:
        return not self.children[i]

    def ancestors(self, i: int) -> list[int]:
        """``i`` and its ancestors, nearest first."""
        out = []
        while i >= 0:
            out.append(i)
            i = int(self.parent[i])
        return out

    def depth(self, i: int) -> int:
        return len(self.ancestors(i)) - 1


@dataclass(frozen=True)
class Shape:
    """A :class:`Tree`'s shape as :func:`fair_share` reads it (read-only; the same for every session)."""

    #: Each node but the top ones with its parent, bottom-up (children before their parent).
    up: list[tuple[int, int]]
    #: The top nodes (``Tree.top``), and the parents in top-down order (the nodes with children).
    top: list[int]
    parents: list[int]
    #: Whether each node is a leaf.
    leaf: npt.NDArray[np.bool_]
    #: Per node, the leaves of its subtree (bottom-up order), and the node with its ancestors, nearest first.
    leaves_under: list[list[int]]
    ancestors: list[list[int]]

    @classmethod
    def of(cls, tree: Tree) -> Shape:
        n = len(tree.names)
        leaf = np.array([tree.is_leaf(i) for i in range(n)], dtype=bool)
        leaf.setflags(write=False)
        leaves_under: list[list[int]] = [[] for _ in range(n)]
        up: list[tuple[int, int]] = []
        for i in reversed(tree.order):
            if leaf[i]:
                leaves_under[i].append(i)
            p = int(tree.parent[i])
            if p >= 0:
                up.append((i, p))
                leaves_under[p].extend(leaves_under[i])
        return cls(
            up=up,
            top=tree.top,
            parents=[i for i in tree.order if tree.children[i]],
            leaf=leaf,
            leaves_under=leaves_under,
            ancestors=[tree.ancestors(i) for i in range(n)],
        )


def build_tree(names: Sequence[str], parents: Sequence[str | None]) -> Tree:
    """Resolve parent names. A missing parent or a cycle is reported and the queue hangs off the root,
    so one bad queue never stops the others."""
    index = {n: i for i, n in enumerate(names)}
    problems: list[Problem] = []
    parent = np.full(len(names), -1, dtype=np.intp)
    for i, (name, p) in enumerate(zip(names, parents, strict=True)):
        if not p or p == ROOT:
            continue
        j = index.get(p)
        if j is None:
            problems.append(
                Problem(
                    name,
                    "ParentNotFound",
                    f"parent queue {p} does not exist; queue {name} is placed under root",
                )
            )
            continue
        parent[i] = j
    # Cycles: follow parents; a walk that meets itself is a cycle, and all its members go under root.
    state = np.zeros(len(names), dtype=np.int8)  # 0 unseen, 1 on the current walk, 2 done
    for start in range(len(names)):
        walk = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            walk.append(i)
            i = int(parent[i])
        if i >= 0 and state[i] == 1:
            cycle = walk[walk.index(i) :]
            chain = " -> ".join([names[k] for k in cycle] + [names[cycle[0]]])
            for k in sorted(cycle, key=lambda k: names[k]):
                problems.append(
                    Problem(
                        names[k],
                        "ParentCycle",
                        f"queue parents form a cycle ({chain}); queue {names[k]} is placed under root",
                    )
                )
                parent[k] = -1
        for k in walk:
            state[k] = 2
    children: list[list[int]] = [[] for _ in names]
    for i in sorted(range(len(names)), key=lambda k: names[k]):
        if parent[i] >= 0:
            children[int(parent[i])].append(i)
    order: list[int] = []
    frontier = sorted((i for i in range(len(names)) if parent[i] < 0), key=lambda k: names[k])
    while frontier:
        order.extend(frontier)
        frontier = [c for i in frontier for c in children[i]]
    return Tree(list(names), parent, children, order, problems)


def water_fill(amount: Vector, weights: Vector, lo: Matrix, hi: Matrix) -> Matrix:
    """Share ``amount`` (per dimension) among children: ``x = max(lo, min(hi, weight * level))`` with
    the level chosen so the shares sum to ``amount``, or everyone at ``max(lo, hi)`` when that is
    less. Solved exactly from the sorted breakpoints of the piecewise-linear sum, so it converges for
    any weights (1 to 2**31 and beyond) in one pass. A child of weight 0 (or less) keeps ``lo`` and
    takes no part of the weighted fill, as Volcano's proportion gives a queue of weight 0 its guarantee
    only; the others share what is left of ``amount``."""
    c, r = lo.shape
    if 0 < c < _FEW:
        few = _water_fill_few(amount, weights, lo, hi)
        if few is not None:
            return few
    out = np.zeros((c, r))
    if c == 0:
        return out
    w = weights.astype(np.float64)
    weighted = w > 0
    if not weighted.all():
        out[:] = lo
        if weighted.any():
            rest = amount - lo[~weighted].sum(axis=0)
            out[weighted] = water_fill(rest, w[weighted], lo[weighted], hi[weighted])
        return out
    for d in range(r):
        a = float(amount[d])
        low = lo[:, d]
        high = np.maximum(np.minimum(hi[:, d], max(a, 0.0)), low)
        if high.sum() <= a + EPS:
            out[:, d] = high
            continue
        if low.sum() >= a - EPS:
            out[:, d] = low
            continue
        # f(level) = sum(clip(w * level, low, high)) rises by w between low/w and high/w.
        points = np.concatenate((low / w, high / w))
        slopes = np.concatenate((w, -w))
        order = np.argsort(points, kind="stable")
        points, slopes = points[order], slopes[order]
        rate = np.cumsum(slopes)  # slope of f just after each breakpoint
        values = low.sum() + np.concatenate(([0.0], np.cumsum(rate[:-1] * np.diff(points))))
        k = int(np.searchsorted(values, a, side="left"))  # first breakpoint where f >= a
        k = min(max(k, 1), len(points) - 1)
        step = rate[k - 1]
        level = points[k - 1] + ((a - values[k - 1]) / step if step > 0 else 0.0)
        out[:, d] = np.clip(w * level, low, high)
    return out


#: Up to this many children less one, :func:`water_fill` first tries :func:`_water_fill_few`: numpy sums
#: so few values one after another from zero (pairwise summation starts at eight), which plain floats
#: repeat exactly, and a fair share's fill for a queue or two (a session after one arrival) is then a
#: few float operations, not a dozen numpy calls per dimension.
_FEW = 8


def _plain(values: list[float]) -> bool:
    """Whether ``values`` hold no NaN and no negative zero: the values on which numpy's ``minimum`` and
    ``maximum`` and Python's comparisons give the same floats. (Asked in C: a NaN by ``isnan`` over the
    list, a zero of either sign by ``in``, and only then each zero's sign.)"""
    if any(map(_isnan, values)):
        return False
    return 0.0 not in values or all(math.copysign(1.0, x) > 0 for x in values if x == 0.0)


_isnan = math.isnan


def _water_fill_few(amount: Vector, weights: Vector, lo: Matrix, hi: Matrix) -> Matrix | None:
    """:func:`water_fill` of fewer than ``_FEW`` children, in plain floats, where every dimension is
    filled to ``max(lo, min(hi, amount))`` (there is enough for all) or to ``lo`` (not even that):
    the same floats. None where it cannot say (a dimension to share by weight, a weight that is not
    positive, a NaN or a negative zero): :func:`water_fill` then shares as always."""
    amounts, w = amount.tolist(), weights.tolist()
    low_rows, high_rows = lo.tolist(), hi.tolist()
    if not all(x > 0 for x in w) or not _plain(amounts):
        return None
    out: list[list[float]] = [[] for _ in low_rows]
    for d, a in enumerate(amounts):
        cap = max(a, 0.0)
        low = [row[d] for row in low_rows]
        top = [row[d] for row in high_rows]
        if not (_plain(low) and _plain(top)):
            return None
        high = [max(x if x < cap else cap, lo_) for x, lo_ in zip(top, low, strict=True)]
        total = 0.0
        for x in high:
            total += x
        if total <= a + EPS:
            column = high
        else:
            total = 0.0
            for x in low:
                total += x
            if not total >= a - EPS:
                return None
            column = low
        for row, x in zip(out, column, strict=True):
            row.append(x)
    return np.array(out, dtype=np.float64).reshape(lo.shape)


@dataclass
class FairShare:
    """The queue tree's shares: guarantees, capabilities, requests, allocations and deserved."""

    tree: Tree
    guarantee: Matrix
    real_capability: Matrix
    request: Matrix  # subtree
    allocated: Matrix  # subtree
    deserved: Matrix
    limit: Matrix
    problems: list[Problem]

    def share(self, i: int) -> float:
        return deserved_share(self.allocated[i], self.deserved[i])


def deserved_share(allocated: Vector, deserved: Vector) -> float:
    """How much of its deserved amount a queue holds: the largest ``allocated / deserved`` (1 where
    nothing is deserved but something is held). Not drf's dominant share, which is a fraction of the
    cluster's total (:func:`volsched.model.cluster.dominant_share`)."""
    held = allocated > EPS
    if not held.any():
        return 0.0
    owed = deserved > EPS
    ratio = np.where(owed, allocated / np.where(owed, deserved, 1.0), np.where(held, 1.0, 0.0))
    return float(ratio.max())


def effective_guarantees(
    tree: Tree,
    *,
    total: Vector,
    weight: Vector,
    guarantee: Matrix,
    capability: Matrix,
    dims: Sequence[str] | None = None,
    describe: Any = None,
) -> tuple[Matrix, Matrix, list[Problem]]:
    """Effective guarantees and realCapabilities of every node (see the module doc), and the problems
    found (the tree's own included). They depend on the queues' configuration and the cluster only,
    never on what jobs ask for or hold: :func:`fair_share` starts from them, and admission
    (the overcommit plugin) holds exactly these for a queue in a full cluster."""
    n, r = guarantee.shape
    dims = list(dims) if dims is not None else [f"r{d}" for d in range(r)]
    if describe is None:

        def describe(d: int, amount: float) -> str:
            return format_amount(dims[d], amount)

    def listed(amounts: Vector, picked: Iterable[int]) -> str:
        """``amounts`` on the dimensions ``picked``, for a problem's message: ``cpu 4, memory 8Gi``."""
        return ", ".join(f"{dims[k]} {describe(k, amounts[k])}" for k in picked)

    problems = list(tree.problems)
    bottom_up = list(reversed(tree.order))
    # Bottom-up: a node without a guarantee guarantees its children's; capped by its capability.
    eg = np.maximum(guarantee.astype(np.float64), 0.0)
    for i in bottom_up:
        kids = tree.children[i]
        if kids:
            inner = eg[kids].sum(axis=0)
            own = guarantee[i] > EPS
            over = own & (inner > guarantee[i] + EPS)
            if over.any():
                d = np.flatnonzero(over)
                problems.append(
                    Problem(
                        tree.names[i],
                        "ChildGuaranteesExceed",
                        f"the guarantees of the children of queue {tree.names[i]} sum to {listed(inner, d)}, "
                        f"more than its guarantee {listed(guarantee[i], d)}; the children share it by weight",
                    )
                )
            eg[i] = np.where(own, guarantee[i], inner)
        above = eg[i] > capability[i] + EPS
        if above.any():
            d = np.flatnonzero(above)
            problems.append(
                Problem(
                    tree.names[i],
                    "GuaranteeAboveCapability",
                    f"queue {tree.names[i]} guarantees {listed(eg[i], d)}, more than its capability "
                    f"{listed(capability[i], d)}; the guarantee is cut to the capability",
                )
            )
            eg[i] = np.minimum(eg[i], capability[i])

    # Top-down: children's guarantees must fit in what the parent guarantees (the cluster at the top).
    real = np.zeros((n, r))

    def settle(kids: list[int], amount: Vector, where: str, parent_real: Vector) -> None:
        if not kids:
            return
        wanted = eg[kids].copy()
        asked = wanted.sum(axis=0)
        if np.any(asked > amount + EPS):
            hi = np.where(wanted > EPS, wanted, np.inf)
            fitted = water_fill(amount, weight[kids], np.zeros_like(wanted), hi)
            short = np.where(asked > amount + EPS, np.maximum(wanted - fitted, 0.0), 0.0)
            for row, i in enumerate(kids):
                d = np.flatnonzero(short[row] > EPS)
                if not len(d):
                    continue
                problems.append(
                    Problem(
                        tree.names[i],
                        "GuaranteeNotMet",
                        f"guarantee of queue {tree.names[i]} cannot be met: the guarantees under {where} sum to "
                        f"{listed(asked, d)} but {where} has {listed(amount, d)}; holding "
                        f"{listed(fitted[row], d)} (missing {listed(short[row], d)})",
                    )
                )
            eg[kids] = np.minimum(wanted, fitted)
        held = eg[kids].sum(axis=0)
        for i in kids:
            real[i] = np.minimum(capability[i], np.maximum(parent_real - (held - eg[i]), 0.0))

    settle(tree.top, total.astype(np.float64), "the cluster", total.astype(np.float64))
    for i in tree.order:
        # eg[i] is at least its children's guarantees unless it was cut (capability, or its own parent).
        settle(tree.children[i], eg[i], f"queue {tree.names[i]}", real[i])
    return eg, real, problems


def fair_share(
    tree: Tree,
    *,
    total: Vector,
    weight: Vector,
    guarantee: Matrix,
    capability: Matrix,
    request: Matrix,
    allocated: Matrix,
    unit: Matrix | None = None,
    dims: Sequence[str] | None = None,
    describe: Any = None,
    effective: tuple[Matrix, Matrix, list[Problem]] | None = None,
) -> FairShare:
    """Deserved shares for every node of ``tree`` (rows) and resource (columns); see the module doc.

    ``request``, ``allocated`` and ``unit`` are per node's own jobs (leaves, in practice); subtree sums
    are formed here. ``dims``/``describe`` only word the problem messages. ``effective`` is what
    :func:`effective_guarantees` returned for the same tree, guarantees and capabilities, when the
    caller already has it."""
    n, r = guarantee.shape
    unit = np.zeros((n, r)) if unit is None else unit
    if effective is not None and n < _FEW:
        few = _fair_share_few(
            tree,
            total=total,
            weight=weight,
            request=request,
            allocated=allocated,
            unit=unit,
            effective=effective,
        )
        if few is not None:
            return few
    shape = tree.shape
    sub_request = request.astype(np.float64)  # (a copy)
    sub_alloc = allocated.astype(np.float64)
    for i, p in shape.up:  # bottom-up
        sub_request[p] += sub_request[i]
        sub_alloc[p] += sub_alloc[i]

    if effective is None:
        effective = effective_guarantees(
            tree,
            total=total,
            weight=weight,
            guarantee=guarantee,
            capability=capability,
            dims=dims,
            describe=describe,
        )
    eg, real, problems = effective
    eg, real, problems = eg.copy(), real.copy(), list(problems)

    # Deserved, top-down.
    deserved = np.zeros((n, r))
    hi_all = np.minimum(sub_request, real)

    def fill(kids: list[int], amount: Vector) -> None:
        if kids:
            deserved[kids] = water_fill(amount, weight[kids], eg[kids], hi_all[kids])

    fill(shape.top, total.astype(np.float64))
    for i in shape.parents:
        fill(tree.children[i], deserved[i])

    limit = _remainder(
        tree,
        total=total,
        deserved=deserved,
        guarantee=eg,
        real=real,
        request=sub_request,
        allocated=sub_alloc,
        unit=unit,
    )
    return FairShare(
        tree=tree,
        guarantee=eg,
        real_capability=real,
        request=sub_request,
        allocated=sub_alloc,
        deserved=deserved,
        limit=limit,
        problems=problems,
    )


def _per_unit(amount: Vector, unit: Vector) -> float:
    """How many whole ``unit``s fit in ``amount`` (over the dimensions the unit asks for): the floor of
    the smallest ``(amount + EPS) / unit``, NaN if one is. Plain floats: a vector has a handful of
    dimensions, where each numpy call costs more than the arithmetic."""
    return _per_unit_floats(amount.tolist(), unit.tolist())


def _held(used: Matrix, guarantee: Matrix, rows: list[int]) -> Vector:
    """The sum over ``rows`` of ``max(used, guarantee)``, as numpy sums them (one row: the row added to
    zero, without indexing by a list)."""
    if len(rows) == 1:
        one: Vector = 0.0 + np.maximum(used[rows[0]], guarantee[rows[0]])
        return one
    out: Vector = np.maximum(used[rows], guarantee[rows]).sum(axis=0)
    return out


def _remainder(
    tree: Tree,
    *,
    total: Vector,
    deserved: Matrix,
    guarantee: Matrix,
    real: Matrix,
    request: Matrix,
    allocated: Matrix,
    unit: Matrix,
) -> Matrix:
    """Leaves' limits: deserved, plus the work-conserving remainder handed out in whole units."""
    shape = tree.shape
    leaf = shape.leaf
    has_unit = (unit > EPS).any(axis=1) & leaf
    # What each leaf can really fill within its deserved: what it holds plus whole units, up to its request.
    usable = np.where(leaf[:, None], allocated, 0.0)
    for j in [i for i, h in enumerate(has_unit.tolist()) if h]:
        k = _per_unit(np.maximum(deserved[j] - allocated[j], 0.0), unit[j])
        usable[j] = np.maximum(allocated[j], np.minimum(allocated[j] + k * unit[j], request[j]))
    used = usable.copy()
    for i, p in shape.up:  # bottom-up
        used[p] += used[i]
    leaves_under = shape.leaves_under
    anc = shape.ancestors

    def room(i: int, pool: Vector) -> int:
        """Whole units leaf ``i`` may still take: within the pool, its request, every realCapability."""
        u = unit[i]
        k = min(_per_unit(pool, u), _per_unit(request[i] - used[i], u))
        for a in anc[i]:
            k = min(k, _per_unit(real[a] - used[a], u))
        return max(int(min(k, 1 << 40)), 0)

    def grant(scope: list[int], pool: Vector) -> None:
        candidates = [i for i in scope if has_unit[i]]
        for _ in range(8 * len(candidates) + 64):
            rooms = {i: k for i in candidates if (k := room(i, pool)) > 0}
            if not rooms:
                return
            if len(rooms) == 1:
                [(best, k)] = rooms.items()
            else:
                ranked = sorted((deserved_share(used[i], deserved[i]), tree.names[i], i) for i in rooms)
                _, _, best = ranked[0]
                k = rooms[best]
                # Units until it would pass the next-lowest share (at least one).
                nxt = ranked[1][0]
                owed = deserved[best] > EPS
                if owed.any():
                    ahead = (nxt * deserved[best] - used[best]) / np.where(
                        unit[best] > EPS, unit[best], np.inf
                    )
                    k = min(k, max(1, int(np.floor(np.min(np.where(owed, ahead, np.inf)) + EPS))))
                else:
                    k = 1
            step = k * unit[best]
            for a in anc[best]:
                used[a] += step
            usable[best] += step
            pool -= step

    def held(kids: list[int]) -> Vector:
        # A guarantee is held for its queue even while the queue does not use it.
        return _held(used, guarantee, kids)

    # Siblings first: each subtree hands out its own leftover before it passes up.
    for i in reversed(shape.parents):
        grant(leaves_under[i], np.maximum(deserved[i] - held(tree.children[i]), 0.0))
    top = shape.top
    if top:
        grant([i for t in top for i in leaves_under[t]], np.maximum(total - held(top), 0.0))
    return np.where(leaf[:, None], np.maximum(deserved, usable), deserved)


def _fair_share_few(
    tree: Tree,
    *,
    total: Vector,
    weight: Vector,
    request: Matrix,
    allocated: Matrix,
    unit: Matrix,
    effective: tuple[Matrix, Matrix, list[Problem]],
) -> FairShare | None:
    """:func:`fair_share` of fewer than ``_FEW`` queues in plain floats, row by row: the same operations
    in the same order as the numpy path (every fill one where each dimension has enough for all, or not
    even the floors, as :func:`_water_fill_few`; the remainder's grants to one leaf with room at a time),
    hence the same floats. None where it cannot say (a weight that is not positive, a NaN or a negative
    zero among the inputs or the amounts met on the way, a fill to share by weight, two leaves with
    room at once): :func:`fair_share`'s numpy path then answers. A session after one arrival asks this
    of a queue or two, where numpy's per-call cost was most of the work."""
    eg_m, real_m, problems = effective
    weights = weight.tolist()
    if not all(w > 0 for w in weights):
        return None
    if len(weights) == 1:  # (one queue, at the top: the cluster's only one)
        return _fair_share_one(
            tree, total=total, request=request, allocated=allocated, unit=unit, effective=effective
        )
    req, alloc, units = request.tolist(), allocated.tolist(), unit.tolist()
    eg, real, amounts = eg_m.tolist(), real_m.tolist(), total.tolist()
    if not _plain([*amounts, *itertools.chain.from_iterable((*req, *alloc, *units, *eg, *real))]):
        return None
    shape = tree.shape
    for i, p in shape.up:  # bottom-up
        req[p] = [a + b for a, b in zip(req[p], req[i], strict=True)]
        alloc[p] = [a + b for a, b in zip(alloc[p], alloc[i], strict=True)]
    hi_all = [[x if x <= y else y for x, y in zip(a, b, strict=True)] for a, b in zip(req, real, strict=True)]
    deserved: list[list[float]] = [[0.0] * len(amounts) for _ in req]

    def fill(kids: list[int], amount: list[float]) -> bool:
        for d, a in enumerate(amount):
            cap = max(a, 0.0)
            high = [max(h if h < cap else cap, lo) for h, lo in ((hi_all[i][d], eg[i][d]) for i in kids)]
            sum_ = 0.0
            for x in high:
                sum_ += x
            if sum_ <= a + EPS:
                column = high
            else:
                sum_ = 0.0
                for i in kids:
                    sum_ += eg[i][d]
                if not sum_ >= a - EPS:
                    return False
                column = [eg[i][d] for i in kids]
            if not _plain(column):
                return False
            for i, x in zip(kids, column, strict=True):
                deserved[i][d] = x
        return True

    if shape.top and not fill(shape.top, amounts):
        return None
    for i in shape.parents:
        if not fill(tree.children[i], deserved[i]):
            return None
    limit = _remainder_few(
        tree, amounts, deserved=deserved, guarantee=eg, real=real, request=req, allocated=alloc, unit=units
    )
    if limit is None:
        return None
    return FairShare(
        tree=tree,
        guarantee=eg_m.copy(),
        real_capability=real_m.copy(),
        request=np.array(req, dtype=np.float64).reshape(request.shape),
        allocated=np.array(alloc, dtype=np.float64).reshape(allocated.shape),
        deserved=np.array(deserved, dtype=np.float64).reshape(request.shape),
        limit=np.array(limit, dtype=np.float64).reshape(request.shape),
        problems=list(problems),
    )


def _fair_share_one(
    tree: Tree,
    *,
    total: Vector,
    request: Matrix,
    allocated: Matrix,
    unit: Matrix,
    effective: tuple[Matrix, Matrix, list[Problem]],
) -> FairShare | None:
    """:func:`_fair_share_few` of a tree of one queue (its weight positive), written out for its one row:
    the same operations on the same floats in the same order, without the loops over rows and children
    (a cluster with only its default queue asks this every session). None where :func:`_fair_share_few`
    says None."""
    eg_m, real_m, problems = effective
    req, alloc, u = request[0].tolist(), allocated[0].tolist(), unit[0].tolist()
    eg, real, amounts = eg_m[0].tolist(), real_m[0].tolist(), total.tolist()
    if not _plain([*amounts, *req, *alloc, *u, *eg, *real]):
        return None
    # The fill at the top: each dimension to max(lo, min(hi, amount)) where that fits, else to lo.
    deserved: list[float] = []
    for a, q, c, lo in zip(amounts, req, real, eg, strict=True):
        h = q if q <= c else c
        cap = max(a, 0.0)
        x = max(h if h < cap else cap, lo)
        if not 0.0 + x <= a + EPS:
            if not 0.0 + lo >= a - EPS:
                return None
            x = lo
        if x != x or (x == 0.0 and math.copysign(1.0, x) < 0):
            return None
        deserved.append(x)
    # The remainder: what the queue can use of its deserved in whole units, then whole units of what is
    # left of the cluster (its only leaf, its own ancestor).
    has_unit = any(v > EPS for v in u)
    usable = list(alloc)
    if has_unit:
        k = _per_unit_floats([max(d - x, 0.0) for d, x in zip(deserved, alloc, strict=True)], u)
        if k != k or k in (math.inf, -math.inf):
            return None
        more = [x + k * v for x, v in zip(alloc, u, strict=True)]
        if not _plain(more):
            return None
        usable = [max(x, y if y <= q else q) for x, y, q in zip(alloc, more, req, strict=True)]
    used = list(usable)
    pool = [max(t - (0.0 + (x if x >= g else g)), 0.0) for t, x, g in zip(amounts, used, eg, strict=True)]
    if not _plain(pool):
        return None
    for _ in range(8 + 64) if has_unit else ():
        k = min(
            _per_unit_floats(pool, u), _per_unit_floats([q - x for q, x in zip(req, used, strict=True)], u)
        )
        k = min(k, _per_unit_floats([c - x for c, x in zip(real, used, strict=True)], u))
        if k != k:
            return None
        got = max(int(min(k, 1 << 40)), 0)
        if got <= 0:
            break
        step = [got * v for v in u]
        used = [x + s for x, s in zip(used, step, strict=True)]
        usable = [x + s for x, s in zip(usable, step, strict=True)]
        pool = [x - s for x, s in zip(pool, step, strict=True)]
        if not (_plain(pool) and _plain(usable)):
            return None
    # (deserved and limit made as one array: two rows, each read as a (1, r) matrix of its own)
    rows = np.array([deserved, [d if d >= x else x for d, x in zip(deserved, usable, strict=True)]])
    return FairShare(
        tree=tree,
        guarantee=eg_m.copy(),
        real_capability=real_m.copy(),
        # (copies of the rows read: the floats of ``req`` and ``alloc``, no NaN among them)
        request=request.astype(np.float64),
        allocated=allocated.astype(np.float64),
        deserved=rows[0:1],
        limit=rows[1:2],
        problems=list(problems),
    )


def _per_unit_floats(amount: list[float], unit: list[float]) -> float:
    """:func:`_per_unit` of plain floats (lists)."""
    k = math.inf
    asks = False
    for a, u in zip(amount, unit, strict=True):
        if u > EPS:
            asks = True
            q: float = (a + EPS) / u
            if q != q:
                return q
            if q < k:
                k = q
    if not asks or k == math.inf or k == -math.inf:
        return k
    return float(math.floor(k))


def _remainder_few(
    tree: Tree,
    total: list[float],
    *,
    deserved: list[list[float]],
    guarantee: list[list[float]],
    real: list[list[float]],
    request: list[list[float]],
    allocated: list[list[float]],
    unit: list[list[float]],
) -> list[list[float]] | None:
    """:func:`_remainder` in plain floats (see :func:`_fair_share_few`), or None where it cannot say."""
    shape = tree.shape
    leaf: list[bool] = shape.leaf.tolist()
    zero = [0.0] * len(total)
    has_unit = [lf and any(u > EPS for u in row) for lf, row in zip(leaf, unit, strict=True)]
    usable = [list(a) if lf else list(zero) for lf, a in zip(leaf, allocated, strict=True)]
    for j, h in enumerate(has_unit):
        if not h:
            continue
        a, u = allocated[j], unit[j]
        k = _per_unit_floats([max(d - x, 0.0) for d, x in zip(deserved[j], a, strict=True)], u)
        if k != k or k in (math.inf, -math.inf):
            return None
        more = [x + k * v for x, v in zip(a, u, strict=True)]
        if not _plain(more):
            return None
        usable[j] = [max(x, y if y <= q else q) for x, y, q in zip(a, more, request[j], strict=True)]
    used = [list(row) for row in usable]
    for i, p in shape.up:  # bottom-up
        used[p] = [a + b for a, b in zip(used[p], used[i], strict=True)]
    anc = shape.ancestors

    def room(i: int, pool: list[float]) -> int | None:
        u = unit[i]
        k = min(
            _per_unit_floats(pool, u),
            _per_unit_floats([q - x for q, x in zip(request[i], used[i], strict=True)], u),
        )
        for a in anc[i]:
            k = min(k, _per_unit_floats([c - x for c, x in zip(real[a], used[a], strict=True)], u))
        if k != k:
            return None
        return max(int(min(k, 1 << 40)), 0)

    def grant(scope: list[int], pool: list[float]) -> bool:
        candidates = [i for i in scope if has_unit[i]]
        for _ in range(8 * len(candidates) + 64):
            best, k = -1, 0
            for i in candidates:
                got = room(i, pool)
                if got is None:
                    return False
                if got > 0:
                    if best >= 0:
                        return False  # two with room: ranked by share (numpy's path)
                    best, k = i, got
            if best < 0:
                return True
            step = [k * v for v in unit[best]]
            for a in anc[best]:
                used[a] = [x + s for x, s in zip(used[a], step, strict=True)]
            usable[best] = [x + s for x, s in zip(usable[best], step, strict=True)]
            pool[:] = [x - s for x, s in zip(pool, step, strict=True)]
            if not (_plain(pool) and _plain(usable[best])):
                return False
        return True

    def held(kids: list[int]) -> list[float]:
        rows = [[x if x >= g else g for x, g in zip(used[i], guarantee[i], strict=True)] for i in kids]
        out = [0.0 + x for x in rows[0]]
        for row in rows[1:]:
            out = [a + b for a, b in zip(out, row, strict=True)]
        return out

    for i in reversed(shape.parents):
        pool = [max(d - h, 0.0) for d, h in zip(deserved[i], held(tree.children[i]), strict=True)]
        if not (_plain(pool) and grant(shape.leaves_under[i], pool)):
            return None
    top = shape.top
    if top:
        pool = [max(t - h, 0.0) for t, h in zip(total, held(top), strict=True)]
        if not (_plain(pool) and grant([i for t in top for i in shape.leaves_under[t]], pool)):
            return None
    return [
        [d if d >= x else x for d, x in zip(dr, ur, strict=True)] if lf else list(dr)
        for lf, dr, ur in zip(leaf, deserved, usable, strict=True)
    ]
