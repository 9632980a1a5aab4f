"""The resource weights a scoring plugin reads under its prefix: ``<p>.cpu``, ``<p>.memory`` (default 1),
``<p>.resources`` (comma-separated extended resources) and ``<p>.resources.<name>`` (default 1).

One reading for binpack and nodeorder, so both accept and refuse the same configs. Refused, naming the
plugin and the argument: a resource name Kubernetes would not take, a name listed twice, ``pods``, a
``<p>.resources.<name>`` for a resource not listed. ``cpu`` and ``memory`` listed in ``<p>.resources``
are refused unless ``cpu_memory_listed`` (binpack: Volcano accepts them there and reads their weights
from ``<p>.cpu`` and ``<p>.memory`` all the same; a ``<p>.resources.cpu`` weight, which Volcano reads
and then drops, is refused rather than ignored). Not here: what the weights score.
"""

from __future__ import annotations

from volsched.framework.plugin import Arguments
from volsched.model.errors import InputError
from volsched.model.resources import BASE_RESOURCES, CPU, MEMORY
from volsched.model.validation import label_key_problem


def resource_weights(
    arguments: Arguments, prefix: str, *, cpu_memory_listed: bool = False
) -> dict[str, float]:
    """The weight per resource, cpu and memory first then the listed resources in their order."""
    where = f"plugin {arguments.plugin}: argument {prefix}.resources"
    weights = {
        CPU: arguments.number(f"{prefix}.cpu", 1, minimum=0),
        MEMORY: arguments.number(f"{prefix}.memory", 1, minimum=0),
    }
    extra = arguments.raw(f"{prefix}.resources", "")
    if not isinstance(extra, str):
        raise InputError(f"{where}: expected a comma-separated string, got {extra!r}")
    listed: set[str] = set()
    for name in (n.strip() for n in extra.split(",")):
        if not name:
            continue
        if name in listed:
            raise InputError(f"{where}: {name} is named twice")
        listed.add(name)
        if name in BASE_RESOURCES:
            if cpu_memory_listed and name in (CPU, MEMORY):
                continue  # its weight is <p>.cpu / <p>.memory, as Volcano reads it
            raise InputError(
                f"{where}: {name} is not an extended resource"
                + ("" if name not in (CPU, MEMORY) else f" (its weight is {prefix}.{name})")
            )
        problem = label_key_problem(name)
        if problem is not None:
            raise InputError(f"{where}: {name!r} is no resource name: {problem}")
        weights[name] = arguments.number(f"{prefix}.resources.{name}", 1, minimum=0)
    for key, _ in list(arguments.with_prefix(f"{prefix}.resources.")):
        if key in (CPU, MEMORY) and key in listed:
            raise InputError(
                f"{where}.{key}: the {key} weight is {prefix}.{key} (a weight here would not be read)"
            )
        if key not in listed:  # (cpu and memory are in weights, listed or not)
            raise InputError(f"{where}.{key} names a resource missing from {prefix}.resources")
    return weights
