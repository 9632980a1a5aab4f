"""predicates: which nodes a task may go to.

Checks spec.nodeSelector, required node affinity, taints against tolerations, cordoned (unschedulable)
nodes, nodes a rescheduled pod was moved off and the required node affinity of the PersistentVolumes the
pod mounts (a claim that does not exist, or is bound to no volume yet, rejects every node; an unbound claim
of a WaitForFirstConsumer StorageClass is the session's own volume binding's, not this filter's). All of that depends only on the task's placement spec, so it is computed once per distinct
spec as a boolean mask over all nodes.

Host ports depend on the pods on a node (node state): a port (protocol, port) is taken on a node when a
pod there uses it on the same host IP or on 0.0.0.0 (and 0.0.0.0 conflicts with any IP), as in Kubernetes.

Required pod affinity and anti-affinity (both ways: a placed pod's anti-affinity repels the new pod) and
topology spread constraints with whenUnsatisfiable DoNotSchedule depend on the other pods placed: they are
constraint filters (see ``volsched.framework.session``) over the session's per-domain counts
(``volsched.model.constraints``; node terms and taints: ``volsched.model.nodeterms``).

CSI volume attach limits (a node's CSINode ``allocatable.count`` per driver) depend on the pods on a node
too: a constraint filter over the session's counts of volumes attached per node and driver
(``volsched.model.attach``). A pod being evicted keeps its volumes attached until it is gone: a pod may be
pipelined onto the attachments it frees, as onto the capacity it frees, and placed now only within what
is attached now; the pods whose going detaches a volume are the ones reclaim and preempt may take to
make an attachment free.

Free capacity (including the ``pods`` count, i.e. max pods) is the session's own check, done for every
task whatever the plugins, and explained in numbers by the session.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.attach import AttachState
from volsched.model.cluster import BoolArray, IndexArray, NodeTable, hard_taint_groups
from volsched.model.nodeterms import (
    UNSCHEDULABLE_TAINT,
    matches_affinity,
    matches_node_selector,
    tolerates,
)
from volsched.model.vocabulary import Task
from volsched.plugins.shared.constraint_state import constraint_state

__all__ = ["UNSCHEDULABLE_TAINT", "Predicates", "matches_affinity", "tolerates"]


def _taint_reason(t: tuple[str, str, str]) -> str:
    if t == UNSCHEDULABLE_TAINT:
        return "node(s) were unschedulable (cordoned)"
    return (
        f"node(s) had untolerated taint {{{t[0]}: {t[1]}}}"
        if t[1]
        else f"node(s) had untolerated taint {{{t[0]}}}"
    )


#: A placement spec's masks: node selector, node affinity, taints tolerated, not avoided, volumes reachable.
Masks = tuple[BoolArray, BoolArray, BoolArray, BoolArray, BoolArray]
#: At most this many placement specs' masks are kept with a node table (then they are made again).
_KEPT_SPECS = 256


class _StaticChecks:
    """Per-placement-spec masks over all nodes, computed once and reused by every task that shares them."""

    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        # The nodes' taint groups follow from their specs alone: kept for every session on these nodes.
        self.taint_group, self.groups = hard_taint_groups(nodes)
        # Each placement spec's masks follow from the spec and the nodes' specs alone: kept for every
        # session on these nodes too (read-only), up to ``_KEPT_SPECS`` specs.
        kept: tuple[dict[str, Masks], dict[str, BoolArray]] | None = nodes.memo.get("static_masks")
        if kept is None or len(kept[0]) > _KEPT_SPECS:
            kept = nodes.memo["static_masks"] = ({}, {})
        self._cache, self._combined = kept

    def combined(self, task: Task) -> BoolArray:
        """All of :meth:`masks` at once."""
        hit = self._combined.get(task.placement_key)
        if hit is None:
            selector, affinity, taints, avoided, volumes = self.masks(task)
            hit = selector & affinity & taints & avoided & volumes
            hit.setflags(write=False)
            self._combined[task.placement_key] = hit
        return hit

    def masks(self, task: Task) -> tuple[BoolArray, BoolArray, BoolArray, BoolArray, BoolArray]:
        """(selector ok, affinity ok, taints tolerated, not avoided, volumes reachable) over all nodes."""
        hit = self._cache.get(task.placement_key)
        if hit is not None:
            return hit
        n = len(self.nodes)
        specs = self.nodes.specs
        if task.node_selector:
            selector = np.array([matches_node_selector(s, task.node_selector) for s in specs], dtype=bool)
        else:
            selector = np.ones(n, dtype=bool)
        if task.affinity_terms:
            affinity = np.array([matches_affinity(s, task.affinity_terms) for s in specs], dtype=bool)
        else:
            affinity = np.ones(n, dtype=bool)
        tolerated_group = np.array(
            [all(tolerates(task.tolerations, t) for t in group) for group in self.groups] or [True],
            dtype=bool,
        )
        taints = tolerated_group[self.taint_group] if n else np.ones(0, dtype=bool)
        avoided = np.ones(n, dtype=bool)
        for name in task.avoid_nodes:
            i = self.nodes.index.get(name)
            if i is not None:
                avoided[i] = False
        volumes = np.ones(n, dtype=bool)
        if task.missing_claims or task.unbound_claims or task.foreign_claims:
            volumes[:] = False
        for _, terms in task.volume_terms:
            volumes &= np.fromiter((matches_affinity(s, terms) for s in specs), dtype=bool, count=n)
        out = (selector, affinity, taints, avoided, volumes)
        for mask in out:
            mask.setflags(write=False)
        self._cache[task.placement_key] = out
        return out


@register_plugin
class Predicates(BasePlugin):
    name: ClassVar[str] = "predicates"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True

    def on_session_open(self, session: ExtensionPoints) -> None:
        nodes = session.nodes
        static = _StaticChecks(nodes)

        ports = _HostPorts(
            nodes,
            any_held=session.ledger.any_host_ports()
            or any(t.host_ports for t in session.snapshot.foreign_tasks),
        )
        session.add_event_handler(EventHandler(allocate=ports.add, deallocate=ports.remove))

        def predicate(task: Task, idx: IndexArray) -> BoolArray:
            mask: BoolArray = static.combined(task)[idx]
            if task.host_ports:
                mask = mask & ports.free(task, idx)
            return mask

        def explain(task: Task, idx: IndexArray) -> list[tuple[str, int]]:
            selector, affinity, taints, avoided, volumes = static.masks(task)
            out: list[tuple[str, int]] = []
            if task.missing_claims:
                volume_reason = f"persistentvolumeclaim(s) {', '.join(task.missing_claims)} not found"
            elif task.foreign_claims:
                volume_reason = (
                    f"persistentvolumeclaim(s) {', '.join(task.foreign_claims)} not made for this pod (an "
                    "ephemeral volume's claim must be the pod's own)"
                )
            elif task.unbound_claims:
                volume_reason = (
                    f"persistentvolumeclaim(s) {', '.join(task.unbound_claims)} not bound yet (not of a "
                    "WaitForFirstConsumer StorageClass: the PersistentVolume controller binds it)"
                )
            else:
                volume_reason = (
                    "node(s) didn't match the node affinity of the pod's persistent volumes "
                    f"({', '.join(v for v, _ in task.volume_terms)})"
                )
            for ok, reason in (
                (selector, "node(s) didn't match the pod's node selector"),
                (affinity, "node(s) didn't match the pod's node affinity"),
                (avoided, "node(s) the pod was moved off"),
                (volumes, volume_reason),
            ):
                bad = int(np.sum(~ok[idx]))
                if bad:
                    out.append((reason, bad))
            if task.host_ports:
                bad = int(np.sum(~ports.free(task, idx)))
                if bad:
                    wanted = ", ".join(f"{p}/{proto}" for proto, p, _ in task.host_ports)
                    out.append(
                        (f"node(s) didn't have free ports for the requested pod ports ({wanted})", bad)
                    )
            by_taint: dict[str, int] = {}
            for i in idx[~taints[idx]]:
                for t in static.groups[static.taint_group[i]]:
                    if not tolerates(task.tolerations, t):
                        by_taint[_taint_reason(t)] = by_taint.get(_taint_reason(t), 0) + 1
                        break
            out.extend(by_taint.items())
            return out

        session.add_predicate_fn(self.name, predicate, explain=explain)

        state = constraint_state(session)
        attach = _attach_state(session)
        if state is None and attach is None:
            return

        def constraint(task: Task) -> BoolArray | None:
            result = state.check(task) if state is not None else None
            mask = None if result is None else result.mask
            if attach is not None:
                within = attach.check(task)
                if within is not None:
                    mask = within if mask is None else mask & within
            return mask

        def explain_constraint(task: Task, idx: IndexArray) -> list[tuple[str, int]]:
            result = state.check(task) if state is not None else None
            out = [] if result is None else result.explain(idx)
            if attach is not None:
                out.extend(attach.explain(task, idx))
            return out

        def relief(task: Task) -> BoolArray | None:
            # Where the filter could pass once pods of the node go: anti-affinity's relief (or where it
            # passes), and the attach limits' (or where they pass: a volume is detached once its pods
            # are gone).
            eased = state.relievable(task) if state is not None else None
            freed = attach.relievable(task) if attach is not None else None
            if eased is None and freed is None:
                return None
            if eased is None:
                result = state.check(task) if state is not None else None
                eased = None if result is None else result.mask
            elif state is not None and (result := state.check(task)) is not None:
                eased = eased | result.mask
            if freed is not None and attach is not None:
                within = attach.check(task)
                freed = freed if within is None else freed | within
            if eased is None or freed is None:
                return eased if freed is None else freed
            return eased & freed

        if attach is None:
            session.add_constraint_fn(self.name, constraint, explain=explain_constraint, relief=relief)
            return
        session.add_constraint_fn(
            self.name,
            constraint,
            explain=explain_constraint,
            relief=relief,
            now=attach.now,
            holders=attach.holders,
        )


def _attach_state(session: ExtensionPoints) -> AttachState | None:
    """The session's CSI volume attach counts (None: no node has a limit)."""
    catalog = session.snapshot.attach
    if catalog is None:
        return None
    nodes = session.nodes
    state = AttachState(catalog, index=nodes.index, tasks=lambda: nodes.tasks, memo=nodes.memo)
    session.add_event_handler(EventHandler(allocate=state.add, deallocate=state.remove))
    return state


