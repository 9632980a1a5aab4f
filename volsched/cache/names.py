"""Which PodGroups a pod of their name keeps from being a job: a pod of ours standing alone (it names no
group and has no controller owner: its job key is its own key, which is the PodGroup's too) or an orphan
(``volsched.cache.orphans``: a pod standing alone under its own key once its group is gone). The one rule
the snapshot builder (which PodGroups are jobs) and the cache's Queue delete check (which pods are
orphans) both ask. Design: docs/tenancy.md "A PodGroup named like a pod standing alone". Pure: no I/O,
no cache state.

Whichever came first keeps the name, by the objects' creation times (what the cluster shows, so a restart
decides the same): a PodGroup made after a pod standing alone of its name is no job while the pod exists
(a tenant wrapping a running pod in a PodGroup would keep it from reclaim as a gang below its minimum, or
move it into another queue's count); a pod standing alone made after the PodGroup is its member, as a pod
naming it would be (one pod made in a namespace would otherwise unmake a running gang there, its pods
left without their group). But a pod standing alone whose bind wrote the record of a bind standing alone
(``admitted.STANDING_ALONE``) keeps its name whatever the times: volsched bound it when no PodGroup of its
name was in force (the PodGroup refused then and mended since, or its watch event late), and a running pod
made a member then would be a gang below its minimum. An orphan takes a PodGroup of its name whenever its
own group is no job: it came first (it was made, and bound, under its group).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from volsched.cache.orphans import bound_record
from volsched.model.admitted import BOUND_UNDER, bound_alone
from volsched.model.vocabulary import PodGroupSpec, Task

#: The reason of the event on a PodGroup a pod standing alone of its name keeps from being a job.
SHADOWED = "PodGroupNameTaken"


def named_by(t: Task | None, key: str) -> bool | None:
    """Whether pod ``t`` (None: no pod), at PodGroup key ``key``, may keep that PodGroup from being a
    job: True, a pod of ours standing alone; False, a pod of ours of another group that holds a node
    with its bind's record (an orphan, its own job under its own key, whenever its group is no job);
    None, neither (an orphan whose record is not verified takes no name: ``Task.record_unverified``, nor
    one without a record: ``orphans.NO_RECORD``)."""
    if t is None or not t.schedulable_by_us:
        return None
    if t.standing_alone:
        return True
    if t.node_name and t.job_key != key and not t.record_unverified and bound_record(t) is not None:
        return False
    return None


def came_first(pg: PodGroupSpec, created: float) -> bool:
    """Whether PodGroup ``pg`` was made before a pod standing alone of its name made at ``created`` (both
    times known, the PodGroup's strictly earlier: ``metadata.creationTimestamp`` counts whole seconds,
    and a tie, or a time not known, leaves the name to the pod)."""
    return 0.0 < pg.creation < created


def bound_standing_alone(t: Task) -> bool:
    """Whether pod ``t`` holds the node its bind gave it standing alone: it is on a node (whatever its
    phase: a finished pod keeps its name while it exists) and carries the record such a bind writes,
    verified (``Task.record_unverified``: a pod made on a node with that record forged is no such pod)."""
    return bool(
        t.node_name
        and t.annotations
        and not t.record_unverified
        and bound_alone(t.annotations.get(BOUND_UNDER))
    )


def keeps_name(pg: PodGroupSpec, t: Task) -> bool:
    """Whether pod standing alone ``t`` keeps PodGroup ``pg`` of its name from being a job: it was bound
    standing alone (:func:`bound_standing_alone`), or the PodGroup did not come first (:func:`came_first`)."""
    return bound_standing_alone(t) or not came_first(pg, t.creation)


def taken(
    named: Mapping[str, bool], every: Mapping[str, PodGroupSpec], pod: Callable[[str], Task]
) -> dict[str, None]:
    """The PodGroups of ``every`` (by key) that a pod of their name keeps (``named``: :func:`named_by`
    of each; ``pod``: the pod at each of its keys): a pod standing alone's that did not come after it, or
    that it keeps as bound standing alone (:func:`keeps_name`), and an orphan's whose own group is not in
    ``every`` or is itself kept so, the least set that holds (pod p of group g and pod g of group p, both
    PodGroups there: each is its group's member, neither is taken). An orphan is a pod standing alone
    too: one that joined a PodGroup of its name would count in that group's queue and be kept from
    reclaim as a gang below its minimum, as if its own group had never gone."""
    out = {k: None for k, alone in named.items() if alone and keeps_name(every[k], pod(k))}
    left = [k for k, alone in named.items() if not alone]
    grew = bool(left)
    while grew:
        grew = False
        for k in left:
            if k not in out and ((group := pod(k).job_key) not in every or group in out):
                out[k] = None
                grew = True
    return out


def shadow_refusal(key: str, group: str | None = None, *, bound: bool = False) -> str:
    """Why PodGroup ``key`` is no job: a pod standing alone has its name (what its pods are told);
    ``group``: that pod's own group (key), when it is an orphan; ``bound``: the PodGroup came first, and
    the pod keeps its name as bound standing alone (:func:`bound_standing_alone`)."""
    name = key.rpartition("/")[2]
    if bound:
        who, which = (
            f"pod {name}, which names no pod group, was bound standing alone while this PodGroup was not "
            "in force (refused, or not yet seen), and",
            " once bound so",
        )
    elif group is None:
        who, which = (
            f"pod {name}, which names no pod group, was made before this PodGroup and",
            " made after it",
        )
    else:
        gone = group.rpartition("/")[2]
        who, which = f"pod {name}, bound under its record and running without its pod group {gone},", ""
    return (
        f"{who} has its name: a pod standing alone is a job of its own, under its name, and never joins a "
        f"PodGroup of that name{which}; while pod {name} exists this PodGroup is taken by none, and its "
        "pods wait (rename the PodGroup, or delete the pod)"
    )
