"""binpack's and nodeorder's resource weights are read by one parser: the same configs accepted with the
same weights, the same ones refused with a reason naming the plugin and the argument (the reason a
rejected ConfigMap's event carries, the config in force kept). binpack reads a listed ``cpu``/``memory``
as Volcano does: their weights stay ``binpack.cpu``/``binpack.memory``."""

from __future__ import annotations

import pytest

from volsched.framework.registry import load_config, make_plugin
from volsched.model.errors import InputError

GPU = "nvidia.com/gpu"


def weights(plugin: str, arguments: dict[str, object]) -> dict[str, float]:
    made = make_plugin(plugin, arguments)
    result: dict[str, float] = getattr(made, "resource_weights")  # noqa: B009
    return result


def config(plugin: str, arguments: dict[str, object]) -> str:
    lines = "".join(f"      {k!r}: {v!r}\n" for k, v in arguments.items())
    return f"actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: {plugin}\n    arguments:\n{lines}"


@pytest.mark.parametrize("plugin", ["binpack", "nodeorder"])
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, {"cpu": 1, "memory": 1}),
        ({"{p}.cpu": 5, "{p}.memory": 0}, {"cpu": 5, "memory": 0}),
        ({"{p}.resources": f" {GPU} , example.com/foo,"}, {"cpu": 1, "memory": 1, GPU: 1, "example.com/foo": 1}),
        ({"{p}.resources": GPU, f"{{p}}.resources.{GPU}": "2.5"}, {"cpu": 1, "memory": 1, GPU: 2.5}),
        ({"{p}": {"resources": GPU, "cpu": 3}, f"{{p}}.resources.{GPU}": 4}, {"cpu": 3, "memory": 1, GPU: 4}),
    ],
)  # fmt: skip
def test_both_plugins_accept_the_same_weights(
    plugin: str, arguments: dict[str, object], expected: dict[str, float]
) -> None:
    given = {k.format(p=plugin): v for k, v in arguments.items()}
    assert weights(plugin, given) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # Volcano: a listed cpu or memory keeps the weight binpack.cpu / binpack.memory gives it.
        ({"binpack.cpu": 5, "binpack.resources": f"cpu, {GPU}"}, {"cpu": 5, "memory": 1, GPU: 1}),
        ({"binpack.memory": 0, "binpack.resources": "memory"}, {"cpu": 1, "memory": 0}),
        ({"binpack.resources": "cpu,memory"}, {"cpu": 1, "memory": 1}),
    ],
)  # fmt: skip
def test_binpack_reads_a_listed_cpu_or_memory_as_volcano_does(
    arguments: dict[str, object], expected: dict[str, float]
) -> None:
    assert weights("binpack", arguments) == expected


@pytest.mark.parametrize("plugin", ["binpack", "nodeorder"])
@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"{p}.resources": "a b"}, "argument {p}.resources: 'a b' is no resource name"),
        ({"{p}.resources": "nvidia.com/"}, "argument {p}.resources: 'nvidia.com/' is no resource name"),
        ({"{p}.resources": f"{GPU}, {GPU}"}, f"argument {{p}}.resources: {GPU} is named twice"),
        ({"{p}.resources": "pods"}, "argument {p}.resources: pods is not an extended resource"),
        ({"{p}.resources": ["x"]}, "argument {p}.resources: expected a comma-separated string"),
        ({f"{{p}}.resources.{GPU}": 2}, f"argument {{p}}.resources.{GPU} names a resource missing from {{p}}.resources"),
        ({"{p}.resources": GPU, f"{{p}}.resources.{GPU}": -2}, f"argument {{p}}.resources.{GPU}: must be >= 0"),
        ({"{p}.resources.cpu": 3}, "argument {p}.resources.cpu names a resource missing from {p}.resources"),
        ({"{p}.resources.memory": 3}, "argument {p}.resources.memory names a resource missing from {p}.resources"),
        ({"{p}.cpu": -1}, "argument {p}.cpu: must be >= 0"),
        ({"{p}.memory": "lots"}, "argument {p}.memory: expected a number"),
    ],
)  # fmt: skip
def test_both_plugins_refuse_the_same_configs_naming_plugin_and_argument(
    plugin: str, arguments: dict[str, object], error: str
) -> None:
    given = {k.format(p=plugin): v for k, v in arguments.items()}
    with pytest.raises(InputError) as exc:
        load_config(text=config(plugin, given))
    assert f"plugin {plugin}: {error.format(p=plugin)}" in str(exc.value)


@pytest.mark.parametrize(
    ("plugin", "arguments", "error"),
    [
        # Volcano reads binpack.resources.cpu and then drops it for binpack.cpu: refused, not ignored.
        ("binpack", {"binpack.resources": "cpu", "binpack.resources.cpu": 3}, "argument binpack.resources.cpu: the cpu weight is binpack.cpu"),
        ("binpack", {"binpack.resources": "memory", "binpack.resources.memory": 3}, "argument binpack.resources.memory: the memory weight is binpack.memory"),
        ("binpack", {"binpack.resources": "cpu, cpu"}, "argument binpack.resources: cpu is named twice"),
        # nodeorder's resources list is volsched's own: cpu and memory have their own keys there.
        ("nodeorder", {"nodeorder.resources": "cpu"}, "argument nodeorder.resources: cpu is not an extended resource (its weight is nodeorder.cpu)"),
        ("nodeorder", {"nodeorder.resources": "memory"}, "argument nodeorder.resources: memory is not an extended resource (its weight is nodeorder.memory)"),
    ],
)  # fmt: skip
def test_a_listed_cpu_or_memory_is_refused_where_it_would_not_be_read(
    plugin: str, arguments: dict[str, object], error: str
) -> None:
    with pytest.raises(InputError) as exc:
        load_config(text=config(plugin, arguments))
    assert f"plugin {plugin}: {error}" in str(exc.value)
