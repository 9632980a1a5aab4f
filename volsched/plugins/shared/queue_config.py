"""The session's queue configuration as matrices, and the effective guarantees it implies.

proportion (deserved shares) and overcommit (admission into a full cluster) must hold the same
guarantee for a queue: a guarantee that cannot be met is cut to ``min(guarantee, weighted share among
its siblings)`` (see :func:`volsched.model.fairshare.effective_guarantees`), and a queue is held only
what is left of the cut guarantee, never the raw one. Both read it from here, made once per session
(in ``session.state``): it depends on the queues and the cluster only, not on what jobs ask for, so
the last session's is kept (``ClusterSnapshot.kept``) and used again while the resource space is the
same object and the queues and the cluster's total are equal (its arrays read-only: readers copy).
"""

from __future__ import annotations

import numpy as np

from volsched.framework.points import ExtensionPoints
from volsched.model.fairshare import Matrix, Problem, Tree, build_tree, effective_guarantees
from volsched.model.resources import EPS, Vector
from volsched.model.vocabulary import QueueSpec
from volsched.records import dataclass

_KEY = "queue_config"
#: Where the last session's configuration is kept, with what it was made of (``ClusterSnapshot.kept``).
KEPT = "queue_config"


@dataclass(frozen=True)
class QueueConfig:
    """Queues in name order (rows) over the resource space (columns); ``pods`` and other dimensions
    that do not count toward shares are zero in ``total`` and ``guarantee``."""

    names: list[str]
    specs: list[QueueSpec]
    row: dict[str, int]
    tree: Tree
    total: Vector
    weight: Vector
    #: As configured (masked to the share dimensions).
    guarantee: Matrix
    #: +inf where unset.
    capability: Matrix
    #: The guarantee held for each queue: cut when it cannot be met, or above its capability.
    effective_guarantee: Matrix
    real_capability: Matrix
    problems: list[Problem]
    #: :meth:`held_guarantee` of every queue that guarantees something, in name order (read-only: a
    #: reader that subtracts from one copies it), and the row of each queue whose guarantee is cut.
    guaranteed: dict[str, Vector]
    cut: dict[str, int]

    def held_guarantee(self, queue: str) -> Vector | None:
        """The effective guarantee of ``queue``, or None when it guarantees nothing (or does not exist)."""
        i = self.row.get(queue)
        if i is None or not (self.effective_guarantee[i] > EPS).any():
            return None
        out: Vector = self.effective_guarantee[i].copy()
        return out


def queue_config(session: ExtensionPoints) -> QueueConfig:
    """The session's :class:`QueueConfig`, made on first use."""
    cached: QueueConfig | None = session.state.get(_KEY)
    if cached is not None:
        return cached
    kept = session.snapshot.kept
    made_of = (session.space, dict(session.queues), session.total.tobytes())
    last = kept.get(KEPT)
    if (
        last is not None
        and last[0][0] is made_of[0]
        and last[0][2] == made_of[2]
        and last[0][1] == made_of[1]
    ):
        config: QueueConfig = last[1]
    else:
        config = _made(session)
        kept[KEPT] = (made_of, config)
    session.state[_KEY] = config
    return config


def _made(session: ExtensionPoints) -> QueueConfig:
    """A :class:`QueueConfig` of the session's queues, space and total, its arrays read-only."""
    space = session.space
    mask = space.share_mask
    names = sorted(session.queues)
    specs = [session.queues[n] for n in names]
    n, r = len(specs), len(space)
    guarantee = np.array([space.vector(s.guarantee) for s in specs]).reshape(n, r)
    guarantee = np.where(mask[None, :], guarantee, 0.0)
    capability = np.full((n, r), np.inf)
    for i, s in enumerate(specs):
        # A capability map that leaves a resource out does not limit that resource.
        if s.capability is not None:
            for d, rname in enumerate(space.names):
                if rname in s.capability:
                    capability[i, d] = s.capability[rname]
    total = np.where(mask, session.total, 0.0)
    weight = np.array([s.weight for s in specs], dtype=np.float64)
    tree = build_tree(names, [s.parent for s in specs])
    eg, real, problems = effective_guarantees(
        tree,
        total=total,
        weight=weight,
        guarantee=guarantee,
        capability=capability,
        dims=space.names,
        describe=space.describe,
    )
    config = QueueConfig(
        names=names,
        specs=specs,
        row={name: i for i, name in enumerate(names)},
        tree=tree,
        total=total,
        weight=weight,
        guarantee=guarantee,
        capability=capability,
        effective_guarantee=eg,
        real_capability=real,
        problems=problems,
        guaranteed={},
        cut={name: i for i, name in enumerate(names) if (eg[i] < guarantee[i] - EPS).any()},
    )
    for name in names:
        held = config.held_guarantee(name)
        if held is not None:
            held.setflags(write=False)
            config.guaranteed[name] = held
    for matrix in (total, weight, guarantee, capability, eg, real):
        matrix.setflags(write=False)
    return config
