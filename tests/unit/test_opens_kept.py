"""What the fair-share opens keep from one session to the next must be what a fresh computation gives, whatever
changed in between (queues added, removed, reparented, given guarantees the cluster cannot meet; nodes added,
removed, not ready; pods arriving, bound, finishing): the queue configuration's held guarantees and cut queues
(overcommit), the tree's shape (proportion's fair share), the ready nodes' total (every session's
``total``) and binpack's columns (1/allocatable), each kept where what it follows from is kept
(docs/design/steady-state.md); and what drf makes when first asked rather than in its open."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.builders import node, queue
from tests.unit.test_cache_snapshot import NODES, RandomPort, Walk
from volsched.cycle import run_cycle
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import load_config
from volsched.model.cluster import dominant_share
from volsched.model.fairshare import FairShare, Shape, build_tree
from volsched.model.resources import EPS, Vector
from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins import drf, overcommit, proportion
from volsched.plugins.shared.queue_config import _made, queue_config

QUEUES = ["q1", "q2", "q3"]


def queue_event(walk: Walk) -> None:
    """A queue of a small tree put or dropped: a parent (or none, or one that makes a cycle), a weight, a
    guarantee now and then larger than the cluster."""
    r = walk.rng
    name = r.choice(QUEUES)
    if r.random() < 0.2:
        walk.drop("Queue", None, name)
        return
    guarantee = r.choice(
        [None, None, {"cpu": "2"}, {"cpu": "6"}, {"cpu": "100"}, {"cpu": "1", "memory": "1Gi"}]
    )
    walk.put(
        queue(
            name,
            weight=r.randrange(1, 4),
            parent=r.choice([None, None, "q0", *QUEUES]),
            guarantee=guarantee,
            capability={"cpu": "3"} if r.random() < 0.2 else None,
        )
    )


class Checked:
    def __init__(self) -> None:
        self.sessions = 0
        self.guaranteed = 0  # sessions with a queue that guarantees something
        self.cut = 0  # sessions with a guarantee cut
        self.trees = 0  # sessions with a queue under another
        self.binpack = 0  # sessions with binpack's columns kept from an earlier one
        self.queues = 0  # sessions whose proportion took its queues' configured parts from an earlier one


def check(session: ExtensionPoints, seen: Checked) -> None:
    kept = queue_config(session)
    fresh = _made(session)  # from the session's queues, space and total, nothing kept
    want = {name: fresh.held_guarantee(name) for name in session.queues}
    want_guaranteed = {k: v for k, v in want.items() if v is not None}
    assert kept.guaranteed.keys() == want_guaranteed.keys()
    for name, v in want_guaranteed.items():
        assert kept.guaranteed[name].tobytes() == v.tobytes() and not kept.guaranteed[name].flags.writeable
    want_cut = {
        name: i
        for name, i in fresh.row.items()
        if (fresh.effective_guarantee[i] < fresh.guarantee[i] - EPS).any()
    }
    assert kept.cut == want_cut
    shape = Shape.of(build_tree(fresh.names, [s.parent for s in fresh.specs]))
    got = kept.tree.shape
    assert (got.up, got.top, got.parents, got.leaves_under, got.ancestors) == (
        shape.up,
        shape.top,
        shape.parents,
        shape.leaves_under,
        shape.ancestors,
    )
    assert got.leaf.tolist() == shape.leaf.tolist()
    nodes = session.nodes
    total = np.asarray(nodes.allocatable[nodes.ready].sum(axis=0), dtype=np.float64)
    assert session.total.tobytes() == total.tobytes() and not session.total.flags.writeable
    for dims, weights, inv, has, _ in [v for k, v in nodes.memo.items() if k.startswith("binpack ")]:
        # binpack's columns, kept with the node table: what its allocatable gives now
        alloc = nodes.allocatable[:, dims]
        assert inv.tobytes() == np.divide(1.0, alloc, out=np.zeros_like(alloc), where=alloc > 0).tobytes()
        assert has.tobytes() == (alloc > 0).astype(np.float64).tobytes()
        assert [session.space.names[d] for d in dims] == [
            n for n in ("cpu", "memory") if n in session.space.names
        ]
        assert weights.tolist() == [1.0] * len(dims) and not inv.flags.writeable
        seen.binpack += 1
    seen.sessions += 1
    seen.guaranteed += bool(want_guaranteed)
    seen.cut += bool(want_cut)
    seen.trees += any(s.parent for s in fresh.specs)


def check_queues(session: ExtensionPoints, attrs: dict[str, proportion.QueueAttr], fs: FairShare) -> None:
    """proportion's queues as a fresh making from the configuration and the fair share gives them."""
    config = queue_config(session)
    mask = session.space.share_mask
    assert attrs.keys() == config.row.keys()
    for name, i in config.row.items():
        a = attrs[name]
        real = np.where(mask, fs.real_capability[i], np.inf)
        assert a.real_capability.tobytes() == real.tobytes() and not a.real_capability.flags.writeable
        assert a.weight == config.specs[i].weight
        assert a.children == [config.names[c] for c in config.tree.children[i]]
        p = int(config.tree.parent[i])
        assert a.parent is (attrs[config.names[p]] if p >= 0 else None)
        assert a.ancestors == tuple(attrs[config.names[x]] for x in reversed(config.tree.ancestors(i)[1:]))


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Checked:
    seen = Checked()
    opened = overcommit.Overcommit.on_session_open
    tree = proportion.queue_tree

    def opening(self: Any, session: ExtensionPoints) -> None:
        opened(self, session)
        check(session, seen)

    def queues(session: ExtensionPoints) -> tuple[dict[str, proportion.QueueAttr], FairShare]:
        kept = session.snapshot.kept.get(proportion._SKELETON)
        attrs, fs = tree(session)
        check_queues(session, attrs, fs)
        seen.queues += isinstance(kept, tuple) and kept[0] is queue_config(session)
        return attrs, fs

    monkeypatch.setattr(overcommit.Overcommit, "on_session_open", opening)
    monkeypatch.setattr(proportion, "queue_tree", queues)
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_what_the_opens_keep_equals_a_fresh_computation_through_random_changes(
    seed: int, checked: Checked
) -> None:
    walk = Walk(seed)
    rng = random.Random(seed)
    config = load_config()  # (overcommit, drf and proportion among its plugins)
    for i in range(500):
        if rng.random() < 0.15:
            queue_event(walk)
        else:
            walk.step()
        if i % 2 == 0:
            walk.now += 1
            run_cycle(walk.feeder, config, RandomPort(rng), now=walk.now)
    assert checked.sessions > 100
    assert checked.guaranteed > 10 and checked.cut > 3 and checked.trees > 10 and checked.binpack > 50
    assert checked.queues > 50


