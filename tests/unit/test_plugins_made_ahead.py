"""A session given its config's plugins made ahead (``run_session(..., plugins=make_plugins_ahead(config))``)
opens those very objects and decides what a session that makes its own decides; plugins made from another
config object are not used, not even when its plugins have the same names (and other arguments)."""

from __future__ import annotations

import pytest

from tests.builders import node, pod
from tests.unit._cycle_harness import CONFIG, cache
from volsched.framework.config import SchedulerConfig
from volsched.framework.registry import load_config, make_plugins_ahead
from volsched.framework.runner import open_session, run_session
from volsched.model.cluster import ClusterSnapshot

OTHER = load_config(
    text="actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
)
#: CONFIG's plugins by name, but nodeorder's with other weights.
SAME_NAMES = load_config(
    text='actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    "- plugins: [{name: predicates}, {name: proportion},"
    " {name: nodeorder, arguments: {mostrequested.weight: 5, leastrequested.weight: 0}}]\n"
)


def _snapshot() -> ClusterSnapshot:
    feeder = cache(node("n1", cpu="4"), node("n2", cpu="2"), pod("a", cpu="1"), pod("b", cpu="3"))
    return feeder.state.snapshot(now=1000.0)


def test_the_session_opens_the_plugins_it_is_given() -> None:
    made = make_plugins_ahead(CONFIG)
    session = open_session(_snapshot(), CONFIG, plugins=made)
    assert all(a is b for a, b in zip(session.plugins, made.plugins, strict=True))
    session.release()


@pytest.mark.parametrize("other", [OTHER, SAME_NAMES], ids=["other names", "same names, other arguments"])
def test_plugins_of_another_config_are_not_used(other: SchedulerConfig) -> None:
    made = make_plugins_ahead(other)
    session = open_session(_snapshot(), CONFIG, plugins=made)
    assert not any(p in made.plugins for p in session.plugins)
    assert [p.name for p in session.plugins] == [opt.name for opt in CONFIG.plugin_options()]
    session.release()


def test_a_session_under_a_config_with_other_arguments_decides_as_its_own_config_does() -> None:
    """nodeorder's weights of SAME_NAMES place b on another node: a session under CONFIG given SAME_NAMES'
    plugins decides what CONFIG decides."""
    own = run_session(_snapshot(), SAME_NAMES)
    fresh = run_session(_snapshot(), CONFIG)
    given = run_session(_snapshot(), CONFIG, plugins=make_plugins_ahead(SAME_NAMES))
    assert [(b.pod, b.node) for b in given.binds] == [(b.pod, b.node) for b in fresh.binds]
    assert [(b.pod, b.node) for b in own.binds] != [(b.pod, b.node) for b in fresh.binds]


def test_a_session_with_plugins_made_ahead_decides_what_one_that_makes_its_own_decides() -> None:
    fresh = run_session(_snapshot(), CONFIG)
    ahead = run_session(_snapshot(), CONFIG, plugins=make_plugins_ahead(CONFIG))
    assert [(b.pod, b.node) for b in ahead.binds] == [(b.pod, b.node) for b in fresh.binds]
    assert ahead.binds  # something was decided
    assert ahead.podgroups == fresh.podgroups and ahead.queues == fresh.queues
