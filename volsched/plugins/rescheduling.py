"""rescheduling: pick running pods to move off overloaded nodes, by measured load (the shuffle action
evicts them).

Arguments (as in Volcano's rescheduling design)::

    - name: rescheduling
      arguments:
        interval: 5m            # answer at most once per interval (default 5m)
        metricsPeriod: 5m       # usage measured longer ago than this is ignored (default 5m)
        strategies:             # required, in order
        - name: offlineOnly
        - name: lowPriorityFirst
        - name: lowNodeUtilization
          params:
            thresholds: {cpu: 20, memory: 20, pods: 20}
            targetThresholds: {cpu: 50, memory: 50, pods: 50}
        queueSelector: [default, test-queue]   # optional: only pods of jobs in these queues
        labelSelector: {business: offline}     # optional: only pods with all these labels

The strategies play three parts:

* ``lowNodeUtilization`` decides how much moves and from where (descheduler semantics on estimated
  real usage, see ``volsched.plugins.usage``): a node is *underutilized* when below ``thresholds`` on
  every resource, *overutilized* when above ``targetThresholds`` on any (a resource left out has 100
  for both; ``pods`` is the pod count as percent of the node's max pods). Pods leave overutilized nodes,
  most loaded node first, while the node is still over target and the underutilized nodes still have
  room up to their target on every resource; each pod is taken to free its request. Nothing moves
  when either set is empty. Nodes without fresh usage data are in neither set; cordoned or not-ready
  nodes are never underutilized.
* ``offlineOnly`` narrows the candidates to pods annotated ``scheduling.volsched.io/preemptable: "true"``
  (``volcano.sh/preemptable`` is accepted too).
* ``lowPriorityFirst``, ``shortLifeTimeFirst`` (latest start first), ``bigObjectFirst`` (largest dominant
  resource share of the cluster first) and ``moreReplicasFirst`` (jobs with most pods first) order the
  candidates; the first listed is the strongest key. Ties: lower priority, then name.

Strategies without ``lowNodeUtilization`` would evict nothing, so such a config is rejected.
Candidates are running pods of this scheduler that have a controller (an owner that recreates them;
standalone pods are never moved) and are not system-critical.

The plugin answers at most once per ``interval``: the time it last answered is kept in the snapshot's
``carryover`` (which the cache keeps across sessions). The reason for each pod is left in
``session.state["victim_reasons"]`` for the action. PodDisruptionBudgets are enforced by the Eviction
API in a real cluster; the simulator does not model them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import Session
from volsched.model.cluster import dominant_share
from volsched.model.errors import InputError
from volsched.model.objects import Task, TaskStatus
from volsched.model.resources import PODS
from volsched.plugins.usage import build_estimate, duration_argument

DEFAULT_INTERVAL = 300.0
DEFAULT_METRICS_PERIOD = 300.0
#: Where the time of the last answer is kept in ``snapshot.carryover``.
LAST_RUN_KEY = "rescheduling.last_run"
#: The per-session map ``task key -> reason`` the shuffle action reads.
VICTIM_REASONS = "victim_reasons"

SELECTORS = ("lowNodeUtilization",)
FILTERS = ("offlineOnly",)
ORDERS = ("lowPriorityFirst", "shortLifeTimeFirst", "bigObjectFirst", "moreReplicasFirst")
UTILIZATION_RESOURCES = ("cpu", "memory", "pods")
_RESOURCE_ALIASES = {"cpu": "cpu", "memory": "memory", "mem": "memory", "pods": "pods"}


@dataclass(frozen=True)
class Strategy:
    name: str
    thresholds: tuple[float, float, float] = (100.0, 100.0, 100.0)
    targets: tuple[float, float, float] = (100.0, 100.0, 100.0)


def _percent_map(raw: Any, where: str) -> tuple[float, float, float]:
    if not isinstance(raw, Mapping) or not raw:
        raise InputError(f"{where}: expected a map of cpu, memory, pods to percentages")
    out = dict.fromkeys(UTILIZATION_RESOURCES, 100.0)
    for key, value in raw.items():
        name = _RESOURCE_ALIASES.get(str(key))
        if name is None:
            raise InputError(f"{where}: unknown resource {key!r}; known: cpu, memory, pods")
        if isinstance(value, str):
            try:
                value = float(value.rstrip("%"))
            except ValueError:
                raise InputError(f"{where}.{key}: expected a percentage 0..100, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            raise InputError(f"{where}.{key}: expected a percentage 0..100, got {value!r}")
        out[name] = float(value)
    return (out["cpu"], out["memory"], out["pods"])


def parse_strategies(raw: Any) -> list[Strategy]:
    where = "plugin rescheduling: argument strategies"
    known = (*SELECTORS, *FILTERS, *ORDERS)
    if not isinstance(raw, list) or not raw:
        raise InputError(
            f"{where}: expected a non-empty list of {{name, params}}; known names: {', '.join(known)}"
        )
    out: list[Strategy] = []
    for i, entry in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise InputError(f"{at}: expected a map with a name")
        name = entry["name"]
        if name not in known:
            raise InputError(f"{at}: unknown strategy {name!r}; known: {', '.join(known)}")
        if any(s.name == name for s in out):
            raise InputError(f"{at}: strategy {name!r} is listed twice")
        extra = set(entry) - {"name", "params"}
        if extra:
            raise InputError(
                f"{at} ({name}): unknown field(s) {', '.join(sorted(extra))}; known: name, params"
            )
        params = entry.get("params") or {}
        if not isinstance(params, Mapping):
            raise InputError(f"{at} ({name}): params must be a map")
        if name != "lowNodeUtilization":
            if params:
                raise InputError(f"{at} ({name}): takes no params, got {', '.join(sorted(map(str, params)))}")
            out.append(Strategy(name))
            continue
        unknown = set(params) - {"thresholds", "targetThresholds"}
        if unknown:
            raise InputError(
                f"{at} ({name}): unknown param(s) {', '.join(sorted(map(str, unknown)))}; "
                "known: targetThresholds, thresholds"
            )
        low = _percent_map(params.get("thresholds"), f"{at}.params.thresholds")
        high = _percent_map(params.get("targetThresholds"), f"{at}.params.targetThresholds")
        for r, lo, hi in zip(UTILIZATION_RESOURCES, low, high, strict=True):
            if lo > hi:
                raise InputError(
                    f"{at}.params: thresholds.{r} ({lo:g}) is above targetThresholds.{r} ({hi:g})"
                )
        out.append(Strategy(name, low, high))
    if not any(s.name in SELECTORS for s in out):
        raise InputError(
            f"{where}: no strategy decides what to move ({', '.join(SELECTORS)}); "
            f"{', '.join(s.name for s in out)} only filter and order, so nothing would ever be evicted"
        )
    return out


def _is_offline(task: Task) -> bool:
    return task.preemptable is True or task.annotations.get("volcano.sh/preemptable", "").lower() == "true"


@register_plugin
class Rescheduling(BasePlugin):
    name: ClassVar[str] = "rescheduling"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.interval = duration_argument(arguments, "interval", DEFAULT_INTERVAL, allow_zero=True)
        self.metrics_period = duration_argument(arguments, "metricsPeriod", DEFAULT_METRICS_PERIOD)
        self.strategies = parse_strategies(arguments.raw("strategies"))
        queues = arguments.raw("queueSelector")
        if queues is not None and (
            not isinstance(queues, list) or not all(isinstance(q, str) for q in queues)
        ):
            raise InputError(
                f"plugin rescheduling: argument queueSelector: expected a list of queue names, got {queues!r}"
            )
        self.queues: frozenset[str] | None = frozenset(queues) if queues else None
        empty = arguments.raw("labelSelector")
        if empty not in (None, {}):
            raise InputError(
                f"plugin rescheduling: argument labelSelector: expected a map of labels, got {empty!r}"
            )
        self.labels: dict[str, str] = {}
        for key, value in arguments.with_prefix("labelSelector."):
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise InputError(
                    f"plugin rescheduling: argument labelSelector.{key}: expected a string, got {value!r}"
                )
            self.labels[key] = str(value)

    def on_session_open(self, session: Session) -> None:
        def victims() -> list[Task]:
            cached: list[Task] | None = session.state.get("rescheduling.victims")
            if cached is not None:
                return cached
            carry = session.snapshot.carryover
            last = carry.get(LAST_RUN_KEY)
            if last is not None and session.now - float(last) < self.interval:
                out: list[Task] = []
            else:
                carry[LAST_RUN_KEY] = session.now
                out = self._select(session)
            session.state["rescheduling.victims"] = out
            return out

        session.add_victim_tasks_fn(self.name, victims)

    # --- choosing ----------------------------------------------------------------------------------

    def _candidate(self, session: Session, task: Task) -> bool:
        if task.status is not TaskStatus.RUNNING or not task.schedulable_by_us:
            return False
        if task.owner is None or task.critical:
            return False
        if self.queues is not None:
            job = session.jobs.get(task.job_key)
            if job is None or job.queue not in self.queues:
                return False
        if any(task.labels.get(k) != v for k, v in self.labels.items()):
            return False
        return not (any(s.name == "offlineOnly" for s in self.strategies) and not _is_offline(task))

    def _order_key(self, session: Session) -> Callable[[Task], tuple[Any, ...]]:
        total = session.total
        mask = session.space.share_mask

        def replicas(t: Task) -> int:
            job = session.jobs.get(t.job_key)
            return len(job.tasks) if job is not None else 1

        parts: list[Callable[[Task], Any]] = []
        for s in self.strategies:
            if s.name == "lowPriorityFirst":
                parts.append(lambda t: t.priority)
            elif s.name == "shortLifeTimeFirst":
                parts.append(lambda t: -(t.start_time or t.creation))
            elif s.name == "bigObjectFirst":
                parts.append(lambda t: -dominant_share(t.request, total, mask))
            elif s.name == "moreReplicasFirst":
                parts.append(lambda t: -replicas(t))

        def key(t: Task) -> tuple[Any, ...]:
            return (*(p(t) for p in parts), t.priority, t.key)

        return key

    def _select(self, session: Session) -> list[Task]:
        reasons: dict[str, str] = session.state.setdefault(VICTIM_REASONS, {})
        key = self._order_key(session)
        out: list[Task] = []
        for s in self.strategies:
            if s.name == "lowNodeUtilization":
                for task, reason in self._low_node_utilization(session, s, key):
                    if task.key not in reasons:
                        reasons[task.key] = reason
                        out.append(task)
        return out

    def _low_node_utilization(
        self, session: Session, strategy: Strategy, key: Callable[[Task], tuple[Any, ...]]
    ) -> list[tuple[Task, str]]:
        nodes = session.nodes
        est = build_estimate(session, self.metrics_period)
        if not est.any_fresh:
            return []
        n = len(nodes)
        pods = session.space.index(PODS)
        dims = np.array([*est.dims, pods], dtype=np.intp)
        usage = np.zeros((n, 3))
        usage[:, :2] = est.estimate(np.arange(n, dtype=np.intp))
        alloc = nodes.allocatable[:, dims]
        with np.errstate(divide="ignore", invalid="ignore"):
            usage[:, 2] = np.where(alloc[:, 2] > 0, nodes.used[:, pods] / alloc[:, 2] * 100.0, 100.0)
        low = np.array(strategy.thresholds)
        high = np.array(strategy.targets)
        schedulable = np.array([not s.unschedulable for s in nodes.specs], dtype=bool)
        under = est.fresh & nodes.ready & schedulable & np.all(usage < low, axis=1)
        over = est.fresh & np.any(usage > high, axis=1)
        if not under.any() or not over.any():
            return []
        # Room on the underutilized nodes up to the target, as amounts of each resource.
        room = ((high - usage[under]).clip(min=0.0) / 100.0 * alloc[under]).sum(axis=0)
        by_node: dict[int, list[Task]] = {}
        for job in session.jobs.values():
            for t in job.tasks.values():
                where = nodes.index.get(t.node_name or "")
                if where is not None and over[where] and self._candidate(session, t):
                    by_node.setdefault(where, []).append(t)
        order = sorted(
            (int(j) for j in np.flatnonzero(over)), key=lambda j: (-float(usage[j].sum()), nodes.names[j])
        )
        out: list[tuple[Task, str]] = []
        for i in order:
            before = usage[i].copy()
            for t in sorted(by_node.get(i, []), key=key):
                if not np.any(usage[i] > high) or np.any(room <= 0):
                    break
                request = t.request[dims]
                with np.errstate(divide="ignore", invalid="ignore"):
                    usage[i] -= np.where(alloc[i] > 0, request / alloc[i] * 100.0, 0.0)
                room -= request
                worst = int(np.argmax(before - high))
                out.append(
                    (
                        t,
                        f"rescheduling (lowNodeUtilization): node {nodes.names[i]} is overutilized "
                        f"({UTILIZATION_RESOURCES[worst]} {before[worst]:.0f}% > target {high[worst]:g}%)",
                    )
                )
            if np.any(room <= 0):
                break
        return out
