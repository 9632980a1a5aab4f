"""What checking the pods' signed bound-under records costs the cache (docs/tenancy.md "The signed record").

Two measures over ``--pods`` running pods (5,000 by default), each carrying the record of its gang's bind
signed for it (``admitted.sign``), repeated ``--repeats`` times:

* ``verified()`` alone, once a pod: signed with the key that signs (one HMAC-SHA256), with the ``previous``
  key (two: the first tried does not verify), by a key the scheduler does not hold (two, neither
  verifies) and unsigned (no HMAC: the signature's pattern is not found);
* a pod event's whole way into the cache (``ClusterState.apply`` of a Running pod with its record, a new
  resourceVersion and a label changed, so that the pod is parsed again), with the keys set (each record
  checked) and without (the simulator's way), in the order A B B A each repeat.

Prints microseconds of CPU a pod (the thread's CPU time; median of the repeats, with their min and max;
for the pod event, also each A B B A block's difference of the two), and the machine line.

    .venv/bin/python bench/record_verify.py [--pods 5000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from builders import raw_node, raw_pod
from machine import describe

from volsched.cache.state import ClusterState
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER, RecordKeys

KEY, PREVIOUS, OTHER = b"k" * 32, b"p" * 32, b"o" * 32
NODES = 50


def _records(pods: int, key: bytes | None) -> list[tuple[str, str]]:
    """(uid, record) of ``pods`` pods in gangs of 8: signed with ``key`` (None: unsigned)."""
    out = []
    for i in range(pods):
        uid = str(uuid.uuid4())
        text = admitted.bound_under(
            uid=f"pg-{i // 8:05d}-{uuid.uuid4()}",
            queue=f"team-{i % 7}",
            priority_class="batch-low",
            priority=100,
            min_member=8,
        )
        out.append((uid, text if key is None else admitted.sign(text, uid=uid, key=key)))
    return out


def _per_pod(run: Callable[[], object], pods: int) -> float:
    """Microseconds of this thread's CPU a pod (its CPU time, not the wall's: the machine is shared, and
    a wait for a core is not the work's cost)."""
    started = time.thread_time()
    run()
    return 1e6 * (time.thread_time() - started) / pods


def _spread(samples: list[float]) -> str:
    return f"{statistics.median(samples):6.2f} us of CPU/pod (min {min(samples):.2f}, max {max(samples):.2f})"


def verify_alone(pods: int, repeats: int) -> None:
    keys = (KEY, PREVIOUS)
    cases = {
        "signed with the key that signs": _records(pods, KEY),
        "signed with the previous key": _records(pods, PREVIOUS),
        "signed by a key not held": _records(pods, OTHER),
        "unsigned": _records(pods, None),
    }
    samples: dict[str, list[float]] = {what: [] for what in cases}
    order = list(cases)
    for r in range(repeats):  # each repeat in another order: none always first or last
        for what in order[r % len(order) :] + order[: r % len(order)]:

            def run(records: list[tuple[str, str]] = cases[what]) -> None:
                for uid, text in records:
                    admitted.verified(text, uid=uid, keys=keys)

            samples[what].append(_per_pod(run, pods))
    for what in order:
        print(f"verified(), 2 keys held, {what:32}: {_spread(samples[what])}")


def _cluster(pods: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The nodes, and ``pods`` Running pods with their signed records, spread over them."""
    nodes = [raw_node(i) for i in range(NODES)]
    out = []
    for i, (uid, text) in enumerate(_records(pods, KEY)):
        obj = raw_pod(
            f"p-{i:05d}", namespace=f"ns-{i % 20}", uid=uid, rv=10 + i, labels={"app": "a"},
            group=f"g-{i // 8:05d}", node=f"node-{i % NODES:05d}",
        )  # fmt: skip
        obj["metadata"]["annotations"][BOUND_UNDER] = text
        out.append(obj)
    return nodes, out


def _events(pods: list[dict[str, Any]], round_: int) -> list[dict[str, Any]]:
    """Each pod's next event: a new resourceVersion and a label changed (parsed again, its record read)."""
    out = []
    for obj in pods:
        meta = {**obj["metadata"], "resourceVersion": f"{obj['metadata']['resourceVersion']}-{round_}"}
        meta["labels"] = {"app": "a", "round": str(round_)}
        out.append({**obj, "metadata": meta})
    return out


def apply_events(pods: int, repeats: int) -> None:
    nodes, raw = _cluster(pods)
    samples: dict[bool, list[float]] = {True: [], False: []}
    deltas: list[float] = []
    round_ = 0
    for _ in range(repeats):
        block: dict[bool, list[float]] = {True: [], False: []}
        for keyed in (True, False, False, True):
            state = ClusterState()
            state.record_keys = RecordKeys(keys=(KEY, PREVIOUS), since=1.0) if keyed else None
            for obj in nodes + raw:
                state.apply(obj)
            round_ += 1
            events = _events(raw, round_)

            def run(state: ClusterState = state, events: list[dict[str, Any]] = events) -> None:
                for obj in events:
                    state.apply(obj)

            block[keyed].append(_per_pod(run, pods))
            if keyed:
                assert not state.not_verified  # (every record verified)
        for keyed, taken in block.items():
            samples[keyed] += taken
        deltas.append(statistics.mean(block[True]) - statistics.mean(block[False]))
    for keyed in (False, True):
        what = "records checked (keys held)" if keyed else "records not checked (no keys)"
        print(f"a Running pod's event into the cache, {what:30}: {_spread(samples[keyed])}")
    print(f"the check's share of a pod event (each A B B A's difference): {_spread(deltas)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(describe())
    print(f"{args.pods} pods, {args.repeats} repeats")
    verify_alone(args.pods, args.repeats)
    apply_events(args.pods, args.repeats)
    print(describe())


if __name__ == "__main__":
    main()
