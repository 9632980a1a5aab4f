"""What a session carries from the last one (the plugins' and the framework's state kept with the node
table or in ``ClusterSnapshot.kept``, to be moved by what changed rather than worked out again) must
change no decision and no float: a random walk of sessions run with everything carried must give, session
by session, the very results (binds, evictions, refusals, events, PodGroup and Queue statuses) that the
same walk gives with nothing carried, whatever changed between two sessions (pods arriving, bound,
failing, finishing; nodes added, removed, resized or not ready; queues and their capabilities; PodGroups;
the config reloaded)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.builders import queue
from tests.unit.test_cache_snapshot import RandomPort, Walk
from volsched.cycle import run_cycle
from volsched.framework import ledger, never, settled
from volsched.framework.decisions import SessionResult
from volsched.framework.registry import load_config
from volsched.plugins import overcommit, proportion

MOST_REQUESTED = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: predicates}, {name: proportion},
            {name: nodeorder, arguments: {mostrequested.weight: 2, balancedresource.weight: 0}},
            {name: binpack}]
"""


def _said(result: SessionResult) -> str:
    """Everything a session decided and said, floats written exactly (``repr``)."""
    return repr(
        (
            result.binds,
            result.evictions,
            result.admitted,
            sorted(result.podgroups.items()),
            sorted(result.queues.items()),
            sorted(result.namespaces.items()),
            result.events,
            sorted(result.rejections.items()),
            result.nominated,
            result.pipelined,
            result.waiting,
        )
    )


def _walk(seed: int, steps: int) -> list[str]:
    """What each session of a random walk said (``Walk``: the cache fed random events; a session every
    other step, now and then on a config reloaded)."""
    walk = Walk(seed)
    rng = random.Random(seed)
    config = load_config()
    out: list[str] = []
    for i in range(steps):
        walk.step()
        if rng.random() < 0.05:  # the default queue's capability: below some pods' requests, or not
            capability = rng.choice([None, {"cpu": "1"}, {"cpu": "8"}, {"nvidia.com/gpu": "0"}])
            walk.put(queue("default", capability=capability))
        if rng.random() < 0.05:  # a config reloaded (a new object, equal or not)
            config = load_config(text=MOST_REQUESTED) if rng.random() < 0.5 else load_config()
        if i % 2 == 0:
            walk.now += 1
            report = run_cycle(walk.feeder, config, RandomPort(rng), now=walk.now)
            out.append(_said(report.result))
    return out


