"""allocate and enqueue take the first namespace of a queue from a heap refreshed with the namespaces
whose tasks changed: after any placements, undos and namespaces leaving or coming back, it names the
namespace ``first_namespace`` names by asking every key."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.builders import node, pod, quota
from volsched.actions.util import NamespaceOrder, first_namespace
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.framework.statement import Statement

CONFIG = 'actions: "allocate"\ntiers:\n- plugins: [{name: drf}, {name: predicates}]\n'


def session_of(namespaces: int, pods: int, seed: int) -> Session:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [node(f"n{i}", cpu="64", memory="256Gi") for i in range(4)]
    objs += [quota(f"ns{k}", 1 + k % 3) for k in range(namespaces)]
    objs += [
        pod(f"p{i}", ns=f"ns{rng.randrange(namespaces)}", cpu=rng.choice(["500m", "1", "2"]))
        for i in range(pods)
    ]
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return open_session(state.snapshot(now=1.0), load_config(text=CONFIG))


@pytest.mark.parametrize(
    ("namespaces", "steps", "seed"),
    [
        pytest.param(1, 20, 1, id="one-namespace"),
        pytest.param(3, 60, 2, id="a-few-namespaces"),
        pytest.param(12, 200, 3, id="many-namespaces-weighted"),
    ],
)
def test_the_first_namespace_is_the_one_every_key_names(namespaces: int, steps: int, seed: int) -> None:
    session = session_of(namespaces, steps * 2, seed)
    rng = random.Random(seed)
    live = [f"ns{k}" for k in range(namespaces)]
    order = NamespaceOrder(session, live)
    pending = [t for job in session.jobs.values() for t in job.tasks.values()]
    rng.shuffle(pending)
    for _ in range(steps):
        move = rng.random()
        if move < 0.6 and pending:  # place a pod of some namespace, kept or undone
            task = pending.pop()
            statement = Statement(session)
            statement.allocate(task, rng.randrange(len(session.nodes)))
            if rng.random() < 0.3:
                statement.discard()
            else:
                statement.commit()
        elif move < 0.8 and len(live) > 1:  # a namespace runs out of jobs
            gone = live.pop(rng.randrange(len(live)))
            order.discard(gone)
        else:  # one comes back (a job pushed back)
            back = f"ns{rng.randrange(namespaces)}"
            if back not in live:
                live.append(back)
            order.add(back)
        assert len(order) == len(live)
        assert order.first() == first_namespace(session, live)


def test_the_change_log_names_each_changed_namespace_once_however_many_placements() -> None:
    # The session keeps one entry a namespace, not one a placement: 40 placements in 3 namespaces
    # leave 3 names to look at, the latest changed first, and none before the position asked.
    session = session_of(3, 40, 7)
    _, start = session.namespaces_changed()
    tasks = sorted((t for job in session.jobs.values() for t in job.tasks.values()), key=lambda t: t.key)
    for i, task in enumerate(tasks):
        statement = Statement(session)
        statement.allocate(task, i % len(session.nodes))
        statement.commit()
    changed, now = session.namespaces_changed(start)
    assert now == start + len(tasks)
    assert sorted(changed) == sorted({t.namespace for t in tasks})
    assert changed[0] == tasks[-1].namespace
    assert session.namespaces_changed(now) == ([], now)
    assert len(session._ns_log) == len(changed)
