"""rescheduling: pick pods to move (the shuffle action evicts them): by measured load, by the
descheduler's strategies, or both.

This module parses the arguments and combines the strategies (``strategies/``, one module each; what
they see of the session in ``context.py``, their params read by ``params.py``) with the default evictor
(``evictor.py``); it evicts nothing itself (``shuffle`` does) and answers at most once per
``interval``. The user's guide: docs/rescheduling.md; notes: docs/design/modules.md#rescheduling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import dominant_share
from volsched.model.errors import InputError
from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.rescheduling.context import Context, Selector
from volsched.plugins.rescheduling.evictor import NO_EVICTION_ANNOTATION, Cluster, Evictor
from volsched.plugins.rescheduling.params import Params
from volsched.plugins.rescheduling.strategies import SELECTORS
from volsched.records import dataclass

DEFAULT_INTERVAL = 300.0
DEFAULT_METRICS_PERIOD = 300.0
#: Where the time of the last answer is kept in ``session.carryover``.
LAST_RUN_KEY = "rescheduling.last_run"
#: The per-session map ``task key -> reason`` the shuffle action reads.
VICTIM_REASONS = "victim_reasons"

FILTERS = ("offlineOnly",)
#: Which QoS class goes first among pods of one priority.
QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
ORDERS = ("lowPriorityFirst", "shortLifeTimeFirst", "bigObjectFirst", "moreReplicasFirst")


@dataclass(frozen=True)
class Strategy:
    """One rescheduling strategy of the config, with the pods it selects."""

    name: str
    selector: Selector | None = None


def _canonical(name: str) -> str:
    return name[:1].lower() + name[1:]


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
        name = _canonical(entry["name"])
        if name not in known:
            raise InputError(f"{at}: unknown strategy {entry['name']!r}; known: {', '.join(known)}")
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
        parse = SELECTORS.get(name)
        if parse is None:
            if params:
                raise InputError(f"{at} ({name}): takes no params, got {', '.join(sorted(map(str, params)))}")
            out.append(Strategy(name))
            continue
        reader = Params(params, f"{at} ({name})")
        selector = parse(reader)
        reader.done()
        out.append(Strategy(name, selector))
    if not any(s.selector is not None for s in out):
        raise InputError(
            f"{where}: no strategy decides what to move ({', '.join(SELECTORS)}); "
            f"{', '.join(s.name for s in out)} only filter and order, so nothing would ever be evicted"
        )
    return out


def _label_selector(arguments: Arguments) -> tuple[dict[str, str], dict[str, Any] | None]:
    """The plugin's ``labelSelector``: a map of labels (Volcano's form), or matchLabels and
    matchExpressions (the descheduler's evictor's form, returned as a map to parse)."""
    where = "plugin rescheduling: argument labelSelector"
    empty = arguments.raw("labelSelector")
    if empty not in (None, {}):
        raise InputError(f"{where}: expected a map of labels, got {empty!r}")
    items = dict(arguments.with_prefix("labelSelector."))
    parts = ("matchLabels", "matchExpressions")
    if any(k in parts or k.startswith("matchLabels.") for k in items):
        selector: dict[str, Any] = {"matchLabels": {}}
        for key, value in items.items():
            if key.startswith("matchLabels."):
                selector["matchLabels"][key.removeprefix("matchLabels.")] = value
            elif key in parts:
                selector[key] = value or None
            else:
                raise InputError(
                    f"{where}.{key}: a selector with matchLabels or matchExpressions takes nothing else"
                )
        return {}, selector
    labels: dict[str, str] = {}
    for key, value in items.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InputError(f"{where}.{key}: expected a string, got {value!r}")
        labels[key] = str(value)
    return labels, None


def _is_offline(task: Task) -> bool:
    """Marked preemptable: volsched's annotation, or Volcano's annotation or label (see ``Task.preemptable``)."""
    return task.preemptable is True


@register_plugin
class Rescheduling(BasePlugin):
    name: ClassVar[str] = "rescheduling"
    #: It reads its interval and pods' ages, kept in the carryover.
    reads_clock: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.interval = arguments.duration("interval", DEFAULT_INTERVAL, allow_zero=True)
        self.metrics_period = arguments.duration("metricsPeriod", DEFAULT_METRICS_PERIOD)
        self.strategies = parse_strategies(arguments.raw("strategies"))
        queues = arguments.raw("queueSelector")
        if queues is not None and (
            not isinstance(queues, list) or not all(isinstance(q, str) for q in queues)
        ):
            raise InputError(
                f"plugin rescheduling: argument queueSelector: expected a list of queue names, got {queues!r}"
            )
        self.queues: frozenset[str] | None = frozenset(queues) if queues else None
        self.labels, selector = _label_selector(arguments)
        self.evictor = Evictor.parse(arguments, label_selector=selector)

    def on_session_open(self, session: ExtensionPoints) -> None:
        def victims() -> list[Task]:
            cached: list[Task] | None = session.state.get("rescheduling.victims")
            if cached is not None:
                return cached
            carry = session.carryover
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

    def _cluster(self, session: ExtensionPoints) -> Cluster:
        counts: dict[tuple[str, str], int] | None = None

        def replicas(task: Task) -> int:
            nonlocal counts
            if counts is None:
                counts = {}
                ours = (t for job in session.jobs.values() for t in job.tasks.values())
                for t in chain(ours, session.snapshot.foreign_tasks):
                    if t.owner is not None:
                        key = (t.namespace, t.owner)
                        counts[key] = counts.get(key, 0) + 1
            return counts.get((task.namespace, task.owner or ""), 0)

        budgets = session.snapshot.budgets

        def covered(task: Task) -> bool:
            return any(b.selects(task.namespace, task.labels) for b in budgets)

        labels = session.snapshot.namespace_labels
        return Cluster(
            now=session.now,
            replicas=replicas,
            covered=covered,
            namespace_labels=lambda ns: labels.get(ns, {}),
        )

    def _candidate(
        self,
        session: ExtensionPoints,
        task: Task,
        statuses: frozenset[TaskStatus],
        *,
        cluster: Cluster,
        nodes: np.ndarray[Any, np.dtype[np.bool_]],
    ) -> bool:
        if task.status not in statuses or not task.schedulable_by_us:
            return False
        i = session.nodes.index.get(task.node_name or "")
        if i is not None and not nodes[i]:
            return False  # outside nodeSelector
        if self.evictor.protects(task, cluster) is not None:
            return False
        if self.queues is not None:
            job = session.jobs.get(task.job_key)
            if job is None or job.queue not in self.queues:
                return False
        if any(task.labels.get(k) != v for k, v in self.labels.items()):
            return False
        return not (any(s.name == "offlineOnly" for s in self.strategies) and not _is_offline(task))

    def _order_key(self, session: ExtensionPoints) -> Callable[[Task], tuple[Any, ...]]:
        share = dominant_share(session.total, session.space.share_mask)

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
                parts.append(lambda t: -share(t.request))
            elif s.name == "moreReplicasFirst":
                parts.append(lambda t: -replicas(t))

        def key(t: Task) -> tuple[Any, ...]:
            # Among pods of one priority, BestEffort first, then Burstable, and those annotated
            # prefer-no-eviction last among their equals, as the descheduler orders them.
            return (
                *(p(t) for p in parts),
                t.priority,
                QOS_RANK.get(t.runtime.qos, 1),
                NO_EVICTION_ANNOTATION in t.annotations,
                t.key,
            )

        return key

    def _select(self, session: ExtensionPoints) -> list[Task]:
        reasons: dict[str, str] = session.state.setdefault(VICTIM_REASONS, {})
        cluster = self._cluster(session)
        sel = self.evictor.node_selector
        nodes = np.array([sel is None or sel.matches(s.labels) for s in session.nodes.specs], dtype=bool)
        ctx = Context(
            session=session,
            candidate=lambda t, statuses: self._candidate(session, t, statuses, cluster=cluster, nodes=nodes),
            key=self._order_key(session),
            metrics_period=self.metrics_period,
            evictor=self.evictor,
        )
        out: list[Task] = []
        for s in self.strategies:
            if s.selector is None:
                continue
            for task, reason in s.selector.select(ctx):
                if task.key not in reasons:
                    reasons[task.key] = reason
                    out.append(task)
        return out