#: Each piece of carried state, and how to turn it off (the monkeypatch that makes every session work it
#: out anew), with how to count the sessions that did take it over.
def _carried_verdicts(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    kept = never._kept

    def counting(session: Any) -> Any:
        out = kept(session)
        taken[0] += bool(out[1] or out[2])
        return out

    def fresh(session: Any) -> Any:
        out = session.state.get(never._KEPT)
        if out is None:
            out = session.state[never._KEPT] = (dict(session.queues), {}, {})
        return out

    monkeypatch.setattr(never, "_kept", counting)
    return lambda: monkeypatch.setattr(never, "_kept", fresh)


def _carried_run(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """The settled run and its sums, kept from the last session (off: found from scratch every time)."""
    reusable = settled._reusable

    def counting(jobs: Any, base: settled.Settled, present: Any, *, again: bool) -> settled.Settled:
        out = reusable(jobs, base, present, again=again)
        taken[0] += out.span > 0
        return out

    def fresh(jobs: Any, base: settled.Settled, present: Any, *, again: bool) -> settled.Settled:
        return settled.empty(base.width)

    monkeypatch.setattr(settled, "_reusable", counting)
    return lambda: monkeypatch.setattr(settled, "_reusable", fresh)


def _lagging_run(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """The kept run not extended by fewer than ``settled.LAG`` jobs (off: extended by every job that settled
    since the last session)."""
    settle = settled.settle

    def counting(jobs: list[Any], kept: dict[str, object], width: int, **kwargs: Any) -> settled.Settled:
        before = kept.get(settled.KEPT)
        out = settle(jobs, kept, width, **kwargs)
        taken[0] += out is before and out.span < len(jobs) and settled._settles(jobs[out.span])
        return out

    monkeypatch.setattr(ledger, "settle", counting)
    return lambda: monkeypatch.setattr(settled, "LAG", 0)


def _run_ahead(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """The kept run extended at the close by the jobs settled after it (off: left for the next open); at
    the close by as few as one (``settled.AHEAD``), in both walks: the cache's random events seldom
    leave 7 after a run with no gap."""
    ahead = settled.ahead
    monkeypatch.setattr(settled, "AHEAD", 1)

    def counting(kept: dict[str, object], run: settled.Settled, after: Any) -> None:
        ahead(kept, run, after)
        taken[0] += kept.get(settled.KEPT) is not run

    def fresh(kept: dict[str, object], run: settled.Settled, after: Any) -> None:
        return None

    monkeypatch.setattr(ledger, "ahead", counting)
    return lambda: monkeypatch.setattr(ledger, "ahead", fresh)


def _fit_witness(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """The node proportion found room on last time, asked first (off: every ready node asked)."""
    fits = proportion.some_node_fits

    def counting(nodes: Any, floor: list[float]) -> bool:
        k = nodes.memo.get(proportion._FIT_WITNESS)
        out = fits(nodes, floor)
        taken[0] += k is not None and nodes.memo.get(proportion._FIT_WITNESS) == k and out
        return out

    def fresh(nodes: Any, floor: list[float]) -> bool:
        return bool((nodes.idle[nodes.ready] >= np.array(floor)).all(axis=1).any())

    monkeypatch.setattr(proportion, "some_node_fits", counting)
    return lambda: monkeypatch.setattr(proportion, "some_node_fits", fresh)


def _every_node_ready(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """Whether every node of the table is ready, kept with it for overcommit's sum of what the ready
    nodes hold (off: the ready rows picked every session)."""
    used = overcommit.used_on_ready

    def counting(nodes: Any) -> Any:
        taken[0] += nodes.memo.get(overcommit._ALL_READY) is not None
        return used(nodes)

    def fresh(nodes: Any) -> Any:
        return nodes.used[nodes.ready].sum(axis=0)

    monkeypatch.setattr(overcommit, "used_on_ready", counting)
    return lambda: monkeypatch.setattr(overcommit, "used_on_ready", fresh)


def _held_at_open(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """What the jobs held as the last session opened, brought up by the jobs that hold something since
    (off: every job after the run stacked and folded)."""
    since = ledger.SessionLedger._held_since

    def counting(self: Any, carried: Any, key: Any) -> Any:
        out = since(self, carried, key)
        taken[0] += out is not None
        return out

    monkeypatch.setattr(ledger.SessionLedger, "_held_since", counting)
    return lambda: monkeypatch.setattr(ledger.SessionLedger, "_held_since", lambda *_: None)


def _seen_after_the_run(monkeypatch: pytest.MonkeyPatch, taken: list[int]) -> Callable[[], None]:
    """What the last session's open said of the shared jobs after the run (off: every walk over the jobs
    after the run goes over each)."""
    since = ledger.SessionLedger._since

    def counting(self: Any) -> Any:
        out = since(self)
        taken[0] += out is not None
        return out

    monkeypatch.setattr(ledger.SessionLedger, "_since", counting)
    return lambda: monkeypatch.setattr(ledger.SessionLedger, "_since", lambda _: None)


CARRIED = {
    "held at the open, brought up": _held_at_open,
    "the jobs seen after the run": _seen_after_the_run,
    "every node ready, with the node table": _every_node_ready,
    "a node proportion found room on": _fit_witness,
    "never-fits verdicts": _carried_verdicts,
    "settled run": _carried_run,
    "settled run, extended by a few jobs at once": _lagging_run,
    "settled run, extended at the close": _run_ahead,
}
#: How many of a walk's sessions must take the state over, where not 20 (a run extended by few jobs at
#: once: only where no gap is in or after it, and the cache's random events leave one often).
TAKEN = {"settled run, extended by a few jobs at once": 5, "settled run, extended at the close": 10}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("what", sorted(CARRIED))
def test_sessions_with_and_without_carried_state_decide_and_say_the_same(
    what: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = [0]
    turn_off = CARRIED[what](monkeypatch, taken)
    carried = _walk(seed, 400)
    assert taken[0] >= TAKEN.get(what, 20)  # the walk's sessions did take the state over
    turn_off()
    fresh = _walk(seed, 400)
    assert len(carried) == len(fresh)
    for k, (a, b) in enumerate(zip(carried, fresh, strict=True)):
        assert a == b, f"session {k} differs"
