"""A backlog's shapes carried from one session to the next (``CarriedShapes``) decide as shapes made
afresh every session.

Random walks over a cluster that changes between sessions (pods come, go and are edited: labels,
annotations, priority classes, requests; PodGroups change their minMember, queue or class; queues their
caps; priority classes their values; nodes come and go; what a session bound runs, what it admitted is
Inqueue): two caches fed the same objects, one carrying the shapes from session to session, the other
making them afresh each session. Every decision and every word of the two are the same, session after
session; in each session of the carrying one, two jobs asked have the same carried shape exactly when
``job_shape`` made afresh gives them the same shape; and shapes were carried (not all made again).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import volsched.actions.eviction as eviction
from tests.builders import config, node, pod, podgroup, priority_class, queue
from volsched.actions.eviction import CarriedShapes, job_shape
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult
from volsched.framework.runner import run_session
from volsched.model.cluster import Job
from volsched.model.vocabulary import PodGroupPhase, Task
from volsched.simulate.scenarios import RECLAIM_PREEMPT_CONFIG

Obj = dict[str, Any]

CONF = config(RECLAIM_PREEMPT_CONFIG)
CLASSES = ("low", "mid", "high")


class _World:
    """The objects of a random cluster, and the changes of a random walk over it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.queues = [f"q{i}" for i in range(rng.randint(2, 4))]
        self.objs: dict[tuple[str, str], Obj] = {}
        self.values = {name: rng.choice([1, 10, 100]) for name in CLASSES}
        for name, value in self.values.items():
            self._put(priority_class(name, value))
        for i in range(rng.randint(2, 4)):
            self._put(node(f"n{i}", cpu=str(rng.choice([4, 8]))))
        for name in self.queues:
            self._put(self._queue(name))
        self.made = 0
        for _ in range(rng.randint(20, 50)):
            self._new_job()

    def _put(self, obj: Obj) -> None:
        meta = obj["metadata"]
        self.objs[obj["kind"], f"{meta.get('namespace', '')}/{meta['name']}"] = obj

    def _queue(self, name: str) -> Obj:
        capped = {"cpu": str(self.rng.choice([2, 3, 5]))} if self.rng.random() < 0.7 else None
        return queue(name, weight=self.rng.randint(1, 3), capability=capped)

    def _pod(self, name: str, ns: str, **kwargs: Any) -> Obj:
        rng = self.rng
        return pod(
            name,
            ns=ns,
            cpu=rng.choice(["0.5", "1", "1", "2"]),
            priority_class=rng.choice([None, *CLASSES]),
            labels={"app": rng.choice(["a", "b"])} if rng.random() < 0.5 else None,
            annotations={"note": rng.choice(["x", "y"])} if rng.random() < 0.3 else None,
            **kwargs,
        )

    def _new_job(self) -> None:
        rng = self.rng
        self.made += 1
        q = rng.choice(self.queues)
        ns = f"ns-{rng.randint(0, 1)}"
        if rng.random() < 0.25:
            size = rng.randint(2, 3)
            name = f"g{self.made}"
            self._put(
                podgroup(name, ns=ns, min_member=size, queue=q, priority_class=rng.choice([None, *CLASSES]))
            )
            for k in range(size):
                self._put(self._pod(f"{name}-{k}", ns, group=name))
        else:
            self._put(self._pod(f"p{self.made}", ns, queue=q))

    def step(self) -> tuple[list[Obj], list[tuple[str, str, str]]]:
        """A few random changes: the objects to apply and the (kind, namespace, name) to delete."""
        rng = self.rng
        applied: list[Obj] = []
        deleted: list[tuple[str, str, str]] = []
        for _ in range(rng.randint(0, 4)):
            what = rng.random()
            pods = [k for k in self.objs if k[0] == "Pod"]
            if what < 0.25:
                before = set(self.objs)
                self._new_job()
                applied += [self.objs[k] for k in self.objs.keys() - before]
            elif what < 0.4 and pods:
                kind, key = rng.choice(pods)
                ns, _, name = key.partition("/")
                del self.objs[kind, key]
                deleted.append((kind, ns, name))
            elif what < 0.6 and pods:  # edited: a new object of the same name
                kind, key = rng.choice(pods)
                old = self.objs[kind, key]
                if old.get("spec", {}).get("nodeName"):
                    continue
                meta = old["metadata"]
                group = meta["annotations"].get("scheduling.k8s.io/group-name")
                queue_name = meta["annotations"].get("scheduling.volsched.io/queue-name")
                new = self._pod(meta["name"], meta["namespace"], group=group, queue=queue_name)
                self._put(new)
                applied.append(new)
            elif what < 0.7:
                groups = [k for k in self.objs if k[0] == "PodGroup"]
                if groups:
                    kind, key = rng.choice(groups)
                    old = self.objs[kind, key]
                    ns, _, name = key.partition("/")
                    new = podgroup(
                        name,
                        ns=ns,
                        min_member=rng.randint(1, 3),
                        queue=rng.choice(self.queues),
                        priority_class=rng.choice([None, *CLASSES]),
                    )
                    if "status" in old:
                        new["status"] = old["status"]
                    self._put(new)
                    applied.append(new)
            elif what < 0.8:
                new = self._queue(rng.choice(self.queues))
                self._put(new)
                applied.append(new)
            elif what < 0.88:
                name = rng.choice(CLASSES)
                self.values[name] = rng.choice([1, 10, 100, 1000])
                new = priority_class(name, self.values[name])
                self._put(new)
                applied.append(new)
            else:
                nodes = sorted(k for k in self.objs if k[0] == "Node")
                if len(nodes) > 1 and rng.random() < 0.5:
                    kind, key = nodes[-1]
                    del self.objs[kind, key]
                    deleted.append((kind, "", key.partition("/")[2]))
                else:
                    new = node(f"n{len(nodes) + rng.randint(0, 3)}", cpu=str(rng.choice([4, 8])))
                    self._put(new)
                    applied.append(new)
        return applied, deleted

    def ran(self, result: SessionResult) -> list[Obj]:
        """The pods the session bound, running now on their nodes."""
        out = []
        for bind in result.binds:
            ns, _, name = bind.pod.partition("/")
            old = self.objs.get(("Pod", f"{ns}/{name}"))
            if old is None:
                continue
            new = {**old, "spec": {**old["spec"], "nodeName": bind.node}, "status": {"phase": "Running"}}
            self._put(new)
            out.append(new)
        return out


