"""Each job's validity and order key, kept from one session to the next for the jobs no session changed.

A backlog's every waiting job is asked its validity (``job_valid``) and keyed in job order (``job_key``)
by the actions of every session; a job's answers read the job alone (its fields, its PodGroup, its tasks),
and, for the plugins that declare ``job_answers_kept``, nothing else but the session's Queues, the
namespaces' labels and the ready nodes' total. :class:`KeptAnswers` keeps what a session asked of the
jobs it did not change (``job_changed``: a task of theirs moved) and hands it to the next session where
its snapshot is the next build of the same builder (``ClusterSnapshot.built``), the job is not among
those whose tasks or PodGroup changed since (``ClusterSnapshot.touched``; a change of priority classes,
namespaces' queues or resource names builds from scratch, with no ``touched``), and the config, the
Queues, the labels and the total are the last session's. An optimisation only: an answer taken again is
the answer asked anew. Not kept: anything an action decides (refusals, votes, shares), which read what
other jobs hold.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence, Set
from typing import Any

import numpy as np

from volsched.framework.session import Session
from volsched.model.cluster import Job, key_of

#: Where the answers are kept (``session.state`` and ``ClusterSnapshot.kept``).
_KEPT = "volsched.actions.kept.answers"
#: The points whose plugins must declare ``job_answers_kept`` (whether a job starves is kept within a
#: session: ``volsched.actions.eviction.starving_by_queue``).
_POINTS = ("job_valid", "job_order", "job_starving")


class KeptAnswers:
    """What a session asked of the jobs it did not change, and what the last one did (see the module
    docstring): validity through the session's own memo (``jobs_answered``, taken again with
    ``jobs_known_valid``), order keys here (:meth:`keys`)."""

    __slots__ = ("before", "built", "changed", "config", "gone", "labels", "now", "queues", "total", "valid")

    def __init__(self, session: Session) -> None:
        self.built = session.snapshot.built
        self.config = session.config
        self.queues = session.queues
        self.labels = session.snapshot.namespace_labels
        self.total = session.total
        #: The session's validity memo and the jobs it changed (live: read by the next session).
        self.valid, self.changed = session.jobs_answered()
        #: Each job's order key as this session asked it, of the jobs it had not changed then.
        self.now: dict[str, Any] = {}
        #: The last session's keys, and the jobs whose kept answers do not hold (changed by the last
        #: session or since, or by this one before it took them).
        self.before: dict[str, Any] = {}
        self.gone: Set[str] = frozenset()

    @classmethod
    def of(cls, session: Session) -> KeptAnswers | None:
        """The session's (made at its first ask: the last session's validity taken into the session's
        memo where it holds); None where a plugin that answers for jobs does not declare
        ``job_answers_kept``, or the session's job order is a comparator's."""
        out: KeptAnswers | bool | None = session.state.get(_KEPT)
        if out is None:
            out = cls._made(session)
            session.state[_KEPT] = False if out is None else out
        return out if isinstance(out, KeptAnswers) else None

    @classmethod
    def _made(cls, session: Session) -> KeptAnswers | None:
        plugins = {p.name: p for p in session.plugins}
        for point in _POINTS:
            for name, keyed in session.registered(point):
                plugin = plugins.get(name)
                if plugin is None or not getattr(plugin, "job_answers_kept", False):
                    return None
                if point == "job_order" and not keyed:
                    return None
        out = cls(session)
        snapshot = session.snapshot
        last = snapshot.kept.get(_KEPT)
        touched = snapshot.touched
        if (
            isinstance(last, KeptAnswers)
            and touched is not None
            and snapshot.follows(last.built)
            and last.config is session.config
            and last.queues == session.queues
            and last.labels == snapshot.namespace_labels
            # (the node table's memo keeps its total while the nodes' specs are the same: the very array,
            # no comparison of its values)
            and (last.total is session.total or np.array_equal(last.total, session.total))
        ):
            gone = out.gone = last.changed | touched | out.changed
            session.jobs_known_valid((k, v) for k, v in last.valid.items() if k not in gone)
            out.before = last.now
        if snapshot.built:
            snapshot.kept[_KEPT] = out
        return out

    def keys(self, many: Callable[[Sequence[Job]], list[Any]], jobs: Sequence[Job]) -> list[Any]:
        """``many(jobs)`` (the session's job order keys of a list), the keys kept for jobs that hold them
        taken again, the others asked, and those of the jobs this session has not changed kept."""
        keys = list(map(key_of, jobs))
        out = list(map(self.before.get, keys))
        changed = self.changed
        for drop in (self.gone, changed):
            if drop:
                for at in itertools.compress(range(len(keys)), map(drop.__contains__, keys)):
                    out[at] = None
        ask = [at for at, key in enumerate(out) if key is None]
        if ask:
            for at, key in zip(ask, many([jobs[at] for at in ask]), strict=True):
                out[at] = key
        if not changed:
            self.now.update(zip(keys, out, strict=True))
        else:
            self.now.update((k, v) for k, v in zip(keys, out, strict=True) if k not in changed)
        return out


def job_keys(session: Session) -> Callable[[Sequence[Job]], list[Any]]:
    """The session's job order keys of a list of jobs (``session.job_keys()``), with those kept from the
    last session taken again (:class:`KeptAnswers`)."""
    many = session.job_keys()
    kept = KeptAnswers.of(session) if isinstance(session, Session) else None  # (not a stand-in's)
    if kept is None:
        return many
    return lambda jobs: kept.keys(many, jobs)


def take(session: Session) -> None:
    """Take the last session's answers into this one where they hold (once a session: an action calls it
    before it asks its jobs' validity or keys)."""
    KeptAnswers.of(session)
