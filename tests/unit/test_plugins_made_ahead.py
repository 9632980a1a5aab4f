"""A session given its config's plugins made ahead (``run_session(..., plugins=...)``) opens those very
objects and decides what a session that makes its own decides; plugins of another config are not used."""

from __future__ import annotations

from tests.builders import node, pod
from tests.unit._cycle_harness import CONFIG, cache
from volsched.framework.registry import load_config, make_plugins
from volsched.framework.runner import open_session, run_session
from volsched.model.cluster import ClusterSnapshot

OTHER = load_config(
    text="actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
)


def _snapshot() -> ClusterSnapshot:
    feeder = cache(node("n1", cpu="4"), node("n2", cpu="2"), pod("a", cpu="1"), pod("b", cpu="3"))
    return feeder.state.snapshot(now=1000.0)


def test_the_session_opens_the_plugins_it_is_given() -> None:
    made = make_plugins(CONFIG)
    session = open_session(_snapshot(), CONFIG, plugins=made)
    assert all(a is b for a, b in zip(session.plugins, made, strict=True))
    session.release()


def test_plugins_of_another_config_are_not_used() -> None:
    made = make_plugins(OTHER)
    session = open_session(_snapshot(), CONFIG, plugins=made)
    assert not any(p in made for p in session.plugins)
    assert [p.name for p in session.plugins] == [opt.name for opt in CONFIG.plugin_options()]
    session.release()


def test_a_session_with_plugins_made_ahead_decides_what_one_that_makes_its_own_decides() -> None:
    fresh = run_session(_snapshot(), CONFIG)
    ahead = run_session(_snapshot(), CONFIG, plugins=make_plugins(CONFIG))
    assert [(b.pod, b.node) for b in ahead.binds] == [(b.pod, b.node) for b in fresh.binds]
    assert ahead.binds  # something was decided
    assert ahead.podgroups == fresh.podgroups and ahead.queues == fresh.queues
