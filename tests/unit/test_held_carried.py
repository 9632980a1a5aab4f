"""What the jobs hold per queue and per namespace as a session opens, carried from the last session's open
and brought up by the jobs that hold something since (``SessionLedger._held_since``), is what a ledger
with nothing carried answers: the same keys in the same order and the same floats to the last bit, and
what a walk over every job in order from zero gives. Through random histories of pods arriving alone in
three namespaces (their default queue), asking fractions of a cpu (sums whose last bits depend on the order they
are added in), bound by the sessions and confirmed by the watch, and deleted; a session now and then not
run (the next binds two). A sum added to in another order fails it."""

from __future__ import annotations

import random
from operator import attrgetter
from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND, NullPort, run_cycle
from volsched.framework import ledger, runner
from volsched.framework.ledger import SessionLedger
from volsched.framework.registry import load_config
from volsched.framework.session import Session
from volsched.model.resources import Vector

#: Requests with no exact float (a tenth of a cpu): the sums' last bits follow the order of the additions.
CPUS = ["0.1", "0.2", "0.3", "0.7", "1.1", "2"]
NAMESPACES = ["a", "b", "c"]
#: How often a session runs after a step, and the draws under which a step deletes a pod (above 0.7).
SESSIONS = 0.75
DELETE = 0.74


class Seen:
    def __init__(self) -> None:
        self.carried = 0  # answers taken from the last session's
        self.refused = 0  # a last session's answer that did not hold (the answer summed again)
        self.added = 0  # carried answers a job was added to
        self.opens = 0  # sessions opened
        self.unseen = 0  # of them, those whose walks went over the jobs the last session did not see


def _uncarried(carrying: SessionLedger) -> SessionLedger:
    """A ledger of the same jobs with nothing of its own carried (its own copy of what is kept)."""
    mine = {*ledger._KEPT_HELD.values(), ledger._KEPT_SEEN}
    return SessionLedger(
        carrying._jobs, {k: v for k, v in carrying._kept.items() if k not in mine}, carrying._width
    )


def _fresh(carrying: SessionLedger, key: attrgetter[str]) -> dict[str, Vector]:
    """What a ledger of the same jobs with nothing carried answers."""
    return _uncarried(carrying)._held(key)


def _walk(carrying: SessionLedger, key: attrgetter[str]) -> dict[str, Vector]:
    """Every job's holding added in order from zero."""
    out: dict[str, Vector] = {}
    for job in carrying._jobs.values():
        out[key(job)] = out.get(key(job), np.zeros(carrying._width)) + job.allocated
    return out


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    out = Seen()
    since = SessionLedger._held_since

    def checked(self: SessionLedger, carried: Any, key: attrgetter[str]) -> dict[str, Vector] | None:
        got = since(self, carried, key)
        if got is None:
            out.refused += 1
            return got
        out.carried += 1
        out.added += any(a is not b for a, b in zip(got.values(), carried.sums.values(), strict=True))
        want = _fresh(self, key)
        assert list(got) == list(want)
        assert [v.tobytes() for v in got.values()] == [v.tobytes() for v in want.values()]
        walked = _walk(self, key)
        assert {k: v.tobytes() for k, v in got.items()} == {k: v.tobytes() for k, v in walked.items()}
        assert not any(v.flags.writeable for v in got.values())
        return got

    opened = runner.open_session

    def opening(*args: Any, **kwargs: Any) -> Session:
        session = opened(*args, **kwargs)
        # What the opens asked of the jobs after the run, as a ledger with nothing carried answers it.
        mine, fresh = session.ledger, _uncarried(session.ledger)
        assert [id(j) for j in mine.asking_jobs()] == [id(j) for j in fresh.asking_jobs()]
        assert [id(j) for j in mine.short_gangs()] == [id(j) for j in fresh.short_gangs()]
        assert mine.unmet().tobytes() == fresh.unmet().tobytes()
        assert mine.any_host_ports() == fresh.any_host_ports()
        assert mine.any_constrained() == fresh.any_constrained()
        out.opens += 1
        out.unseen += mine._unseen is not None and mine._unseen[1] is not None
        return session

    monkeypatch.setattr(SessionLedger, "_held_since", checked)
    monkeypatch.setattr(runner, "open_session", opening)
    return out


def _history(seed: int, steps: int) -> None:
    rng = random.Random(seed)
    state = ClusterState()
    feeder = Feeder(state)
    for obj in [node("n1", cpu="512", pods="1000"), node("n2", cpu="512", pods="1000")]:
        feeder.apply(obj["kind"], obj)
    config = load_config()
    pods: dict[str, dict[str, Any]] = {}  # the pods given, by key
    made = 0
    versions = iter(range(1, 1 << 30))

    def put(obj: dict[str, Any]) -> None:
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(next(versions))}
        feeder.apply("Pod", obj)

    for step in range(steps):
        draw = rng.random()
        if draw < 0.7 or not pods:  # a pod arrives alone, pending
            made += 1
            ns = rng.choice(NAMESPACES)
            obj = pod(
                f"p{made:04d}",
                ns=ns,
                cpu=rng.choice(CPUS),
                created=f"2026-01-01T00:{made // 60 % 60:02d}:{made % 60:02d}Z",
            )
            obj["metadata"]["uid"] = f"uid-{made}"
            pods[f"{ns}/{obj['metadata']['name']}"] = obj
            put(obj)
        elif draw < DELETE:  # a pod is deleted (it finished, or was never to run)
            key = rng.choice(sorted(pods))
            ns, name = key.split("/")
            pods.pop(key)
            feeder.delete("Pod", {"metadata": {"namespace": ns, "name": name}})
        if rng.random() < SESSIONS:
            report = run_cycle(feeder, config, NullPort(), now=1000.0 + step)
            for b in report.binds:  # the watch confirms them: the pod on its node, running
                if b.result == BOUND and b.bind.pod in pods:
                    obj = pods[b.bind.pod]
                    obj = pods[b.bind.pod] = {
                        **obj,
                        "spec": {**obj["spec"], "nodeName": b.bind.node},
                        "status": {"phase": "Running"},
                    }
                    put(obj)


@pytest.mark.parametrize("seed", range(6))
def test_the_sums_held_as_a_session_opens_are_a_fresh_ledgers_through_random_histories(
    seed: int, seen: Seen
) -> None:
    _history(seed, 400)
    assert seen.carried > 100 and seen.added > 50 and seen.refused > 0
    assert seen.unseen > seen.opens // 2
