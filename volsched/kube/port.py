"""The cycle's port to a real cluster: :class:`~volsched.cycle.Port` over a :class:`KubeWriter`.

Binds and evictions go out through the writer (its thread pool, token bucket and Lease fence: a write
this replica may no longer make comes back FENCED, unsent). ``write_status`` also creates the PodGroups
that stand for controller owners' pods and warns on Volcano objects shadowed by ours, as the cache
shows them, then writes the session's status, conditions and events and one event on each object the
cache refused. Synchronous: every call returns all its outcomes, so ``settle`` has nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cycle import BindOutcome, EvictOutcome, StatusReport
from volsched.framework.decisions import Bind, Event, Evict, SessionResult
from volsched.kube.podgroups import ConflictReporter, PodGroupCreator
from volsched.kube.writer import EventTarget, KubeWriter

Raw = Mapping[str, Any]

#: The event reason on an object the cache refused (a negative quantity, a garbage namespace weight).
REJECTED = "Rejected"


class KubePort:
    def __init__(self, writer: KubeWriter) -> None:
        self.writer = writer
        self.podgroups = PodGroupCreator(writer)
        self.conflicts = ConflictReporter(writer)

    def bind(self, binds: Sequence[Bind], pods: Mapping[str, Raw]) -> list[BindOutcome]:
        return self.writer.bind_all(binds, pods)

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        return self.writer.evict_all(evictions, pods)

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        return [], []

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        state = feeder.state
        errors = self.podgroups.ensure(state.last_derived)
        errors += self.conflicts.report(dict(state.conflicts), dict(state.volcano_uids))
        writes, events, status_errors = self.writer.write_status(
            result,
            queues={name: q.api_group for name, q in list(state.queues.items())},
            podgroups={key: pg.api_group for key, pg in list(state.podgroups.items())},
            uids={key: pg.uid for key, pg in list(state.podgroups.items())},
            pods=feeder.pods(),
            extra_events=rejection_events(feeder),
        )
        return StatusReport(writes=writes, events=events, errors=errors + status_errors)


def rejection_events(feeder: Feeder) -> list[tuple[EventTarget, Event]]:
    """An event on each object the cache refused (the writer sends each message once)."""
    out = []
    for r in feeder.rejected.copy().values():
        target = EventTarget(r.kind, r.api_version, r.namespace, r.name, r.uid)
        event = Event(kind=r.kind, namespace=r.namespace, name=r.name, reason=REJECTED, message=r.message)
        out.append((target, event))
    return out
