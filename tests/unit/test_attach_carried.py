"""Attach counts carried from session to session (``volsched.model.attach``'s ``_Counts``, kept in the node
table's memo) against counts made from every pod on the nodes: random walks of sessions, each starting
from the builder's dicts of tasks per node (a node whose pods changed is a new dict, a pod sometimes made
again under its name on another node), changing some nodes as a session does (a dict copied before its
first change, then changed in place: pods placed, evicted, an eviction or a placement undone), the
catalog sometimes another object (a claim, a volume, an attachment or a limit changed), the node table
sometimes another of the same nodes or of nodes joined and gone (the counts handed to its memo:
``carry_counts``; a node joins anywhere in the order, with pods or none, and a node leaves with its pods).
Every count, every dict of users and every answer is the same with and without the carried counts (the
counts by node name: the carried ones stand in slots of their own), and a session's changes never reach
the next session's counts."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from volsched.model.attach import AttachCatalog, AttachState, carry_counts
from volsched.model.vocabulary import Task, TaskStatus
from volsched.model.volumes import PersistentVolumeSpec, StorageClassSpec, VolumeClaim

NODES = 16
#: Node names n0.. n<NODES + SPARE - 1>: NODES in the first table, the others to join later.
SPARE = 6
DRIVERS = ("d1", "d2")


def _task(rng: random.Random, n: int, *, node: str | None) -> Task:
    claims = tuple(sorted(rng.sample([f"c{k}" for k in range(10)], k=rng.randrange(0, 3))))
    inline = ((rng.choice(DRIVERS), f"inline-{rng.randrange(4)}"),) if rng.random() < 0.15 else ()
    status = rng.choice(
        [TaskStatus.RUNNING, TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.RELEASING, TaskStatus.SUCCEEDED]
        if node
        else [TaskStatus.PENDING]
    )
    return Task(
        namespace="default", name=f"t{n}", uid=f"t{n}", job_key="", request_map={}, priority=0,
        status=status, node_name=node, scheduler_name="volsched", creation=0.0, request=np.zeros(1),
        claims=claims, inline_volumes=inline,
    )  # fmt: skip


def _catalog(rng: random.Random) -> AttachCatalog:
    """Claims c0..c9: bound to a CSI volume of d1 or d2 (two claims may share one), a volume that is not
    CSI, a class's dynamic one, or missing; limits on most nodes; a few VolumeAttachments."""
    claims: dict[str, VolumeClaim] = {}
    volumes: dict[str, PersistentVolumeSpec] = {}
    for k in range(10):
        roll = rng.random()
        if roll < 0.1:
            continue  # missing
        if roll < 0.3:
            claims[f"default/c{k}"] = VolumeClaim(
                namespace="default", name=f"c{k}", uid=f"c{k}", storage_class="fast"
            )
            continue
        v = f"v{rng.randrange(7)}"
        claims[f"default/c{k}"] = VolumeClaim(
            namespace="default", name=f"c{k}", uid=f"c{k}", storage_class="", volume=v
        )
        if v not in volumes:
            csi = None if rng.random() < 0.15 else (rng.choice(DRIVERS), f"handle-{v}")
            volumes[v] = PersistentVolumeSpec(name=v, csi=csi)
    limits = {
        f"n{i}": {d: rng.randrange(1, 4) for d in DRIVERS if rng.random() < 0.8}
        for i in range(NODES + SPARE)  # (CSINodes of nodes the table does not have, or not yet)
        if rng.random() < 0.9
    }
    attached = {
        f"va-{j}": (f"n{rng.randrange(NODES + SPARE)}", rng.choice(DRIVERS), f"v{rng.randrange(8)}")
        for j in range(rng.randrange(0, 6))
    }
    return AttachCatalog(
        limits=limits,
        claims=claims,
        volumes=volumes,
        classes={"fast": StorageClassSpec(name="fast", provisioner="d2", wait_for_consumer=True)},
        attached=attached,
    )


