"""A gang refused whole as invalid (fewer of its pods exist than minMember) says why once, on its PodGroup:
its pods, never tried, get no condition or event of their own (a large gang whose pods the watch delivers in
pieces would otherwise be told pod by pod a moment before it is whole). A pod that was tried still says why."""

from __future__ import annotations

from tests.builders import node, podgroup, pods, run


def _events(data: dict[str, object]) -> list[dict[str, str]]:
    return data["events"]  # type: ignore[return-value]


def test_a_gang_short_of_pods_says_so_on_its_podgroup_alone() -> None:
    data = run([node("n1"), podgroup("g", min_member=3), *pods("w", 2, group="g")], sessions=2)
    why = "gang g: 2 pod(s) exist, minMember is 3"
    assert data["podgroups"]["default/g"]["reason"] == why
    about = [(e["object"], e["reason"], e["message"]) for e in _events(data)]
    assert ("PodGroup default/g", "Unschedulable", why) in about
    assert [a for a in about if a[0].startswith("Pod ")] == []


def test_a_whole_gang_that_does_not_fit_still_says_why_on_each_pod() -> None:
    data = run(
        [node("n1", cpu="1"), podgroup("g", min_member=3), *pods("w", 3, group="g", cpu="1")], sessions=2
    )
    told = {e["object"] for e in _events(data) if e["reason"] == "FailedScheduling"}
    assert told == {"Pod default/w-0", "Pod default/w-1", "Pod default/w-2"}
    assert data["podgroups"]["default/g"]["reason"]
