"""Queue guarantees on a real apiserver: enabling, changing and removing one (as a percentage of the
cluster or an amount) takes effect on the next sessions, without restarting the operator."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    GROUP,
    VERSION,
    Kube,
    Start,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)

pytestmark = pytest.mark.cluster


def set_guarantee(k: Kube, name: str, resource: dict[str, Any] | None) -> None:
    """Set the queue's spec.guarantee (None removes it) with a merge patch, as kubectl edit/patch would.

    Not a read-modify-replace: the operator writes the queue's status every time it changes, and each
    status write bumps the resourceVersion, so a replace carrying the one just read can get a 409."""
    patch = {"spec": {"guarantee": None if resource is None else {"resource": resource}}}
    k.custom.patch_cluster_custom_object(GROUP, VERSION, "queues", name, patch)


def deserved_cpu(k: Kube, name: str) -> str | None:
    return ((k.get_queue(name).get("status") or {}).get("deserved") or {}).get("cpu")


def test_enabling_changing_and_removing_a_guarantee_takes_effect_without_a_restart(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"), node("n2", cpu="4"))  # 8 cpu
    k.queue(queue("default"))
    k.queue(queue("reserved"))
    k.queue(queue("busy"))
    op = start_operator()
    wait_for(
        lambda: (k.get_queue("busy").get("status") or {}).get("state") == "Open",
        20,
        what="queue status",
        operator=op,
    )

    # Enable: half the cluster held for an idle queue.
    set_guarantee(k, "reserved", {"cpu": "50%"})
    wait_for(
        lambda: deserved_cpu(k, "reserved") == "4", 20, what="reserved deserves its 50% (4 cpu)", operator=op
    )

    # An elastic job of 12 one-cpu pods in another queue gets what the guarantee leaves: 4 cpu.
    ns = k.namespace("guarantee")
    k.podgroup(ns, podgroup("elastic", 1, queue="busy"))
    k.pods(ns, *(pod(f"elastic-{i}", cpu="1", group="elastic") for i in range(12)))
    wait_for(lambda: len(k.bound(ns)) == 4, 30, what="4 pods bound beside the 4-cpu guarantee", operator=op)

    # Change: 25% holds 2 cpu, so two more pods run.
    set_guarantee(k, "reserved", {"cpu": "25%"})
    wait_for(lambda: len(k.bound(ns)) == 6, 30, what="6 pods bound beside the 2-cpu guarantee", operator=op)
    # A session binds first and writes status after: the binds can be seen before the new deserved.
    wait_for(
        lambda: deserved_cpu(k, "reserved") == "2", 20, what="reserved deserves its 25% (2 cpu)", operator=op
    )

    # Change to an amount, then remove: the whole cluster is the job's.
    set_guarantee(k, "reserved", {"cpu": "1"})
    wait_for(lambda: len(k.bound(ns)) == 7, 30, what="7 pods bound beside the 1-cpu guarantee", operator=op)
    wait_for(lambda: deserved_cpu(k, "reserved") == "1", 20, what="reserved deserves its 1 cpu", operator=op)
    set_guarantee(k, "reserved", None)
    wait_for(lambda: len(k.bound(ns)) == 8, 30, what="all 8 cpu used once the guarantee is gone", operator=op)
    try:
        wait_for(lambda: deserved_cpu(k, "reserved") in (None, "0"), 20, what="reserved deserves nothing")
    except pytest.fail.Exception:
        op.check_running()
        pytest.fail(f"reserved still deserves: {k.get_queue('reserved').get('status')} (log: {op.log_path})")
    assert op.healthy()
