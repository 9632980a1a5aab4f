"""Fair share with memory (``fairShare.halfLife`` of proportion and drf): the decayed average alone, then
drf's namespace order and proportion's queue order with it, one session each at a known clock. The
worked example of docs/starvation.md is ``test_the_worked_example``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, queue
from volsched.actions.util import in_queue_order
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult
from volsched.framework.plugin import Arguments
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.model.errors import InputError
from volsched.model.resources import ResourceSpace
from volsched.plugins.shared.decayed_usage import Decay
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 1_000_000.0
HOUR = 3600.0
SPACE = ResourceSpace()
CPU = SPACE.index("cpu")


def cpu(amount: float) -> Any:
    return SPACE.vector({"cpu": amount})


@pytest.mark.parametrize(
    ("avg", "held", "ago", "expected"),
    [
        (8.0, 0.0, 0.0, 8.0),  # no time passed: as carried
        (8.0, 0.0, HOUR, 4.0),  # one half-life, nothing held since: half
        (8.0, 0.0, 2 * HOUR, 2.0),
        (0.0, 8.0, HOUR, 4.0),  # held 8 for one half-life from nothing: half-way to 8
        (8.0, 8.0, 5 * HOUR, 8.0),  # held as much as the average: it stays
    ],
)
def test_the_average_decays_with_the_half_life(avg: float, held: float, ago: float, expected: float) -> None:
    carried = {"at": NOW - ago, "avg": {"q": {"cpu": avg}}, "held": {"q": {"cpu": held}}}
    out = Decay(half_life=HOUR).averages(carried, now=NOW, space=SPACE)
    assert out["q"][CPU] == pytest.approx(expected)


def test_mixed_and_carried() -> None:
    decay = Decay(half_life=HOUR, weight=0.25)
    assert decay.mixed(cpu(4.0), cpu(8.0))[CPU] == pytest.approx(5.0)
    assert decay.mixed(cpu(4.0), None)[CPU] == pytest.approx(3.0)
    carried = Decay.carry(now=NOW, averages={"q": cpu(2.0)}, held={"q": cpu(0.0)}, space=SPACE)
    assert carried == {"at": NOW, "avg": {"q": {"cpu": 2.0}}, "held": {}}
    assert Decay().on is False


def test_bad_arguments_are_refused_naming_the_key() -> None:
    with pytest.raises(InputError, match=r"fairShare\.usageWeight"):
        Decay.from_arguments(Arguments("drf", {"fairShare": {"halfLife": "1h", "usageWeight": 2}}))
    with pytest.raises(InputError, match=r"fairShare\.halfLife"):
        Decay.from_arguments(Arguments("drf", {"fairShare": {"halfLife": "soon"}}))


def _session(objects: list[Obj], plugins: str, carry: dict[str, Any]) -> Any:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    state.carryover = carry
    config = load_config(text=f'actions: "enqueue, allocate"\ntiers:\n- plugins: [{plugins}]\n')
    return config, open_session(state.snapshot(now=NOW), config)


def _run(objects: list[Obj], plugins: str, carry: dict[str, Any]) -> SessionResult:
    config, session = _session(objects, plugins, carry)
    for action in make_actions(config):
        action.execute(session)
    return close_session(session)


def _night_and_day() -> list[Obj]:
    """One queue, 4 cpu; namespaces night and day each want four 1-cpu pods now."""
    return [
        node("n1", cpu="4"),
        queue("q"),
        *(pod(f"p{i}", ns=ns, queue="q", created=iso(NOW - 60)) for ns in ("night", "day") for i in range(4)),
    ]


#: Night held the whole cluster (4 cpu) for the eight hours before now; day held nothing.
NIGHT = {"drf.usage": {"at": NOW - 8 * HOUR, "avg": {}, "held": {"night": {"cpu": 4.0}}}}


@pytest.mark.parametrize(
    ("arguments", "night", "day"),
    [
        pytest.param("{}", 2, 2, id="without-memory-both-get-half"),
        pytest.param("{fairShare: {halfLife: 1h}}", 0, 4, id="with-memory-the-idle-night-team-waits"),
        pytest.param("{fairShare: {halfLife: 1h, usageWeight: 0.25}}", 1, 3, id="a-light-memory-weighs-less"),
    ],
)
def test_drf_namespace_order_remembers(arguments: str, night: int, day: int) -> None:
    result = _run(_night_and_day(), f"{{name: drf, arguments: {arguments}}}, {{name: predicates}}", NIGHT)
    placed = [b.pod.split("/")[0] for b in result.binds]
    assert (placed.count("night"), placed.count("day")) == (night, day)


def test_the_worked_example() -> None:
    """docs/starvation.md: night's average after 8 h of 4 cpu with a 1 h half-life is 4 * (1 - 2**-8)."""
    decay = Decay(half_life=HOUR)
    avg = decay.averages(NIGHT["drf.usage"], now=NOW, space=SPACE)["night"][CPU]
    assert avg == pytest.approx(4 * (1 - 2**-8))
    result = _run(
        _night_and_day(), "{name: drf, arguments: {fairShare: {halfLife: 1h}}}, {name: predicates}", NIGHT
    )
    carried = result.carryover["drf.usage"]
    assert carried["at"] == NOW
    assert carried["avg"]["night"]["cpu"] == pytest.approx(round(avg, 6))
    assert carried["held"] == {"day": {"cpu": 4.0}}  # what the close holds: the next session's interval
    one_hour_on = decay.averages(carried, now=NOW + HOUR, space=SPACE)
    assert one_hour_on["night"][CPU] == pytest.approx(avg / 2)
    assert one_hour_on["day"][CPU] == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("carried", "first"),
    [
        pytest.param(None, "a", id="no-memory-equal-shares-by-name"),
        pytest.param({"at": NOW, "avg": {"a": {"cpu": 4.0}}, "held": {}}, "b", id="a-used-more-b-first"),
        pytest.param(
            {"at": NOW - 20 * HOUR, "avg": {"a": {"cpu": 4.0}}, "held": {}}, "a",
            id="long-ago-counts-less-than-what-b-holds-now",
        ),
    ],
)  # fmt: skip
def test_proportion_queue_order_remembers(carried: dict[str, Any] | None, first: str) -> None:
    objects = [node("n1", cpu="4"), queue("a"), queue("b"), pod("x", queue="a"), pod("y", queue="b")]
    if carried is not None and carried["at"] < NOW:
        objects.append(pod("r", queue="b", node="n1"))  # b holds 1 cpu now
    _, session = _session(
        objects,
        "{name: proportion, arguments: {fairShare: {halfLife: 1h}}}",
        {} if carried is None else {"proportion.usage": carried},
    )
    assert in_queue_order(session, ["a", "b"])[0] == first