def _lines(result: SessionResult) -> list[str]:
    return [
        repr([(b.pod, b.node) for b in result.binds]),
        repr(result.evictions),
        repr(result.admitted),
        repr(sorted(result.podgroups.items())),
        repr(sorted(result.queues.items())),
        repr(result.events),
        repr(sorted(result.rejections.items())),
        f"pipelined {result.pipelined} waiting {result.waiting}",
    ]


@pytest.mark.parametrize("seed", range(16))
def test_carried_shapes_decide_as_shapes_made_afresh_each_session(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    world = _World(rng)
    carrying, afresh = ClusterState(), ClusterState()
    for state in (carrying, afresh):
        for obj in world.objs.values():
            state.apply(obj)
    asked: list[tuple[Any, Any]] = []
    made: list[int] = [0]
    real_shape, real_body = CarriedShapes.shape, eviction._shape_body

    def shape(self: CarriedShapes, job: Job, tasks: list[Task], memo: Any) -> Any:
        out = real_shape(self, job, tasks, memo)
        asked.append((out, job_shape(job, list(tasks))))
        return out

    def body(*args: Any) -> Any:
        made[0] += 1
        return real_body(*args)

    monkeypatch.setattr(CarriedShapes, "shape", shape)
    monkeypatch.setattr(eviction, "_shape_body", body)
    carried_asks = fresh_made = carried_made = 0
    builds = 0
    for step in range(25):
        now = 10.0 + step
        snapshot = carrying.snapshot(now=now)
        builds += 1
        assert snapshot.built == builds
        asked.clear()
        made[0] = 0
        result = run_session(snapshot, CONF)
        carried_asks += len(asked)
        carried_made += made[0]
        # two jobs asked have one carried shape exactly when they have one shape made afresh
        forth: dict[Any, Any] = {}
        back: dict[Any, Any] = {}
        for mine, fresh in asked:
            assert (mine is None) is (fresh is None)
            if mine is not None:
                assert forth.setdefault(mine, fresh) == fresh
                assert back.setdefault(fresh, mine) == mine
        other = afresh.snapshot(now=now)
        other.kept.pop(eviction._JOB_SHAPES, None)  # (nothing carried: every shape made this session)
        made[0] = 0
        expected = run_session(other, CONF)
        fresh_made += made[0]
        assert _lines(result) == _lines(expected), f"step {step}"
        applied, deleted = world.step()
        applied += world.ran(result)
        half = rng.randint(0, len(applied))
        for state in (carrying, afresh):
            for key in result.admitted:
                state.set_podgroup_phase(key, PodGroupPhase.INQUEUE)
            for obj in applied[:half]:
                state.apply(obj)
        if rng.random() < 0.3:
            # a build whose session never ran (it failed): what the next one was built after is this
            # one, not the snapshot the shapes were carried from
            carrying.snapshot(now=now)
            builds += 1
        for state in (carrying, afresh):
            for obj in applied[half:]:
                state.apply(obj)
            for kind, ns, name in deleted:
                state.delete(kind, ns or None, name)
    assert carried_asks
    assert carried_made < fresh_made  # (carried, not made again)
