"""A pod the cache refuses as invalid that a node runs still holds its room there. The apiserver takes any
annotation value, so a pod another scheduler bound (or one created with ``spec.nodeName``) may carry a
malformed ``scheduling.volsched.io/expected-runtime``: the cache refused it whole, its requests then
held nothing on its node, and volsched placed pods into room the node had already given (5 of 4 cpu).
Now it holds what its node counts of it, nothing else: it is told as refused all the same, and a valid
version of it, before or after, stands as usual."""

from __future__ import annotations

from tests.builders import Obj, node, pod
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.cycle import run_cycle
from volsched.framework.session import pod_uids

BAD = {"scheduling.volsched.io/expected-runtime": "a while"}


def _bound_elsewhere(name: str, *, cpu: str, annotations: dict[str, str] | None = None, rv: int) -> Obj:
    """A pod default-scheduler bound to n1, running."""
    out = pod(
        name, cpu=cpu, node="n1", phase="Running", scheduler="default-scheduler", annotations=annotations
    )
    out["metadata"].update(resourceVersion=str(rv), uid=f"uid-{name}")
    return out


def _binds(feeder: object) -> list[str]:
    report = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)  # type: ignore[arg-type]
    return sorted(b.pod for b in report.result.binds)


def test_a_refused_pod_its_node_runs_still_holds_its_room() -> None:
    feeder = cache(node("n1", cpu="4"))
    assert not feeder.apply("Pod", _bound_elsewhere("other", cpu="3", annotations=BAD, rv=10))
    waiting = pod("w", cpu="2")
    waiting["metadata"].update(resourceVersion="11", uid="uid-w")
    assert feeder.apply("Pod", waiting)
    assert _binds(feeder) == []  # 3 of 4 cpu held: no room for 2
    message = feeder.rejected["Pod default/other"].message
    assert "but for the room it holds on its node" in message and "expected-runtime" in message, message

    # Once it has ended, its room is free.
    done = _bound_elsewhere("other", cpu="3", annotations=BAD, rv=12)
    done["status"]["phase"] = "Succeeded"
    assert not feeder.apply("Pod", done)
    assert _binds(feeder) == ["default/w"]


def test_its_last_valid_version_stands_and_a_valid_one_replaces_what_it_held() -> None:
    feeder = cache(node("n1", cpu="4"))
    assert feeder.apply("Pod", _bound_elsewhere("other", cpu="3", rv=10))
    assert not feeder.apply("Pod", _bound_elsewhere("other", cpu="1", annotations=BAD, rv=11))
    assert feeder.state.tasks["default/other"].request_map["cpu"] == 3  # the valid version stands
    assert "keeping its last valid version" in feeder.rejected["Pod default/other"].message

    feeder = cache(node("n1", cpu="4"))
    assert not feeder.apply("Pod", _bound_elsewhere("other", cpu="3", annotations=BAD, rv=10))
    assert feeder.apply("Pod", _bound_elsewhere("other", cpu="1", rv=11))
    assert feeder.state.tasks["default/other"].request_map["cpu"] == 1
    assert "Pod default/other" not in feeder.rejected
    feeder.delete("Pod", _bound_elsewhere("other", cpu="1", rv=12))
    assert "default/other" not in feeder.state.tasks


def test_a_refused_pod_that_holds_no_node_is_not_taken() -> None:
    feeder = cache(node("n1", cpu="4"))
    pending = pod("p", cpu="1", annotations=BAD)
    pending["metadata"].update(resourceVersion="10", uid="uid-p")
    assert not feeder.apply("Pod", pending)
    assert "default/p" not in feeder.state.tasks
    assert "(keeping its last valid version, if any)" in feeder.rejected["Pod default/p"].message


def test_a_refused_pod_its_node_runs_is_a_pod_there_for_the_claims_reserved_for_it() -> None:
    # A claim reserved only for pods that are gone has its devices coming free (fd14e53). A refused pod
    # its node runs is no pod gone, though the cache keeps none of its claims: before, only pods that
    # named a claim counted, and its claim's GPU was taken for coming free for good.
    feeder = cache(node("n1", cpu="4"))
    other = _bound_elsewhere("other", cpu="1", annotations=BAD, rv=10)
    other["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    assert not feeder.apply("Pod", other)
    assert "uid-other" in pod_uids(feeder.state.snapshot(now=1.0))
