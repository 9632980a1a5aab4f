"""Scheduler config: Volcano's shape, and errors that name what is wrong and what is known."""

from __future__ import annotations

import pytest

from volsched.framework.config import DEFAULT_CONFIG_YAML, default_config_with
from volsched.framework.registry import load_config
from volsched.model.errors import InputError


def test_default_config_runs_enqueue_allocate_backfill_over_two_tiers():
    c = load_config()
    assert c.actions == ("enqueue", "allocate", "backfill")
    assert [p.name for p in c.tiers[0].plugins] == ["priority", "gang", "conformance", "pdb"]


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


def _plugin(name: str, arguments: str) -> str:
    return f'actions: "enqueue, allocate, shuffle"\ntiers: [{{plugins: [{{name: {name}, arguments: {arguments}}}]}}]\n'


NESTED = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _plugin("overcommit", "{overcommit-factor: .nan}"),
            r"overcommit-factor: numbers must be finite, got nan",
        ),
        (
            _plugin("overcommit", "{overcommit-factor: .inf}"),
            r"overcommit-factor: numbers must be finite, got inf",
        ),
        (_plugin("overcommit", "{overcommit-factor: 'nan'}"), r"overcommit-factor: expected a finite number"),
        (
            _plugin("overcommit", "{overcommit-factor: '-inf'}"),
            r"overcommit-factor: expected a finite number",
        ),
        (_plugin("overcommit", "{overcommit-factor: 1e300}"), r"overcommit-factor: expected a finite number"),
        (
            _plugin("binpack", "{binpack.weight: " + "9" * 400 + "}"),
            r"binpack.weight: expected a finite number",
        ),
        (
            _plugin("nodeorder", "{leastrequested.weight: -.inf}"),
            r"leastrequested.weight: numbers must be finite",
        ),
        (_plugin("usage", "{thresholds: {cpu: .nan}}"), r"thresholds.cpu: numbers must be finite"),
        (
            _plugin(
                "rescheduling", "{strategies: [{name: podLifeTime, params: {maxPodLifeTimeSeconds: .inf}}]}"
            ),
            r"numbers must be finite, got inf",
        ),
        (
            'actions: "enqueue, allocate, shuffle"\ntiers: [{plugins: [{name: gang}]}]\n'
            "configurations: [{name: shuffle, arguments: {maxEvictionsPerSession: 1e30}}]\n",
            r"maxEvictionsPerSession: expected a finite number",
        ),
        (_plugin("binpack", "{x: " + NESTED + "}"), r"line 2, column \d+: nested deeper than 100 levels"),
        ("metrics: " + "{a: " * 500 + "1" + "}" * 500 + "\n", r"nested deeper than 100 levels"),
        (_plugin("gang", "{}") + "x: &a [*a]\n", r"alias \*a refers to a node that contains it"),
    ],
    ids=[
        "factor-nan",
        "factor-inf",
        "factor-nan-string",
        "factor-minus-inf-string",
        "factor-huge",
        "weight-400-digits",
        "weight-minus-inf",
        "threshold-nan",
        "deschedule-param-inf",
        "action-argument-huge",
        "nested-arguments",
        "nested-metrics",
        "recursive-alias",
    ],
)
def test_a_config_with_a_non_finite_or_unbounded_value_is_rejected_naming_it(text, message):
    with pytest.raises(InputError, match=message):
        load_config(text=text)


def test_a_config_file_that_is_not_utf8_is_rejected_naming_the_file(tmp_path):
    path = tmp_path / "sched.yaml"
    path.write_bytes(b"actions: allocate\n# caf\xe9\ntiers: [{plugins: [{name: gang}]}]\n")
    with pytest.raises(InputError, match=r"sched.yaml: document 1: not UTF-8: byte 0xe9 at line 2"):
        load_config(path)


def test_an_unexpected_error_building_a_plugin_is_a_rejection_not_a_crash(monkeypatch):
    from volsched.framework import registry

    def boom(arguments):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setitem(registry.PLUGINS, "gang", boom)
    with pytest.raises(InputError, match=r"<inline>: cannot load it \(OverflowError: cannot convert"):
        load_config(text=_plugin("gang", "{}"))


def test_a_variant_of_the_default_config_follows_it_and_names_only_lines_it_has() -> None:
    assert default_config_with() == DEFAULT_CONFIG_YAML
    text = default_config_with(
        actions="enqueue, allocate, preempt, backfill",
        lines={"  - name: gang": "  - name: gang\n    enablePreemptable: false", "  - name: overcommit": ""},
    )
    c, default = load_config(text=text), load_config()
    assert c.actions == ("enqueue", "allocate", "preempt", "backfill")
    assert [p.name for p in c.tiers[1].plugins] == [p.name for p in default.tiers[1].plugins][1:]
    (gang,) = (p for p in c.tiers[0].plugins if p.name == "gang")
    assert not gang.enabled("preemptable")
    with pytest.raises(ValueError, match="no line '  - name: usage'"):
        default_config_with(lines={"  - name: usage": ""})


@pytest.mark.parametrize("action", ["allocate", "preempt", "enqueue"])
def test_arguments_given_to_an_action_that_reads_none_are_refused_naming_them(action):
    # The defect: Volcano's own action arguments (allocate's predicateErrorCacheEnable, preempt's
    # enableTopologyAwarePreemption...) loaded and were read by nothing.
    text = (
        'actions: "enqueue, allocate, preempt"\ntiers: [{plugins: [{name: gang}]}]\n'
        f"configurations: [{{name: {action}, arguments: {{enableTopologyAwarePreemption: true}}}}]\n"
    )
    with pytest.raises(
        InputError,
        match=rf"configurations: action {action} reads no arguments; got enableTopologyAwarePreemption",
    ):
        load_config(text=text)
