"""A config is counted (``volsched_config_reloads_total``) before it is in force: a session that runs
under a newly loaded config, and whatever that session did (a pod bound), is never seen before the
load that made it possible is counted. The same for a rejection and the error it puts in force."""

from __future__ import annotations

from typing import Any

from tests.unit._config_reloader import scripted_reloader
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched.kube.configsource import ConfigMapText
from volsched.operator.reload import ConfigReloader

ENQUEUE_ONLY = DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue")
INVALID = "actions: enqueue, teleport\ntiers: []\n"


def _watched(reloader: ConfigReloader, field: str, seen: list[tuple[Any, float]]) -> None:
    """From now on, every assignment to ``reloader.<field>`` records the value and what the reload
    counter held for its result at that moment."""
    counter = reloader.reloads
    state = {field: reloader.__dict__.pop(field)}

    def get(self: ConfigReloader) -> Any:
        return state[field]

    def put(self: ConfigReloader, value: Any) -> None:
        state[field] = value
        counted = sum(s.value for m in counter.collect() for s in m.samples if s.name.endswith("_total"))
        seen.append((value, counted))

    reloader.__class__ = type("Watched", (ConfigReloader,), {field: property(get, put)})


def test_a_loaded_config_is_counted_before_a_session_can_run_under_it() -> None:
    reloader = scripted_reloader([ConfigMapText(resource_version="3", uid="u", text=ENQUEUE_ONLY)])
    seen: list[tuple[Any, float]] = []
    _watched(reloader, "config", seen)
    assert reloader.reload(force=True) is True
    assert list(reloader.config.actions) == ["enqueue"]
    in_force = [count for config, count in seen if list(config.actions) == ["enqueue"]]
    assert in_force == [1.0]


def test_a_rejected_config_is_counted_before_its_error_is_shown() -> None:
    reloader = scripted_reloader([ConfigMapText(resource_version="3", uid="u", text=INVALID)])
    seen: list[tuple[Any, float]] = []
    _watched(reloader, "error", seen)
    reloader.reload(force=True)
    assert reloader.error is not None
    shown = [count for error, count in seen if error is not None]
    assert shown == [1.0]