def _tweaked(rng: random.Random, c: AttachCatalog) -> AttachCatalog:
    """``c`` as the cache hands it after an event or two: new tables (as it copies them) holding the
    same objects but one or two claims, volumes, VolumeAttachments or classes made anew, added or gone."""
    claims, volumes, classes, attached = dict(c.claims), dict(c.volumes), dict(c.classes), dict(c.attached)
    limits = c.limits
    for _ in range(rng.randrange(1, 3)):
        roll = rng.random()
        if roll < 0.3:
            k = rng.randrange(10)
            if rng.random() < 0.2:
                claims.pop(f"default/c{k}", None)
            elif rng.random() < 0.3:
                claims[f"default/c{k}"] = VolumeClaim(
                    namespace="default", name=f"c{k}", uid=f"c{k}", storage_class="fast"
                )
            else:
                claims[f"default/c{k}"] = VolumeClaim(
                    namespace="default",
                    name=f"c{k}",
                    uid=f"c{k}",
                    storage_class="",
                    volume=f"v{rng.randrange(8)}",
                )
        elif roll < 0.55:
            v = f"v{rng.randrange(8)}"
            if rng.random() < 0.2:
                volumes.pop(v, None)
            else:
                csi = None if rng.random() < 0.15 else (rng.choice(DRIVERS), f"handle-{v}-{rng.randrange(2)}")
                volumes[v] = PersistentVolumeSpec(name=v, csi=csi)
        elif roll < 0.85:
            name = f"va-{rng.randrange(8)}"
            if rng.random() < 0.3:
                attached.pop(name, None)
            else:
                attached[name] = (
                    f"n{rng.randrange(NODES + SPARE)}",
                    rng.choice(DRIVERS),
                    f"v{rng.randrange(8)}",
                )
        elif roll < 0.95:  # a StorageClass made again (the same, or another provisioner)
            classes["fast"] = StorageClassSpec(
                name="fast", provisioner=rng.choice(DRIVERS), wait_for_consumer=True
            )
        elif rng.random() < 0.5:
            limits = {**limits, "n0": {"d1": rng.randrange(1, 4)}}
        else:  # a node's CSINode made, changed or gone (the drivers with a limit somewhere the same, mostly)
            node = f"n{rng.randrange(NODES + SPARE)}"
            limits = dict(limits)
            if rng.random() < 0.3:
                limits.pop(node, None)
            else:
                limits[node] = {d: rng.randrange(1, 4) for d in DRIVERS if rng.random() < 0.7}
    return AttachCatalog(limits=limits, claims=claims, volumes=volumes, classes=classes, attached=attached)


def _seen(state: AttachState, probes: list[Task]) -> dict[str, Any]:
    """Everything the session's counts say, as plain values, by node name (a node's counts stand in its
    slot: the carried counts' slots are not the table's places once a node joined or left)."""
    out: dict[str, Any] = {
        "answers": [
            (
                None if (c := state.check(p)) is None else c.tolist(),
                None if (w := state.now(p)) is None else w.tolist(),
                None if (r := state.relievable(p)) is None else r.tolist(),
                state.holders(p),
                state.explain(p, np.arange(len(state.index))),
            )
            for p in probes
        ]
    }
    if state._built:
        name = {i: n for n, i in state._slots.items()}
        perm = np.arange(len(state.index)) if state._perm is None else state._perm
        assert [name[i] for i in perm.tolist()] == list(state.index)  # (each place's slot: its node's)

        def by_name(on: dict[Any, dict[int, int]]) -> dict[Any, dict[str, int]]:
            return {a: {name[i]: n for i, n in at.items()} for a, at in on.items()}

        free = sorted(set(range(state._n)) - set(perm.tolist()))
        for a in (*state.attached.values(), *state.kept.values()):
            assert not a[free].any()  # (nothing counted in a free slot)
        for a in state.limits.values():
            assert (a[free] == -1).all()
        out.update(
            attached={d: a[perm].tolist() for d, a in state.attached.items()},
            kept={d: a[perm].tolist() for d, a in state.kept.items()},
            limits={d: a[perm].tolist() for d, a in state.limits.items()},
            users=by_name(state.users),
            staying=by_name(state.staying),
            where={k: (name[i], got) for k, (i, got) in state._where.items()},
            leaving=state._leaving,
        )
    return out


