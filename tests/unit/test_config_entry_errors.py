"""The scheduler config's plugin and action entries: each malformed entry's error, word for word.

``check-config`` finds the line from the path at the start of the message (``tiers[0].plugins[1]``,
``configurations[0]``), and users read the rest: both are pinned here whole.
"""

from __future__ import annotations

from typing import Any

import pytest

from volsched.framework.config import parse_config
from volsched.model.errors import InputError

ACTIONS = {"allocate": None, "shuffle": None}
PLUGINS = {"gang": None, "drf": None}


def _with_plugins(*entries: Any) -> dict[str, Any]:
    return {"actions": "allocate, shuffle", "tiers": [{"plugins": list(entries)}]}


def _with_configurations(*entries: Any) -> dict[str, Any]:
    return {**_with_plugins({"name": "gang"}), "configurations": list(entries)}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (_with_plugins("gang"), "tiers[0].plugins[0] must be a map with a name"),
        (_with_plugins({"arguments": {}}), "tiers[0].plugins[0] must be a map with a name"),
        (_with_plugins({"name": 3}), "tiers[0].plugins[0] must be a map with a name"),
        (
            _with_plugins({"name": "gang"}, {"name": "magic"}),
            "tiers[0].plugins[1]: unknown plugin 'magic'; known plugins: drf, gang",
        ),
        (
            _with_plugins({"name": "gang"}, {"name": "gang"}),
            "tiers[0].plugins[1]: plugin 'gang' is listed twice",
        ),
        (
            _with_plugins({"name": "gang", "arguments": [1]}),
            "tiers[0].plugins[0] (gang): arguments must be a map",
        ),
        (
            _with_plugins({"name": "gang", "enableJobOrder": "no"}),
            "tiers[0].plugins[0] (gang): enableJobOrder must be true or false, got 'no'",
        ),
        (_with_configurations("shuffle"), "configurations[0] must be a map with a name"),
        (_with_configurations({"arguments": {}}), "configurations[0] must be a map with a name"),
        (
            _with_configurations({"name": "dance"}),
            "configurations[0]: unknown action 'dance'; known actions: allocate, shuffle",
        ),
        (
            _with_configurations({"name": "shuffle"}, {"name": "shuffle"}),
            "configurations[1]: action 'shuffle' is configured twice",
        ),
        (
            _with_configurations({"name": "shuffle", "arguments": "x"}),
            "configurations[0] (shuffle): arguments must be a map",
        ),
        (
            _with_configurations({"name": "shuffle", "params": {}}),
            "configurations[0] (shuffle): unknown field(s) params; known: arguments, name",
        ),
    ],
    ids=[
        "plugin-not-a-map",
        "plugin-no-name",
        "plugin-name-not-a-string",
        "plugin-unknown",
        "plugin-twice",
        "plugin-arguments-not-a-map",
        "plugin-switch-not-a-bool",
        "action-not-a-map",
        "action-no-name",
        "action-unknown",
        "action-twice",
        "action-arguments-not-a-map",
        "action-unknown-field",
    ],
)
def test_a_malformed_plugin_or_action_entry_is_refused_with_its_exact_message(
    raw: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        parse_config(raw, source="sched.yaml", known_actions=ACTIONS, known_plugins=PLUGINS)
    assert caught.value.source == "sched.yaml"
    assert caught.value.message == message
