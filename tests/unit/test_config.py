"""Scheduler config: Volcano's shape, and errors that name what is wrong and what is known."""

from __future__ import annotations

import pytest

from volsched.framework.config import load_config
from volsched.model.errors import InputError


def test_default_config_runs_enqueue_allocate_backfill_over_two_tiers():
    c = load_config()
    assert c.actions == ("enqueue", "allocate", "backfill")
    assert [p.name for p in c.tiers[0].plugins] == ["priority", "gang", "conformance"]


def test_extension_switches_and_arguments_are_read():
    c = load_config(
        text="""
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
    enableJobOrder: false
  - name: overcommit
    arguments: {overcommit-factor: 1.5}
"""
    )
    gang, overcommit = c.tiers[0].plugins
    assert not gang.enabled("job_order") and gang.enabled("job_ready")
    assert overcommit.arguments == {"overcommit-factor": 1.5}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'actions: "enqueue, fly"\ntiers: [{plugins: [{name: gang}]}]',
            r"unknown action 'fly'; known actions: .*allocate",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: magic}]}]',
            r"unknown plugin 'magic'; known plugins: .*binpack",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, enableMagic: true}]}]',
            r"unknown field 'enableMagic'",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: "x"}}]}]',
            r"plugin overcommit: argument overcommit-factor: expected a number",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: nodeorder, arguments: {leastrequested.weigth: 2}}]}]',
            r"plugin nodeorder: unknown argument\(s\) leastrequested.weigth",
        ),
        ('actions: "allocate"\ntiers: []', r"tiers must be a non-empty list"),
        ("tiers: [{plugins: [{name: gang}]}]", r"missing field actions"),
        ("actions: [", r"not valid YAML"),
    ],
)
def test_bad_config_is_an_error_that_names_it(text, message):
    with pytest.raises(InputError, match=message):
        load_config(text=text)
