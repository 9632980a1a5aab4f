"""The operator over time on a real cluster: a seeded workload of batch/v1 Jobs (gangs of 1 to 3 pods,
two queues, each pod running a few seconds on a kwok node) arrives over a minute, and a watcher checks
the invariants at every look, all along, not only at the end:

* no node holds pods (bound and not finished) asking more cpu than it has;
* no gang stays half-bound (some of its pods on a node, fewer than its minimum) for more than two of the
  operator's cycles (counted on its metrics: under load a cycle takes longer, the rule does not);
* every job that can run does: all of them complete;
* once both queues are busy (elastic Jobs asking the whole cluster each), each holds its share within one
  pod, and keeps it over the operator's next cycles (reclaim moves no pod back and forth).

Nothing waits for time: arrivals are spaced by the operator's own decisions (a Job arrives at once, or
once a session has had its word on the pods of the one before), and the end is every Job complete."""

from __future__ import annotations

import random
import threading
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import (
    RECLAIM_CONFIG,
    Kube,
    OperatorProcess,
    Start,
    queue,
    real_cluster,
    wait_for,
)
from volsched.model.resources import parse_amount
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane

pytestmark = pytest.mark.cluster
GANG = "scheduling.volsched.io/min-member"
JOBS = 30
#: How long the cluster's waits may take (its controllers act within a second or two).
SLOW = 120
#: Cycles a gang may be seen half-bound (its binds are sent together but land one by one).
HALF_BOUND_CYCLES = 2


@pytest.fixture
def cluster() -> Iterator[LocalControlPlane]:
    yield from real_cluster()


def _job(name: str, *, size: int, queue_name: str, seconds: int) -> dict[str, Any]:
    template = {
        "metadata": {
            "labels": {"job": name},
            "annotations": {GANG: str(size), RUN_FOR: f"{seconds}s",
                            "scheduling.volsched.io/queue-name": queue_name},
        },
        "spec": {
            "schedulerName": "volsched", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        },
    }  # fmt: skip
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": size, "completions": size, "backoffLimit": 100, "template": template}}  # fmt: skip


@dataclass
class Cycles:
    """The operator's cycles so far (sessions run or skipped), read from its /metrics at most every half
    second (it answers a client 5 times a second; a 429 keeps the last count)."""

    op: OperatorProcess
    _last: float = 0.0
    _at: float = -1.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self) -> float:
        with self._lock:
            if time.monotonic() - self._at >= 0.5:
                try:
                    text = self.op.metrics()
                except urllib.error.HTTPError as exc:
                    if exc.code != 429:
                        raise
                else:
                    self._last = sum(
                        float(line.rpartition(" ")[2])
                        for line in text.splitlines()
                        if line.startswith(("volsched_sessions_total ", "volsched_sessions_skipped_total "))
                    )
                    self._at = time.monotonic()
            return self._last


@dataclass
class Watcher:
    """Looks at the cluster again and again (one list of nodes and pods a look) and records every
    invariant broken, with the look it was seen in."""

    k: Kube
    ns: str
    cycles: Cycles
    sizes: dict[str, int] = field(default_factory=dict)  # job -> its gang's minimum
    broken: list[str] = field(default_factory=list)
    looks: int = 0
    #: job -> the operator's cycle count when it was first seen half-bound (in its current stretch).
    half_since: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def look(self) -> None:
        cycle = self.cycles()
        allocatable = {
            n.metadata.name: parse_amount(n.status.allocatable["cpu"], where="cpu")
            for n in self.k.core.list_node().items
        }
        used = dict.fromkeys(allocatable, 0.0)
        bound: dict[str, int] = {}
        for p in self.k.core.list_namespaced_pod(self.ns).items:
            if not p.spec.node_name:
                continue
            job = (p.metadata.labels or {}).get("job", "")
            bound[job] = bound.get(job, 0) + 1  # finished pods count toward the gang, as they did
            if p.status.phase not in ("Succeeded", "Failed"):
                used[p.spec.node_name] += parse_amount(
                    p.spec.containers[0].resources.requests["cpu"], where="cpu"
                )
        for name, cpu in used.items():
            if cpu > allocatable[name] + 1e-9:
                self.broken.append(
                    f"look {self.looks}: node {name} holds cpu {cpu:g} of {allocatable[name]:g}"
                )
        for job, size in self.sizes.items():
            if 0 < bound.get(job, 0) < size:
                since = self.half_since.setdefault(job, cycle)
                if cycle - since > HALF_BOUND_CYCLES:
                    self.broken.append(
                        f"look {self.looks}: gang {job} half-bound ({bound[job]} of {size}) "
                        f"for {cycle - since:g} cycles"
                    )
            else:
                self.half_since.pop(job, None)
        self.looks += 1

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except client.ApiException as exc:  # a look the apiserver did not answer: the next one will
                if exc.status is not None and exc.status < 500:
                    raise

    def __enter__(self) -> Watcher:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _decided(k: Kube, ns: str, job: str, size: int) -> bool:
    """Whether Job ``job``'s ``size`` pods are made and a session has had its word on each: bound, or
    told why it waits (its PodScheduled condition False)."""
    pods = k.core.list_namespaced_pod(ns, label_selector=f"job={job}").items
    return len(pods) >= size and all(
        p.spec.node_name
        or any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or ())
        for p in pods
    )