class Walk:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.made = 0
        self.index = {f"n{i}": i for i in range(NODES)}
        #: The names not in the table (to join).
        self.spare = [f"n{i}" for i in range(NODES, NODES + SPARE)]
        self.catalog = _catalog(self.rng)
        self.held: list[dict[str, Task]] = [{} for _ in range(NODES)]  # the builder's: never changed in place
        for _ in range(20):
            self.builder_adds()
        self.memo: dict[str, Any] = {}
        #: Draws of its own for a new node table of the same nodes (the walk's other draws as they were).
        self.tables = random.Random(-1 - seed)

    @property
    def names(self) -> list[str]:
        """The table's node names, by place."""
        return list(self.index)

    def new_task(self, node: str | None) -> Task:
        self.made += 1
        return _task(self.rng, self.made, node=node)

    def builder_adds(self) -> None:
        i = self.rng.randrange(len(self.held))
        t = self.new_task(self.names[i])
        self.held[i] = {**self.held[i], t.key: t}

    def builder_changes(self) -> None:
        """What the cache saw between sessions: a node's dict made anew (a pod came, went or changed)."""
        rng = self.rng
        for _ in range(rng.randrange(0, 4)):
            i = rng.randrange(len(self.held))
            roll = rng.random()
            if roll < 0.4 or not self.held[i]:
                self.builder_adds()
            elif roll < 0.6:
                key = rng.choice(sorted(self.held[i]))
                self.held[i] = {k: t for k, t in self.held[i].items() if k != key}
            elif roll < 0.7:  # deleted and made again under its name on another node (a StatefulSet's)
                key = rng.choice(sorted(self.held[i]))
                old = self.held[i][key]
                j = rng.choice([j for j in range(len(self.held)) if j != i])
                t = self.new_task(self.names[j])
                t.name, t.claims = old.name, old.claims
                self.held[i] = {k: t for k, t in self.held[i].items() if k != key}
                self.held[j] = {**self.held[j], key: t}
            else:  # a pod's status changed: another task object
                key = rng.choice(sorted(self.held[i]))
                old = self.held[i][key]
                t = self.new_task(old.node_name)
                t.name, t.uid, t.claims = old.name, old.uid, old.claims
                self.held[i] = {**self.held[i], key: t}
        if rng.random() < 0.1:
            self.held = [dict(h) for h in self.held]  # every node's dict anew (a full build)
        if rng.random() < 0.05:
            self.catalog = _catalog(rng)
        elif rng.random() < 0.6:
            self.catalog = _tweaked(rng, self.catalog)
        roll = self.tables.random()
        if roll < 0.2:  # a node's labels or readiness changed: a new table of the same nodes
            memo: dict[str, Any] = {}
            carry_counts(self.memo, memo)
            self.memo, self.index = memo, dict(self.index)
        elif roll < 0.35:  # nodes joined or left: a new table of other nodes, the counts handed to it
            self.rejoin()
            memo = {}
            carry_counts(self.memo, memo)
            self.memo = memo

    def rejoin(self) -> None:
        """A node or two leave (their pods with them: dicts gone) or join anywhere in the order (with no
        pods, or with some: a new dict); the table's index made anew in the new order."""
        rng = self.tables
        names = list(self.index)
        held = dict(zip(names, self.held, strict=True))
        for _ in range(rng.randrange(1, 3)):
            if rng.random() < 0.5 and len(names) > 4:
                gone = names.pop(rng.randrange(len(names)))
                del held[gone]
                self.spare.append(gone)
            elif self.spare:
                node = self.spare.pop(rng.randrange(len(self.spare)))
                names.insert(rng.randrange(len(names) + 1), node)
                held[node] = {}
                if rng.random() < 0.5:
                    t = self.new_task(node)
                    held[node] = {t.key: t}
        self.index = {n: i for i, n in enumerate(names)}
        self.held = [held[n] for n in names]

    def session(self) -> None:
        rng = self.rng
        tasks = list(self.held)  # (lent: copied before the session first changes one)
        twin = list(self.held)
        nodes = len(self.held)
        lent = [True] * nodes

        def own(i: int) -> dict[str, Task]:
            if lent[i]:
                lent[i] = False
                tasks[i] = dict(tasks[i])
                twin[i] = tasks[i]
            return tasks[i]

        # Some nodes changed by the session before it first asks about attachments.
        for _ in range(rng.randrange(0, 3)):
            i = rng.randrange(nodes)
            t = self.new_task(self.names[i])
            own(i)[t.key] = t
        carried = AttachState(self.catalog, index=self.index, tasks=lambda: tasks, memo=self.memo)
        fresh = AttachState(self.catalog, index=self.index, tasks=lambda: twin)
        probes = [self.new_task(None) for _ in range(3)]
        assert _seen(carried, probes) == _seen(fresh, probes)
        # The session places, evicts and undoes, with both told the same.
        for _ in range(rng.randrange(0, 8)):
            i = rng.randrange(nodes)
            on = tasks[i]
            roll = rng.random()
            if roll < 0.4 or not on:  # a pending pod placed
                t = self.new_task(None)
                t.node_name, t.status = self.names[i], TaskStatus.ALLOCATED
                own(i)[t.key] = t
                carried.add(t)
                fresh.add(t)
                continue
            key = rng.choice(sorted(on))
            old = on[key]
            t = Task(**{f: getattr(old, f) for f in ("namespace", "name", "uid", "job_key", "request_map")},
                     priority=0, status=old.status, node_name=old.node_name, scheduler_name="volsched",
                     creation=0.0, request=np.zeros(1), claims=old.claims,
                     inline_volumes=old.inline_volumes)  # fmt: skip
            if roll < 0.7 and t.status is not TaskStatus.RELEASING:  # evicted
                t.status = TaskStatus.RELEASING
                own(i)[key] = t
                carried.remove(t)
                fresh.remove(t)
            elif t.status is TaskStatus.RELEASING:  # the eviction undone
                t.status = TaskStatus.RUNNING
                own(i)[key] = t
                carried.add(t)
                fresh.add(t)
            else:  # a placement undone
                t.status = TaskStatus.PENDING
                del own(i)[key]
                carried.remove(t)
                fresh.remove(t)
            assert _seen(carried, probes) == _seen(fresh, probes)