def test_each_change_between_two_sessions_is_seen_by_the_next(checked: Checked) -> None:
    """Each change one at a time, between two sessions (a configuration kept past a change fails the check)."""
    walk = Walk(99)
    for name in NODES:
        walk.put(node(name, cpu="8"))
    config = load_config()
    changes = [
        lambda: None,
        lambda: walk.put(queue("q1", guarantee={"cpu": "2"})),
        lambda: walk.put(queue("q1", guarantee={"cpu": "3"})),
        lambda: walk.put(queue("q2", parent="q1")),
        lambda: walk.put(queue("q1", guarantee={"cpu": "1000"})),  # more than the cluster: cut
        lambda: walk.put(queue("q2", parent=None, weight=2)),
        lambda: walk.drop("Queue", None, "q2"),
        lambda: walk.put(node(NODES[0], cpu="8", ready=False)),
        lambda: walk.put(node(NODES[0], cpu="16")),
        lambda: walk.drop("Node", None, NODES[1]),
        lambda: None,
    ]
    for change in changes:
        change()
        walk.now += 1
        run_cycle(walk.feeder, config, RandomPort(walk.rng), now=walk.now)
    assert (
        checked.sessions == len(changes) and checked.cut >= 1 and checked.trees >= 1 and checked.binpack >= 5
    )
    assert checked.queues >= 1  # (the last session: the one before changed no queue, node or space)


# --- drf's namespaces: what it answers, against a state made at the open and followed ---------------------

EVICTING = Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml"


class FractionWalk(Walk):
    """The walk, its pods asking fractions of a cpu: sums whose last bits depend on the order of the
    additions, so that a namespace's holding summed again later differs from the one followed from the
    open."""

    def random_pod(self) -> dict[str, Any]:
        obj = super().random_pod()
        for c in obj["spec"]["containers"]:
            c.setdefault("resources", {}).setdefault("requests", {})["cpu"] = self.rng.choice(
                ["100m", "300m", "700m", "1100m"]
            )
        return obj


