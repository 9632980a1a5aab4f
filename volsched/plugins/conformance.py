"""conformance: never evict system-critical pods (priority classes system-cluster-critical and
system-node-critical, or anything in kube-system), nor pods marked not preemptable."""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.vocabulary import Task


def protected(task: Task) -> bool:
    return task.critical or task.namespace == "kube-system" or task.preemptable is False


@register_plugin
class Conformance(BasePlugin):
    name: ClassVar[str] = "conformance"
    reads_clock: ClassVar[bool] = False

    def on_session_open(self, session: ExtensionPoints) -> None:
        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            return [t for t in candidates if not protected(t)]

        session.add_preemptable_fn(self.name, victims)
        session.add_reclaimable_fn(self.name, victims)
