"""A valid scheduler config with no action that places pods (no allocate) is never silent: a warning
on load (the operator's log, ``volsched simulate``'s standard error), a ``warning:`` line on /readyz
(ready all the same: a descheduler-only config means it), and the reason of every pod it leaves pending."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from tests.builders import config, node, pod, podgroup, simulate_objects
from tests.unit._config_reloader import scripted_reloader
from volsched.cli import main
from volsched.framework.registry import placement_gap
from volsched.kube.configsource import ConfigMapText
from volsched.operator.http import HttpServer
from volsched.operator.settings import HttpSettings
from volsched.ui import LiveState

TIERS = "tiers:\n- plugins: [{name: priority}, {name: gang}]\n- plugins: [{name: predicates}, {name: proportion}]\n"
ALLOCATE = (
    "the scheduler config's actions ({}) place no pod that requests resources: allocate is not among them"
)


@pytest.mark.parametrize(
    ("actions", "gap"),
    [
        ("enqueue, allocate, backfill", None),
        ("allocate", None),
        ("enqueue", ALLOCATE.format("enqueue")),
        ("enqueue, shuffle", ALLOCATE.format("enqueue, shuffle")),
        (
            "enqueue, backfill, preempt",
            ALLOCATE.format("enqueue, backfill, preempt")
            + " (backfill places only pods that request nothing)",
        ),
    ],
)
def test_a_config_without_allocate_is_told_apart(actions: str, gap: str | None) -> None:
    assert placement_gap(config(f'actions: "{actions}"\n{TIERS}')) == gap


def _pending_reasons(actions: str) -> dict[str, str]:
    objects = [node("n1", cpu="3"), podgroup("g", min_member=2), pod("g-0", group="g"), pod("g-1", group="g")]
    objects += [pod("big", cpu="64"), pod("small")]
    result = simulate_objects(objects, conf=config(f'actions: "{actions}"\n{TIERS}'), sessions=3)
    last = result.history[-1]
    return {e.name: e.message for e in last.events if e.kind == "Pod" and e.reason == "FailedScheduling"}


def test_every_pod_left_pending_names_the_missing_allocate() -> None:
    reasons = _pending_reasons("enqueue")
    assert set(reasons) == {"g-0", "g-1", "big", "small"}  # before: no reason at all for any of them
    assert all(r.startswith(ALLOCATE.format("enqueue")) for r in reasons.values()), reasons


def test_with_allocate_no_pending_pod_names_it() -> None:
    reasons = _pending_reasons("enqueue, allocate")
    assert set(reasons) == {"big"}
    assert "allocate is not among them" not in reasons["big"]


def test_the_operator_warns_when_it_loads_such_a_config(caplog: pytest.LogCaptureFixture) -> None:
    text = f'actions: "enqueue, shuffle"\n{TIERS}'
    reloader = scripted_reloader([ConfigMapText(resource_version="8", uid="u", text=text)])
    with caplog.at_level(logging.WARNING, logger="volsched.operator"):
        assert reloader.reload(force=True) is True
    assert ALLOCATE.format("enqueue, shuffle") in caplog.text


def test_simulate_warns_on_standard_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(f'actions: "enqueue"\n{TIERS}')
    assert main(["simulate", "--config", str(conf), "--sessions", "1", "-o", "json"]) == 0
    assert f"warning: {conf}: {ALLOCATE.format('enqueue')}" in capsys.readouterr().err


@pytest.mark.parametrize(("problem", "status"), [(None, 200), ("cache not synced", 503)])
def test_readyz_carries_the_warning_ready_or_not(problem: str | None, status: int) -> None:
    async def ask() -> tuple[int, str]:
        server = HttpServer(
            HttpSettings(host="127.0.0.1", port=0),
            liveness=lambda: None,
            readiness=lambda: problem,
            notice=lambda: ALLOCATE.format("enqueue"),
            registry=CollectorRegistry(),
            ui=LiveState(),
        )
        await server.start()
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{server.port}/readyz") as resp,
            ):
                return resp.status, await resp.text()
        finally:
            await server.stop()

    got_status, body = asyncio.run(ask())
    assert got_status == status
    assert body == f"{problem or 'ok'}\nwarning: {ALLOCATE.format('enqueue')}\n"


def test_check_config_loads_it_and_warns(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(f'# a descheduler only\nactions: "enqueue, shuffle"\n{TIERS}')
    assert main(["check-config", str(conf)]) == 0  # valid: it loads
    out, err = capsys.readouterr()
    assert "the scheduler config loads" in out
    assert err == f"{conf}:2: warning: {ALLOCATE.format('enqueue, shuffle')}\n"
