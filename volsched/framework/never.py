"""Whether a gang can never run as it stands (:func:`never_fits`), whatever else leaves the cluster: what the
session's close tells the gang first (the runner), and what keeps it from being the job the reservation
plugin holds nodes for (no room it could plan would ever admit it). Reads the session's state only."""

from __future__ import annotations

import numpy as np

from volsched.framework.messages import amounts
from volsched.framework.points import ExtensionPoints
from volsched.model.cluster import Job
from volsched.model.resources import EPS

#: The first words of a refusal that no waiting can end (see :func:`never_fits`).
NEVER = "can never run as it stands"


def never_fits(
    session: ExtensionPoints, job: Job, memo: dict[tuple[bytes, bytes, int, str], str | None]
) -> str | None:
    """Why a gang can never run as it stands, whatever else leaves the cluster (in one plain sentence),
    or None when it may run once room is made: its minimum (minResources, or its minMember smallest pods)
    asks more than its queue (or a parent) may ever hold, or than all the ready nodes have; or fewer than
    minMember of its pods fit on all the ready nodes even were they empty (each pod counted at the least
    any of its pods asks, so this never says "never" of a gang that could fit). ``memo``: answers by the
    gang's shape, for one session."""
    space = session.space
    need = job.min_request
    tasks = list(job.tasks.values())
    first = tasks[0].request if tasks else space.zeros()
    if all(t.request is first for t in tasks):  # one template's pods share one request vector
        smallest = first
    else:
        smallest = np.min(np.stack([t.request for t in tasks]), axis=0)
    key = (need.tobytes(), smallest.tobytes(), job.min_member, job.queue)
    if key in memo:
        return memo[key]
    what = "its minResources ask" if job.min_resources_map is not None else "its minMember pods ask"
    verdict: str | None = None
    seen: set[str] = set()
    name: str | None = job.queue
    while name is not None and name not in seen and verdict is None:  # the queue and its parents
        seen.add(name)
        queue = session.queues.get(name)
        if queue is None:
            break
        over = {
            r: (float(need[space.index(r)]), cap)
            for r, cap in (queue.capability or {}).items()
            if r in space.names and need[space.index(r)] > cap + EPS
        }
        if over:
            verdict = (
                f"{what} {amounts({r: a for r, (a, _) in over.items()}, pods=True)}, more than queue {name} "
                f"may ever hold (capability {amounts({r: c for r, (_, c) in over.items()}, pods=True)})"
            )
        name = queue.parent
    total = session.total
    if verdict is None and bool((need > total + EPS).any()):
        rows = np.flatnonzero(need > total + EPS)
        verdict = (
            f"{what} {amounts({space.names[i]: float(need[i]) for i in rows}, pods=True)}, more than all "
            f"the ready nodes have ({amounts({space.names[i]: float(total[i]) for i in rows}, pods=True)})"
        )
    if verdict is None:
        nodes = session.nodes
        alloc = nodes.allocatable[nodes.ready]
        asked = smallest > EPS
        if asked.any() and len(alloc):
            per_node = np.floor((alloc[:, asked] + EPS) / smallest[asked]).min(axis=1)
            fit = int(per_node.sum())
            if fit < job.min_member:
                verdict = (
                    f"at most {fit} of its pods fit on the {len(alloc)} ready node(s), even were they empty "
                    f"(minMember {job.min_member}; each pod asks at least "
                    f"{amounts({space.names[i]: float(smallest[i]) for i in np.flatnonzero(asked)})})"
                )
    memo[key] = verdict
    return verdict