def _two_queues_on_three_nodes(
    cluster: LocalControlPlane, k: Kube, start_operator: Start, *, namespace: str
) -> tuple[str, client.BatchV1Api, OperatorProcess, Cycles]:
    """Both tests' cluster: three kwok nodes of 4 cpu, queues qa and qb under reclaim and preempt, the
    operator started; the namespace made, the Jobs' client, the operator and its cycle count."""
    for i in range(3):
        cluster.kwok_node(f"kwok-{i}", cpu="4")
    k.set_config(RECLAIM_CONFIG)
    k.queue(queue("qa"))
    k.queue(queue("qb"))
    ns = k.namespace(namespace)
    op = start_operator()
    return ns, client.BatchV1Api(k.api), op, Cycles(op)


def test_over_a_minute_of_arrivals_no_node_is_overfull_no_gang_stays_half_bound_and_every_job_completes(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    ns, batch, op, cycles = _two_queues_on_three_nodes(cluster, k, start_operator, namespace="over-time")
    rng = random.Random(29)
    plan = [
        (
            f"j{i:02d}",
            rng.choice((1, 1, 2, 3)),
            rng.choice(("qa", "qb")),
            rng.randint(3, 12),
            rng.randint(0, 2) > 0,  # whether the next Job waits for the word on its pods
        )
        for i in range(JOBS)
    ]
    with Watcher(k, ns, cycles) as watcher:
        for name, size, queue_name, seconds, waits in plan:
            watcher.sizes[name] = size
            batch.create_namespaced_job(ns, _job(name, size=size, queue_name=queue_name, seconds=seconds))
            if waits:  # the next arrival comes once a session has had its word on this Job's pods
                wait_for(partial(_decided, k, ns, name, size), 60, what=f"{name}'s pods decided", operator=op)

        def done() -> bool:
            jobs = batch.list_namespaced_job(ns).items
            return len(jobs) == JOBS and all(
                any(c.type == "Complete" and c.status == "True" for c in j.status.conditions or ())
                for j in jobs
            )

        wait_for(done, 600, interval=1.0, what=f"all {JOBS} Jobs complete", operator=op)
    assert watcher.looks > 50, watcher.looks  # it looked all along, not once
    assert not watcher.broken, watcher.broken[:10]


def _elastic(name: str, *, queue_name: str, pods: int) -> dict[str, Any]:
    """A Job of ``pods`` one-cpu pods that run until the test ends, each may start alone (minMember 1),
    its evicted pods made again (they count as failed: the backoff limit is high)."""
    out = _job(name, size=pods, queue_name=queue_name, seconds=3600)
    annotations = out["spec"]["template"]["metadata"]["annotations"]
    annotations[GANG] = "1"
    del annotations[RUN_FOR]
    out["spec"]["backoffLimit"] = 10000
    return out


def test_once_both_queues_are_busy_each_holds_its_share_within_one_pod_and_keeps_it(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    ns, batch, op, cycles = _two_queues_on_three_nodes(cluster, k, start_operator, namespace="fair")

    def running() -> dict[str, int]:
        out = {"a": 0, "b": 0}
        for p in k.core.list_namespaced_pod(ns).items:
            if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp:
                out[(p.metadata.labels or {})["job"]] += 1
        return out

    batch.create_namespaced_job(ns, _elastic("a", queue_name="qa", pods=12))
    wait_for(lambda: running()["a"] == 12, SLOW, what="queue qa borrowing all 12 cpu", operator=op)
    batch.create_namespaced_job(ns, _elastic("b", queue_name="qb", pods=12))  # both busy from now on
    wait_for(lambda: abs(running()["a"] - 6) <= 1 and abs(running()["b"] - 6) <= 1, SLOW,
             what="both queues within one pod of their share, 6 cpu", operator=op)  # fmt: skip
    # And they stay there: no pod moves back and forth over the operator's next cycles.
    until = cycles() + 10
    seen = []
    while cycles() < until:
        now = running()
        seen.append(now)
        assert abs(now["a"] - 6) <= 1 and abs(now["b"] - 6) <= 1, seen
        op.check_running()
