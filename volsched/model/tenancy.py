"""A Queue's tenancy rules over plain facts (a namespace, its labels, the priority classes named and
the highest priority): what the scheduler (the conformance plugin, over a job) and admission (over a
PodGroup or a pod) both ask. Pure: no session, no I/O. See docs/tenancy.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from volsched.model.vocabulary import CRITICAL_PRIORITY_CLASSES, SYSTEM_NAMESPACE, QueueAccess, QueueSpec

#: The label the apiserver puts on every namespace (so a selector may name namespaces one by one).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def critical_allowed(access: QueueAccess, priority_class: str, namespace: str) -> bool:
    """Whether a pod of ``priority_class`` in ``namespace`` may have a system-critical class's
    priority and protection: in kube-system always (as the apiserver's Priority admission had it),
    elsewhere only in a queue that lists the class in ``priorityClasses``."""
    if namespace == SYSTEM_NAMESPACE:
        return True
    return access.priority_classes is not None and priority_class in access.priority_classes


def queue_refusal(
    queue: QueueSpec,
    *,
    namespace: str,
    namespace_labels: Mapping[str, str],
    classes: Iterable[str],
    priority: int | None,
) -> str | None:
    """Which of ``queue``'s rules a job of ``namespace`` naming ``classes`` (priority ``priority`` at
    most; None: not known) breaks, the first; None when it breaks none."""
    access = queue.access
    selector = access.namespaces
    if selector is not None and not selector.matches({**namespace_labels, NAMESPACE_NAME_LABEL: namespace}):
        return (
            f"queue {queue.name} does not take jobs of namespace {namespace} "
            f"(its namespaceSelector: {selector.describe() or 'every namespace'})"
        )
    allowed = access.priority_classes
    for cls in classes:
        if not cls:
            continue
        if allowed is not None and cls not in allowed:
            listed = ", ".join(sorted(allowed)) or "none"
            return (
                f"priority class {cls} is not allowed in queue {queue.name} (its priorityClasses: {listed})"
            )
        if cls in CRITICAL_PRIORITY_CLASSES and not critical_allowed(access, cls, namespace):
            return (
                f"priority class {cls} is for kube-system: queue {queue.name} does not allow it in "
                f"namespace {namespace} (a queue allows it by listing it in priorityClasses)"
            )
    ceiling = access.max_priority
    if ceiling is not None and priority is not None and priority > ceiling:
        return f"priority {priority} is above queue {queue.name}'s maxPriority {ceiling}"
    return None