class Followed:
    """What the walk went through: sessions, those in which a namespace's holding changed, and the
    namespaces whose share with half their next pod was compared."""

    def __init__(self) -> None:
        self.sessions = 0
        self.changed = 0
        self.next = 0


def _eager(session: ExtensionPoints) -> tuple[dict[str, Vector], dict[str, tuple[float, Vector]]]:
    """What each namespace holds (a walk over every job from zero, as the ledger sums) and its smallest
    pending pod, from the session as it stands (its open)."""
    width = len(session.space)
    held: dict[str, Vector] = {}
    nxt: dict[str, tuple[float, Vector]] = {}
    share = dominant_share(session.total, session.space.share_mask)
    for job in session.jobs.values():
        acc = held.setdefault(job.namespace, np.zeros(width))
        acc += job.allocated
        for t in job.tasks.values():
            if t.status is TaskStatus.PENDING:
                size = share(t.request)
                best = nxt.get(job.namespace)
                if size > 0 and (best is None or size < best[0]):
                    nxt[job.namespace] = (size, t.request)
                break
    return held, nxt


@pytest.fixture
def followed(monkeypatch: pytest.MonkeyPatch) -> Followed:
    seen = Followed()
    opened, closed = drf.Drf.on_session_open, drf.Drf.on_session_close

    def opening(self: Any, session: ExtensionPoints) -> None:
        held, nxt = _eager(session)  # (asks nothing of the ledger: the plugin's open is the first to)
        at_open = {ns: v.copy() for ns, v in held.items()}

        def allocate(task: Task) -> None:
            acc = held.get(task.namespace)
            if acc is None:
                acc = held[task.namespace] = session.space.zeros()
            acc += task.request

        def deallocate(task: Task) -> None:
            held[task.namespace] -= task.request

        opened(self, session)
        session.add_event_handler(EventHandler(allocate=allocate, deallocate=deallocate))
        session.state["test.followed"] = (held, nxt, at_open)

    def closing(self: Any, session: ExtensionPoints) -> None:
        held, nxt, at_open = session.state["test.followed"]
        seen.sessions += 1
        seen.changed += any(
            ns not in at_open or v.tobytes() != at_open[ns].tobytes() for ns, v in held.items()
        )
        got = self._ns_alloc  # what drf holds per namespace (and carries over with fairShare)
        assert got.keys() == held.keys()
        for ns, v in held.items():
            assert got[ns].tobytes() == v.tobytes(), ns
        share = dominant_share(session.total, session.space.share_mask)
        weight = session.snapshot.namespace_weight
        ns_share = session.state["drf.namespace_share"]
        after_next = session.state["drf.namespace_share_after_next"]
        for ns in held.keys() | nxt.keys():
            alloc = held.get(ns)
            assert ns_share(ns) == (0.0 if alloc is None else share(alloc) / weight(ns)), ns
            if ns in nxt:
                seen.next += 1
                half = nxt[ns][1] / 2
                assert after_next(ns) == share(half if alloc is None else alloc + half) / weight(ns), ns
            else:
                assert after_next(ns) == ns_share(ns), ns
        closed(self, session)

    monkeypatch.setattr(drf.Drf, "on_session_open", opening)
    monkeypatch.setattr(drf.Drf, "on_session_close", closing)
    return seen


@pytest.mark.parametrize("seed", range(4))
def test_drf_namespace_answers_follow_the_session_from_the_open(seed: int, followed: Followed) -> None:
    """drf's namespace holdings, shares and shares with half the next pod, at the close, equal those of a
    state made at the open and followed through every placement, release and eviction of the session, to
    the bit."""
    walk = FractionWalk(seed)
    rng = random.Random(seed)
    config = load_config(str(EVICTING))
    for i in range(400):
        if rng.random() < 0.1:
            queue_event(walk)
        else:
            walk.step()
        if i % 2 == 0:
            walk.now += 1
            run_cycle(walk.feeder, config, RandomPort(rng), now=walk.now)
    assert followed.sessions > 100
    assert followed.changed >= 10 and followed.next >= 50
