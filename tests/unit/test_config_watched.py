"""The scheduler ConfigMap watched: while its watch is answered no poll reads it, and each change the watch
tells of is judged at the next ``reload`` as a poll's answer is (loaded, or rejected with the config in
force kept; deleted: said, the config in force kept, as when a poll finds it gone). While the watch is not answered
(not started yet, refused, the apiserver away) the poll reads as before, and a poll's read begun before
the watch told of a change never undoes it."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from tests.unit._config_reloader import scripted_reloader
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched.kube.configsource import ConfigMapText
from volsched.operator.reload import ConfigReloader

POLL = 30.0
ENQUEUE = DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue")
BACKFILL = DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "backfill")


def _config_map(reloader: ConfigReloader, version: str, text: str) -> dict[str, Any]:
    """The ConfigMap as its watch hands it over."""
    s = reloader.settings
    meta = {"name": s.name, "namespace": s.namespace, "uid": "u", "resourceVersion": version}
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta, "data": {s.key: text}}


class Harness:
    """A reloader read once at start (``ENQUEUE``, version 1) whose watch answers while ``answering``;
    ``reads`` counts the ConfigMap's reads, ``rang`` the calls for a session."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answers: list[ConfigMapText | None]) -> None:
        self.answers = [ConfigMapText("1", "u", ENQUEUE), *answers]
        self.reloader = scripted_reloader(self.answers, poll_every=POLL)
        self.clock = [100.0]
        monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: self.clock[0])
        self.answering = True
        self.reloader.watching = lambda: self.answering
        self.rang = 0
        self.reloader.on_fetched = self._ring
        assert self.reloader.reload(force=True) and self.actions == ["enqueue"]

    def _ring(self) -> None:
        self.rang += 1

    @property
    def actions(self) -> list[str]:
        return list(self.reloader.config.actions)

    def poll(self) -> bool:
        """A due poll's turn (and its read behind, if one started, ended)."""
        self.clock[0] += POLL
        result = self.reloader.reload()
        for t in threading.enumerate():
            if t.name == "volsched-config-read":
                t.join(10)
        return result


def test_while_the_watch_answers_no_poll_reads_and_a_change_it_tells_is_loaded_at_the_next_reload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch, [])
    for _ in range(3):
        assert h.poll() is False
    assert h.answers == [] and h.rang == 0  # not read again: (a read would have failed the script)
    h.reloader.watched("MODIFIED", _config_map(h.reloader, "2", BACKFILL))
    assert h.rang == 1  # a session is called for
    assert h.reloader.reload() is True and h.actions == ["backfill"]
    assert "resourceVersion 2" in h.reloader.config.source
    h.reloader.watched("MODIFIED", _config_map(h.reloader, "2", BACKFILL))  # the same version again
    assert h.rang == 1 and h.reloader.reload() is False


def test_a_bad_config_the_watch_tells_of_is_rejected_and_the_config_in_force_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch, [])
    h.reloader.watched("MODIFIED", _config_map(h.reloader, "2", "actions: [nonsense]\n"))
    assert h.reloader.reload() is False
    assert h.actions == ["enqueue"] and h.reloader.error is not None
    assert "resourceVersion 1" in h.reloader.config.source


def test_the_configmap_deleted_is_told_and_the_config_in_force_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, [])
    h.reloader.watched("DELETED", _config_map(h.reloader, "3", ENQUEUE))
    assert h.rang == 1
    h.reloader.reload()
    assert h.reloader.version is None and h.actions == ["enqueue"]  # as a poll finding it gone (404)


def test_while_the_watch_is_not_answered_the_poll_reads_as_before_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(monkeypatch, [ConfigMapText("2", "u", BACKFILL), ConfigMapText("2", "u", BACKFILL)])
    h.answering = False
    with caplog.at_level(logging.INFO, logger="volsched.operator"):
        assert h.poll() is False  # read behind
        assert h.answers == [ConfigMapText("2", "u", BACKFILL)] and h.rang == 1
        assert h.reloader.reload() is True and h.actions == ["backfill"]
        assert h.poll() is False and h.answers == []  # read again: said once only
    said = [r.getMessage() for r in caplog.records if "watch is not answered" in r.getMessage()]
    assert len(said) == 1 and "read every 30.0s until it is" in said[0]


def test_a_poll_read_begun_before_the_watch_told_of_a_change_does_not_undo_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch, [])
    h.answering = False  # the watch away: a poll reads
    began, answer = threading.Event(), threading.Event()

    def slow_read(at_start: bool) -> ConfigMapText | None:
        began.set()
        assert answer.wait(10)
        return ConfigMapText("2", "u", BACKFILL)  # read before version 3 was written

    h.reloader.read = slow_read
    h.clock[0] += POLL
    assert h.reloader.reload() is False
    assert began.wait(10)
    h.answering = True  # the watch answers again, and tells of version 3
    h.reloader.watched(
        "MODIFIED", _config_map(h.reloader, "3", ENQUEUE.replace("enqueue", "enqueue, allocate"))
    )
    answer.set()
    for t in threading.enumerate():
        if t.name == "volsched-config-read":
            t.join(10)
    assert h.reloader.reload() is True and "resourceVersion 3" in h.reloader.config.source
    assert h.reloader.reload() is False and "resourceVersion 3" in h.reloader.config.source
