"""removeDuplicates: replicas of one owner bunched on a node beyond their fair share of the nodes they
could run on give up the excess.

Not a spread over topology domains (removePodsViolatingTopologySpreadConstraint is): only nodes count.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from volsched.model.constraints import BoolArray
from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import Context, feasible_elsewhere
from volsched.plugins.rescheduling.params import Params, PodFilter, owner_kinds_excluded
from volsched.records import dataclass


@dataclass(frozen=True)
class RemoveDuplicates:
    """Replicas of one owner (same namespace, controller and images) bunched on a node: a node with
    more than ``ceil(replicas / nodes they could run on)`` of them gives up the excess. The nodes they
    could run on are the union over the owner's pods (each by its own selector, affinity, taints); a pod
    that could run on no other node is passed over for the next."""

    name: ClassVar[str] = "removeDuplicates"
    exclude_owner_kinds: tuple[str, ...] = ()
    pods: PodFilter = PodFilter()

    @classmethod
    def parse(cls, params: Params) -> RemoveDuplicates:
        return cls(params.strings("excludeOwnerKinds"), PodFilter.parse(params, labels=False))

    @staticmethod
    def _possible_nodes(ctx: Context, members: list[Task]) -> BoolArray:
        """The nodes any of the owner's pods could run on (each distinct placement asked once; a pod
        that could run on one node only adds nothing, as in the descheduler)."""
        out = np.zeros(len(ctx.session.nodes), dtype=bool)
        seen: set[str] = set()
        for t in members:
            if t.placement_key in seen:
                continue
            seen.add(t.placement_key)
            mask = ctx.session.feasible_nodes(t)
            if int(mask.sum()) > 1:
                out |= mask
        return out

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        groups: dict[tuple[str, str, tuple[str, ...]], list[Task]] = {}
        for t in ctx.candidates():
            if ctx.node_of(t) is None or not self.pods.admits(t):
                continue
            if owner_kinds_excluded(t, self.exclude_owner_kinds):
                continue
            groups.setdefault((t.namespace, t.owner or "", t.runtime.images), []).append(t)
        out: list[tuple[Task, str]] = []
        for (_, owner, _), members in sorted(groups.items()):
            if len(members) < 2:
                continue
            feasible = int(self._possible_nodes(ctx, members).sum())
            if feasible < 2:
                continue
            cap = math.ceil(len(members) / feasible)
            per_node: dict[str, list[Task]] = {}
            for t in members:
                per_node.setdefault(t.node_name or "", []).append(t)
            for node, here in sorted(per_node.items()):
                excess = len(here) - cap
                for t in here:
                    if excess <= 0:
                        break
                    i = ctx.node_of(t)
                    if i is None or not feasible_elsewhere(ctx, t, i) or not ctx.pick(t):
                        continue  # (a pod that can run nowhere else would come straight back)
                    excess -= 1
                    out.append(
                        (
                            t,
                            f"rescheduling (removeDuplicates): {len(here)} pods of {owner} on node {node}, "
                            f"at most {cap} per node ({len(members)} over {feasible} nodes)",
                        )
                    )
        return out
