"""The session's shared :class:`ConstraintState` (pod affinity, anti-affinity and spread counts).

predicates (filters) and nodeorder (scores) read the same counts, so the state is made once per session
(in ``session.state``), filled with the pods placed in the snapshot, and kept current by one event
handler: a task that takes a node (allocate, pipeline, an eviction undone) is counted there, one that
gives it back (evict, an allocation or pipeline undone when a Statement is discarded) is not.
When no pod in the snapshot has such constraints the state is None and every check is skipped.
"""

from __future__ import annotations

from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.model.constraints import ConstraintState
from volsched.model.vocabulary import ALLOCATED_STATUSES, Task, TaskStatus

_KEY = "constraints"
_COUNTED = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}


def constraint_state(session: ExtensionPoints) -> ConstraintState | None:
    """The session's constraint counts, made on first use; None when no pod has pod-level constraints."""
    if _KEY in session.state:
        state: ConstraintState | None = session.state[_KEY]
        return state
    snapshot = session.snapshot
    if not (
        session.ledger.any_constrained() or any(t.constraints is not None for t in snapshot.foreign_tasks)
    ):
        session.state[_KEY] = None
        return None
    nodes = session.nodes
    state = ConstraintState(nodes.specs, snapshot.namespace_labels)
    for i, on_node in enumerate(nodes.tasks):
        for t in on_node.values():
            if t.status in _COUNTED:
                state.add(t, i)
    index = nodes.index

    def on_allocate(task: Task) -> None:
        node = index.get(task.node_name or "")
        if node is not None:
            state.add(task, node)

    session.add_event_handler(EventHandler(allocate=on_allocate, deallocate=state.remove))
    session.state[_KEY] = state
    return state
