"""Topology-aware gangs: place a PodGroup's minMember pods in one domain of a node label.

A PodGroup with ``spec.topology: {key: <node label>, mode: Required | Preferred}`` wants its gang in one
domain (a rack, a block) of that label. The allocator ranks the domains by their idle capacity (ready
nodes only) against what the gang still needs: domains that cannot hold it in total are out, and of
the others the tightest fit comes first (best fit, as Kueue's topology-aware scheduling does, so large
domains stay whole for large gangs), ties by domain name. It then places the gang with placements
limited to one domain at a time, through the job's Statement, and keeps the first domain where the gang
becomes ready (or pipelined whole); a domain where it does not is undone (discarded) before the next is
tried. A gang that already has pods placed stays in their domain.

When no domain takes the gang, a Preferred gang is placed across domains like any other; a Required
one stays pending, and the reason says, per domain, why not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from volsched.actions.util import TaskQueue
from volsched.framework.decisions import Code, Status
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import BoolArray, Job, task_order_key
from volsched.model.constraints import Topology
from volsched.model.resources import EPS
from volsched.model.vocabulary import GangTopology, QueueSpec, Task, TaskStatus

#: How many domains are tried (by placing the gang) per job turn; the rest are reported as not tried.
MAX_DOMAIN_TRIES = 4

_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BOUND, TaskStatus.RUNNING})

PlaceFn = Callable[[Session, QueueSpec, Job, TaskQueue, Statement], tuple[bool, Status | None]]


def _topology(session: Session) -> Topology:
    topo = session.state.get("topology")
    if not isinstance(topo, Topology):
        # A gang's topology key may be a device attribute too (an NVLink domain): each node's devices'.
        catalog = session.devices.catalog
        extra = catalog.node_attributes() if len(catalog) else None
        topo = Topology(session.nodes.specs, extra=extra)
        session.state["topology"] = topo
    return topo


def _need(session: Session, job: Job, pending: list[Task]) -> np.ndarray:
    """What the gang still needs to reach minMember: the first missing pending tasks in task order."""
    missing = max(job.min_member - job.pipelined_count, 0)
    need = session.space.zeros()
    for t in sorted(pending, key=task_order_key)[:missing]:
        need += t.request
    return need


@contextmanager
def _limited_to(session: Session, in_domain: BoolArray, *, domain: str) -> Iterator[None]:
    """Placements in the block go only to the nodes ``in_domain`` (``domain`` names it, ``key=value``, in
    the reason the others are refused); the limit is lifted when the block ends, even by an exception."""
    session.node_limit = in_domain
    session.node_limit_reason = f"node(s) outside the gang's {domain}"
    try:
        yield
    finally:
        session.node_limit = None
        session.node_limit_reason = ""


def place_in_domain(
    session: Session,
    queue: QueueSpec,
    job: Job,
    topology: GangTopology,
    statement: Statement,
    place: PlaceFn,
    *,
    pending: list[Task],
    carried: TaskQueue | None,
) -> tuple[bool, Status | None, TaskQueue]:
    """Place ``job`` in one domain of ``topology.key`` with ``place``; ``pending`` are its pending tasks,
    ``carried`` the task queue left from its earlier turn this session (None on the first). Returns
    place's answer and the task queue left over (for the job's later turns)."""
    nodes = session.nodes
    dom, values = _topology(session).domains(topology.key)
    n_domains = len(values)
    index = nodes.index
    held = {
        int(dom[index[t.node_name]])
        for t in job.tasks.values()
        if t.status in _PLACED and t.node_name in index
    }
    label = topology.key
    if held:
        tasks = carried if carried is not None else TaskQueue(session, pending)
        if len(held) > 1 or n_domains in held or not topology.required:
            # Spread already (a Preferred gang that fell back, or pods placed by hand), or only
            # preferred: the gang's further pods go where they fit best.
            again, reason = place(session, queue, job, tasks, statement)
            return again, reason, tasks
        (d,) = held
        with _limited_to(session, dom == d, domain=f"{label}={values[d]}"):
            again, reason = place(session, queue, job, tasks, statement)
        return again, reason, tasks
    candidates, too_small = _rank(session, job, pending, dom, n_domains, values, label)
    failures: list[str] = []
    for d in candidates[:MAX_DOMAIN_TRIES]:
        tasks = TaskQueue(session, pending)
        with _limited_to(session, dom == d, domain=f"{label}={values[d]}"):
            again, reason = place(session, queue, job, tasks, statement)
        if job.pipelined_count >= job.min_member:
            return again, reason, tasks
        placed = job.pipelined_count
        statement.discard()
        failures.append(
            f"{label}={values[d]}: {placed}/{job.min_member} placed ({reason.render() if reason else 'no task fit'})"
        )
    untried = len(candidates) - min(len(candidates), MAX_DOMAIN_TRIES)
    if untried:
        failures.append(f"{untried} more domain(s) not tried")
    failures.extend(too_small())
    why = Status(Code.UNSCHEDULABLE, "allocate", tuple(failures or ["no node has the label"])).about(
        f"no {label} domain fits the gang ({topology.mode})"
    )
    if topology.required:
        return False, why, TaskQueue(session, [])
    tasks = TaskQueue(session, pending)
    again, reason = place(session, queue, job, tasks, statement)
    if reason is None:
        return again, None, tasks
    across = reason.about("then across domains")
    return again, Status(across.code, across.plugin, (*why.reasons, *across.reasons)), tasks


def _rank(
    session: Session,
    job: Job,
    pending: list[Task],
    dom: np.ndarray,
    n_domains: int,
    values: list[str],
    label: str,
) -> tuple[list[int], Callable[[], list[str]]]:
    """Domains that can hold the gang in total, tightest first; and why the others cannot (in numbers,
    when called)."""
    nodes = session.nodes
    need = _need(session, job, pending)
    asked = np.flatnonzero(need > EPS).tolist()
    # Domain of each ready node; not-ready nodes and nodes without the label go to the extra slot.
    ready_dom = _ready_domains(session, label, dom, n_domains)
    fits = np.ones(n_domains, dtype=bool)
    slack = np.zeros(n_domains)
    total = np.maximum(session.total, EPS)
    idle_by: dict[int, np.ndarray] = {}
    for d in asked:
        by_domain = np.bincount(ready_dom, weights=nodes.idle[:, d], minlength=n_domains + 1)
        idle_by[d] = by_domain
        fits &= by_domain[:n_domains] >= need[d] - EPS
        slack += (by_domain[:n_domains] - need[d]) / total[d]
    candidates = np.flatnonzero(fits)
    ranks = _name_rank(session, label, values)
    order = candidates[np.lexsort((ranks[candidates], slack[candidates]))].tolist()

    def too_small() -> list[str]:
        """Why the other domains are out, in numbers (only worked out when it is reported)."""
        small = np.flatnonzero(~fits)
        if not len(small):
            return []
        parts = []
        for i in small[np.argsort(ranks[small])][:3].tolist():
            d = next(d for d in asked if idle_by[d][i] < need[d] - EPS)
            parts.append(
                f"{label}={values[i]} idle {session.space.names[d]} "
                f"{session.space.describe(d, float(idle_by[d][i]))} < {session.space.describe(d, float(need[d]))}"
            )
        more = f" (+{len(small) - 3} more)" if len(small) > 3 else ""
        return [f"{len(small)} domain(s) too small in total: " + ", ".join(parts) + more]

    return order, too_small


def _ready_domains(session: Session, key: str, dom: np.ndarray, n_domains: int) -> np.ndarray:
    cache = session.state.setdefault("topology_ready_domains", {})
    out: np.ndarray | None = cache.get(key)
    if out is None:
        out = np.where(session.nodes.ready, dom, n_domains)
        cache[key] = out
    return out


def _name_rank(session: Session, key: str, values: list[str]) -> np.ndarray:
    """Each domain's position in name order (ties between equally good domains go by name)."""
    cache = session.state.setdefault("topology_name_rank", {})
    ranks: np.ndarray | None = cache.get(key)
    if ranks is None:
        ranks = np.empty(len(values), dtype=np.intp)
        ranks[np.argsort(np.array(values, dtype=object))] = np.arange(len(values))
        cache[key] = ranks
    return ranks