class _HostPorts:
    """Host ports in use per node: (protocol, port) -> host IP -> pods using it, over nodes."""

    def __init__(self, nodes: NodeTable, *, any_held: bool = True) -> None:
        """``any_held``: whether a task on a node may ask for host ports (False: none does)."""
        self.nodes = nodes
        self.used: dict[tuple[str, int], dict[str, np.ndarray[Any, np.dtype[np.int64]]]] = {}
        self._where: dict[str, int] = {}
        for i, on_node in enumerate(nodes.tasks if any_held else ()):
            for t in on_node.values():
                if t.host_ports:
                    self._count(t, i, 1)

    def _count(self, task: Task, node: int, delta: int) -> None:
        if delta > 0:
            self._where[task.key] = node
        else:
            self._where.pop(task.key, None)
        for proto, port, ip in task.host_ports:
            by_ip = self.used.setdefault((proto, port), {})
            counts = by_ip.get(ip)
            if counts is None:
                counts = by_ip[ip] = np.zeros(len(self.nodes), dtype=np.int64)
            counts[node] += delta

    def add(self, task: Task) -> None:
        if not task.host_ports:  # most pods: nothing to count
            return
        node = self.nodes.index.get(task.node_name or "")
        if node is not None and task.key not in self._where:
            self._count(task, node, 1)

    def remove(self, task: Task) -> None:
        node = self._where.get(task.key)
        if node is not None:
            self._count(task, node, -1)

    def free(self, task: Task, idx: IndexArray) -> BoolArray:
        ok = np.ones(len(idx), dtype=bool)
        for proto, port, ip in task.host_ports:
            by_ip = self.used.get((proto, port))
            if not by_ip:
                continue
            for other, counts in by_ip.items():
                if ip == "0.0.0.0" or other == "0.0.0.0" or other == ip:
                    ok &= counts[idx] == 0
        return ok
