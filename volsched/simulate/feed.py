"""The time mode's feed: a replay's input sorted by when it comes. The objects there from the start
(:attr:`Feed.static`), the replay's origin (the earliest arrival), the workload objects and a trace's jobs
in the order they arrive (a Job's pods the create latency after it), the nodes that join after the start
and the times the nodes leave.

Not the clock nor what the arrivals do: the replay's loop (:mod:`volsched.simulate.replay`) asks the
feed what is due and puts it into the cache.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Sequence

from volsched.model.decode import object_ref, parse_time
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.scalars import duration_seconds
from volsched.simulate.annotations import REMOVE_ANNOTATION, pod_duration
from volsched.simulate.documents import EPOCH, Document, iso
from volsched.simulate.latencies import Latencies
from volsched.simulate.trace import TraceJob
from volsched.simulate.traceobjects import priority_classes

#: What arrives at one instant: (time, files before trace jobs, a batch of documents, or a trace's job).
Arrival = tuple[float, int, list[Document] | None, TraceJob | None]

#: Kinds that arrive at their creationTimestamp; every other kind is there from the start, but for a
#: Node made after the replay's start (the earliest arrival of these), which is added then.
ARRIVING_KINDS = frozenset({"Pod", "PodGroup", "Job"})


def arrival(doc: Document) -> float | None:
    """When a workload object arrives (its creationTimestamp), None when it has none."""
    meta = doc.obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("creationTimestamp") in (None, ""):
        return None
    return parse_time(meta["creationTimestamp"], where=f"{doc.source}: metadata.creationTimestamp")


def _check_duration(doc: Document) -> None:
    """A Pod's or a Job's pod template's duration annotation, checked (:class:`InputError` naming it)."""
    obj = doc.obj
    template = obj
    if obj.get("kind") == "Job":
        spec = obj.get("spec")
        template = (spec.get("template") if isinstance(spec, dict) else None) or {}
    if isinstance(template, dict) and isinstance(template.get("metadata") or {}, dict):
        try:
            pod_duration(template, where=object_ref(obj))
        except InputError as exc:
            raise InputError(exc.message, source=doc.source) from None


class Feed:
    """``documents`` and a ``trace``'s jobs sorted by time (see the module's docstring); every duration
    and removal checked now, not when it arrives hours into the replay. ``latest``: the last instant the
    replay may start at."""

    def __init__(
        self,
        documents: Iterable[Document],
        trace: Sequence[TraceJob],
        *,
        latencies: Latencies,
        latest: float,
    ) -> None:
        static: list[Document] = []
        timed: list[tuple[float, int, Document]] = []
        untimed: list[Document] = []
        for i, doc in enumerate(documents):
            if doc.obj.get("kind") not in ARRIVING_KINDS:
                static.append(doc)
                continue
            _check_duration(doc)  # now, not when it arrives hours into the replay
            if (at := arrival(doc)) is None:
                untimed.append(doc)
            else:
                timed.append((at, i, doc))
        #: The replay's origin (Unix seconds): the earliest arrival.
        self.start = min((t for t, _, _ in timed), default=EPOCH)
        if self.start > latest:
            raise InputError(
                f"the replay would start at {iso(self.start)} (its earliest creationTimestamp), past "
                f"{iso(latest)}, the last instant a replay runs to (an object's time stops at the year 9999)"
            )
        # A Job's pods come create latency after it (the Job controller); its wait counts from the Job.
        if latencies.create > 0:
            draw = latencies.drawer("create")
            timed = [
                (at + draw(latencies.create) if d.obj.get("kind") == "Job" else at, i, d)
                for at, i, d in timed
            ]
        # Nodes made after the start arrive then (a node added); any may go (a node removed).
        self._removals: list[tuple[float, str]] = []
        for i, doc in enumerate(static):
            if doc.obj.get("kind") != "Node":
                continue
            meta = doc.obj.get("metadata") if isinstance(doc.obj.get("metadata"), dict) else {}
            after = ((meta or {}).get("annotations") or {}).get(REMOVE_ANNOTATION)
            if after is not None:
                seconds = duration_seconds(after)
                if seconds is None or seconds < 0:
                    raise InputError(
                        f"Node {(meta or {}).get('name')}: annotation {REMOVE_ANNOTATION}: expected a duration "
                        f"from the replay's start like 90m or 6h, got {after!r}",
                        source=doc.source,
                    )
                heapq.heappush(self._removals, (self.start + seconds, str((meta or {}).get("name"))))
            if (at := arrival(doc)) is not None and at > self.start:
                timed.append((at, i - len(static), doc))  # before the workloads of its instant
        static = [d for d in static if not (d.obj.get("kind") == "Node" and (arrival(d) or 0.0) > self.start)]
        have = {meta_of(d.obj).get("name") for d in static if d.obj.get("kind") == "PriorityClass"}
        static += [
            Document("trace: priority", pc)
            for pc in priority_classes(trace)
            if pc["metadata"]["name"] not in have
        ]
        #: What is there from the start: the cluster's objects, a trace's priority classes.
        self.static = static
        # Arrivals in time order (input order breaks ties); those without a time come at the start.
        batches: dict[float, list[Document]] = {}
        for at, _, doc in sorted(timed, key=lambda x: (x[0], x[1])):
            batches.setdefault(at, []).append(doc)
        if untimed:
            batches.setdefault(self.start, [])[:0] = untimed
        files = ((at, 0, docs, None) for at, docs in sorted(batches.items()))
        jobs = ((self.start + job.submit, 1, None, job) for job in trace)
        self._arrivals: Iterator[Arrival] = heapq.merge(files, jobs, key=lambda a: (a[0], a[1]))
        self._next: Arrival | None = next(self._arrivals, None)

    def next_event(self) -> float:
        """When the next arrival or node removal comes (infinity: none is left)."""
        nxt = self._next[0] if self._next is not None else math.inf
        gone = self._removals[0][0] if self._removals else math.inf
        return min(nxt, gone)

    def arrivals(self, now: float) -> Iterator[Arrival]:
        """Each arrival due by ``now``, in order, taken off the feed as it is handed out."""
        while self._next is not None and self._next[0] <= now:
            arrived = self._next
            self._next = next(self._arrivals, None)
            yield arrived

    def removals(self, now: float) -> Iterator[tuple[float, str]]:
        """Each node removal due by ``now`` (when, the node's name), in order."""
        while self._removals and self._removals[0][0] <= now:
            yield heapq.heappop(self._removals)
