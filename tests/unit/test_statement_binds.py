"""A Statement hands the binds of each commit to the session's sink at once, all of them in one call
(a gang's together), and only on commit: what is discarded, rolled back, held or pipelined is never
handed over. The result lists every bind all the same."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Bind
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.framework.statement import Statement

A, B = "ns/g-0", "ns/g-1"


def gang_session(calls: list[list[str]]) -> Session:
    state = ClusterState()
    for obj in [node("n1", cpu="4"), queue("q"), podgroup("g", ns="ns", queue="q", min_member=2),
                pod("g-0", ns="ns", cpu="1", group="g"), pod("g-1", ns="ns", cpu="1", group="g")]:  # fmt: skip
        state.apply(obj)

    def sink(binds: list[Bind]) -> None:
        calls.append([b.pod for b in binds])

    return open_session(state.snapshot(now=1.0), load_config(), on_binds=sink)


def _both_then(finish: str) -> Callable[[Session], None]:
    def play(session: Session) -> None:
        statement = Statement(session)
        statement.allocate(session.jobs["ns/g"].tasks[A], 0)
        statement.allocate(session.jobs["ns/g"].tasks[B], 0)
        getattr(statement, finish)()

    return play


def _one_statement_each(session: Session) -> None:
    for key in (A, B):
        statement = Statement(session)
        statement.allocate(session.jobs["ns/g"].tasks[key], 0)
        statement.commit()


def _rolled_back_to_one(session: Session) -> None:
    statement = Statement(session)
    statement.allocate(session.jobs["ns/g"].tasks[A], 0)
    mark = len(statement)
    statement.allocate(session.jobs["ns/g"].tasks[B], 0)
    statement.rollback(mark)
    statement.commit()


def _pipelined(session: Session) -> None:
    statement = Statement(session)
    statement.allocate(session.jobs["ns/g"].tasks[A], 0)
    statement.pipeline(session.jobs["ns/g"].tasks[B], 0)
    statement.commit()


@pytest.mark.parametrize(
    ("play", "calls"),
    [
        pytest.param(_both_then("commit"), [[A, B]], id="a commit's binds in one call"),
        pytest.param(_one_statement_each, [[A], [B]], id="one call per commit, in commit order"),
        pytest.param(_both_then("discard"), [], id="a discarded statement hands nothing over"),
        pytest.param(_both_then("hold"), [], id="a held statement hands nothing over"),
        pytest.param(_rolled_back_to_one, [[A]], id="what was rolled back is not handed over"),
        pytest.param(_pipelined, [[A]], id="a pipelined task is no bind"),
    ],
)
def test_a_commit_hands_its_binds_to_the_session_sink_at_once(
    play: Callable[[Session], None], calls: list[list[str]]
) -> None:
    handed: list[list[str]] = []
    session = gang_session(handed)
    play(session)
    assert handed == calls
    assert [b.pod for b in session.result.binds] == [p for c in calls for p in c]