@pytest.mark.parametrize("seed", range(40))
def test_carried_attach_counts_are_the_counts_of_every_pod(seed: int) -> None:
    walk = Walk(seed)
    for _ in range(30):
        walk.builder_changes()
        walk.session()


def test_a_new_node_table_takes_the_counts_over() -> None:
    """A node relabelled (or not ready, or resized) makes another node table, and so does a node that
    joins or leaves: the counts the sessions carried go to its memo (what they read of the nodes is
    their names; their places are slots of their own), and the next session brings them to the table's
    places and the pods as it would on the same table: what it counts is what every pod counts."""
    from tests.builders import csi_node, node, pod, pv, pvc
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState
    from volsched.framework.registry import load_config
    from volsched.framework.runner import run_session
    from volsched.model import attach

    feeder = Feeder(ClusterState())
    for i in range(8):  # (a node in four or more joining or leaving: counted anew, the counts not handed)
        feeder.apply("Node", node(f"n{i}", cpu="8"))
        feeder.apply("CSINode", csi_node(f"n{i}", ebs_csi_aws_com=2))
    for k in range(5):
        feeder.apply("PersistentVolume", pv(f"v{k}", csi="ebs.csi.aws.com"))
        feeder.apply("PersistentVolumeClaim", pvc(f"c{k}", volume=f"v{k}"))
    for name, on, claim in (("bound", "n0", "c0"), ("b2", "n2", "c4")):
        bound = pod(name, cpu="1", node=on)
        bound["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
        feeder.apply("Pod", bound)
    config = load_config()

    def arrives(name: str, claim: str) -> None:
        obj = pod(name, cpu="1")
        obj["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
        feeder.apply("Pod", obj)

    def counted_as_every_pod(snap: Any) -> None:
        """The carried counts, brought to ``snap``, say what counts of every pod on its nodes say."""
        nodes, probes = snap.nodes, [_task(random.Random(k), 1000 + k, node=None) for k in range(4)]
        for p in probes:
            p.claims = (f"c{p.uid[-1]}",)
        carried = AttachState(snap.attach, index=nodes.index, tasks=lambda: nodes.tasks, memo=nodes.memo)
        fresh = AttachState(snap.attach, index=nodes.index, tasks=lambda: nodes.tasks)
        assert _seen(carried, probes) == _seen(fresh, probes)

    arrives("p1", "c1")
    first = feeder.state.snapshot(now=1.0)
    run_session(first, config)
    counts = first.nodes.memo.get(attach._CARRIED)
    assert counts is not None  # (the session counted)
    feeder.apply("Node", node("n2", cpu="8", labels={"zone": "b"}))
    arrives("p2", "c2")
    second = feeder.state.snapshot(now=2.0)
    assert second.nodes.memo is not first.nodes.memo  # another table
    assert second.nodes.memo.get(attach._CARRIED) is counts
    run_session(second, config)
    feeder.apply("Node", node("n8", cpu="8"))  # a node joins
    feeder.apply("CSINode", csi_node("n8", ebs_csi_aws_com=1))
    third = feeder.state.snapshot(now=3.0)
    assert third.nodes.names == [f"n{i}" for i in range(9)]
    assert third.nodes.memo.get(attach._CARRIED) is counts  # (handed over: n8 counted alone when asked)
    counted_as_every_pod(third)
    assert third.nodes.memo.get(attach._CARRIED) is counts and counts.perm is None  # (last: slot = place)
    feeder.delete("Node", node("n1", cpu="8"))  # a node leaves: the places after it move
    fourth = feeder.state.snapshot(now=4.0)
    assert fourth.nodes.names == ["n0", *(f"n{i}" for i in range(2, 9))]
    counted_as_every_pod(fourth)
    assert fourth.nodes.memo.get(attach._CARRIED) is counts
    assert counts.perm is not None and counts.perm.tolist() == [0, *range(2, 9)]
    feeder.apply("Node", node("n9", cpu="8"))  # joins in the slot n1 left
    arrives("p3", "c3")
    fifth = feeder.state.snapshot(now=5.0)
    counted_as_every_pod(fifth)
    assert fifth.nodes.memo.get(attach._CARRIED) is counts
    assert counts.perm is not None and counts.perm.tolist() == [0, *range(2, 9), 1]
    run_session(fifth, config)


def test_the_slots_of_nodes_gone_are_compacted() -> None:
    """Nodes leaving one at a time each empty their slot alone; once more than one slot in four would
    be free, the counts are made anew with one slot per node (slot = place), not kept at the size of
    the most nodes there ever were: what they count is what every pod counts, before and after."""
    from tests.builders import csi_node, node, pod, pv, pvc
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState
    from volsched.framework.registry import load_config
    from volsched.framework.runner import run_session
    from volsched.model import attach

    feeder = Feeder(ClusterState())
    for i in range(16):
        feeder.apply("Node", node(f"n{i}", cpu="8"))
        feeder.apply("CSINode", csi_node(f"n{i}", ebs_csi_aws_com=2))
    for k in range(16):
        feeder.apply("PersistentVolume", pv(f"v{k}", csi="ebs.csi.aws.com"))
        feeder.apply("PersistentVolumeClaim", pvc(f"c{k}", volume=f"v{k}"))
        bound = pod(f"b{k}", cpu="1", node=f"n{k}")
        bound["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": f"c{k}"}}]
        feeder.apply("Pod", bound)
    arriving = pod("p", cpu="1")
    arriving["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "c0"}}]
    feeder.apply("Pod", arriving)
    run_session(feeder.state.snapshot(now=1.0), load_config())
    sizes = []
    for k, gone in enumerate((15, 3, 7, 11, 1, 9, 5, 13), start=2):  # one at a time, each counted alone
        feeder.delete("Node", node(f"n{gone}", cpu="8"))
        feeder.delete("Pod", pod(f"b{gone}", cpu="1", node=f"n{gone}"))
        snap = feeder.state.snapshot(now=float(k))
        nodes = snap.nodes
        probes = [_task(random.Random(j), 1000 + j, node=None) for j in range(4)]
        for j, p in enumerate(probes):
            p.claims = (f"c{j * 4}",)
        tasks, catalog = nodes.tasks, snap.attach
        assert catalog is not None
        carried = AttachState(catalog, index=nodes.index, tasks=tasks.copy, memo=nodes.memo)
        fresh = AttachState(catalog, index=nodes.index, tasks=tasks.copy)
        assert _seen(carried, probes) == _seen(fresh, probes)
        counts = nodes.memo[attach._CARRIED]
        sizes.append(counts.size)
        assert (counts.size - len(nodes.index)) * attach._NODES_FULL <= len(nodes.index), sizes
    assert sizes == [16, 16, 16, 12, 12, 12, 9, 9]  # (made anew as the 4th and 7th left: 4 of 12, 3 of 9)
