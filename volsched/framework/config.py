"""Scheduler configuration: the same YAML shape as Volcano's scheduler config.

```yaml
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enableJobOrder: false        # per-extension-point switches
  - name: usage
    arguments: {usage.weight: 5}
metrics: {...}                  # kept raw here; volsched.metrics parses it
```

Parsing validates names against the action and plugin names it is given and reports everything a person
needs to fix it. Reading a file and checking plugin arguments against the registries is
``volsched.framework.registry.load_config``; this module does no I/O and imports no other framework
module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from volsched.model.errors import InputError
from volsched.model.yamlload import load_one
from volsched.records import dataclass

#: Extension points a plugin entry can switch off, with the config keys that name them. The first key
#: is ours; the others are accepted for configs written for Volcano.
EXTENSION_SWITCHES: dict[str, tuple[str, ...]] = {
    "job_order": ("enableJobOrder",),
    "namespace_order": ("enableNamespaceOrder",),
    "queue_order": ("enableQueueOrder",),
    "task_order": ("enableTaskOrder",),
    "job_valid": ("enableJobValid",),
    "job_ready": ("enableJobReady",),
    "job_pipelined": ("enableJobPipelined",),
    "job_enqueueable": ("enableJobEnqueued", "enableJobEnqueueable"),
    "job_starving": ("enableJobStarving",),
    "allocatable": ("enableAllocatable", "enabledAllocatable"),
    "overused": ("enableOverused", "enabledOverused"),
    "preemptive": ("enablePreemptive",),
    "predicate": ("enablePredicate",),
    "node_order": ("enableNodeOrder", "enableBestNode"),
    "reclaimable": ("enableReclaimable",),
    "preemptable": ("enablePreemptable",),
    "victim": ("enableVictim", "enableVictimTasks"),
    "victim_filter": ("enableVictimFilter",),
}
_SWITCH_KEYS = {key: point for point, keys in EXTENSION_SWITCHES.items() for key in keys}

DEFAULT_CONFIG_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: pdb
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: reservation
  - name: nodeorder
  - name: binpack
"""


def default_config_with(*, actions: str | None = None, lines: Mapping[str, str] | None = None) -> str:
    """:data:`DEFAULT_CONFIG_YAML` with ``actions`` in place of its actions and each of its lines named in
    ``lines`` (the whole line, as the default writes it) replaced by the text given ("" drops it): the
    default's variants that benches and tests run, so that they follow it. A line the default does not
    have is refused (``ValueError``): a variant never silently becomes the default itself."""
    edits = dict(lines or {})
    have = DEFAULT_CONFIG_YAML.splitlines()
    if actions is not None:
        edits[next(line for line in have if line.startswith("actions:"))] = f'actions: "{actions}"'
    missing = [line for line in edits if line not in have]
    if missing:
        raise ValueError(f"the default config has no line {missing[0]!r}")
    out = [edits.get(line, line) for line in have]
    return "".join(f"{line}\n" for line in out if line)


@dataclass(frozen=True)
class PluginOption:
    """One plugin of a tier: its name, its arguments and the extension points turned off for it."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()

    def enabled(self, point: str) -> bool:
        return point not in self.disabled


@dataclass(frozen=True)
class Tier:
    """One tier of plugins, in the config's order."""

    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True)
class SchedulerConfig:
    """A scheduler config: the actions in order, the tiers of plugins, the metrics section."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    metrics: Mapping[str, Any] | None = None
    source: str = "<default>"
    #: Action arguments from ``configurations: [{name: shuffle, arguments: {...}}]`` (Volcano's shape).
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def plugin_options(self) -> list[PluginOption]:
        return [p for t in self.tiers for p in t.plugins]

    def action_arguments(self, name: str) -> Mapping[str, Any]:
        return self.configurations.get(name, {})


def _known(names: Any) -> str:
    return ", ".join(sorted(names))


def parse_config(
    raw: Any,
    *,
    source: str,
    known_actions: Mapping[str, Any],
    known_plugins: Mapping[str, Any],
) -> SchedulerConfig:
    """Validate a parsed config document. Errors name the field and list what is known."""
    if isinstance(raw, str | bytes):
        raw = load_one(raw, source=source)
    if not isinstance(raw, Mapping):
        raise InputError("the scheduler config must be a map with actions and tiers", source=source)
    unknown_top = set(raw) - {"actions", "tiers", "metrics", "configurations"}
    if unknown_top:
        raise InputError(
            f"unknown field(s) {_known(unknown_top)}; known: actions, configurations, metrics, tiers",
            source=source,
        )
    _reject_non_finite(raw, source=source)
    actions_raw = raw.get("actions")
    if actions_raw is None:
        raise InputError("missing field actions", source=source)
    if isinstance(actions_raw, str):
        actions = [a.strip() for a in actions_raw.split(",") if a.strip()]
    elif isinstance(actions_raw, list) and all(isinstance(a, str) for a in actions_raw):
        actions = [a.strip() for a in actions_raw]
    else:
        raise InputError("actions must be a comma-separated string", source=source)
    if not actions:
        raise InputError("actions is empty", source=source)
    for a in actions:
        if a not in known_actions:
            raise InputError(f"unknown action {a!r}; known actions: {_known(known_actions)}", source=source)
    if len(set(actions)) != len(actions):
        raise InputError(f"actions lists an action twice: {', '.join(actions)}", source=source)

    tiers_raw = raw.get("tiers")
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise InputError("tiers must be a non-empty list of {plugins: [...]}", source=source)
    tiers: list[Tier] = []
    seen: set[str] = set()
    for ti, tier in enumerate(tiers_raw):
        if not isinstance(tier, Mapping) or not isinstance(tier.get("plugins"), list):
            raise InputError(f"tiers[{ti}] must be a map with a list field plugins", source=source)
        options = []
        for pi, entry in enumerate(tier["plugins"]):
            where = f"tiers[{ti}].plugins[{pi}]"
            name = _entry_name(entry, where=where, kind="plugin", known=known_plugins, source=source)
            if name in seen:
                raise InputError(f"{where}: plugin {name!r} is listed twice", source=source)
            seen.add(name)
            disabled: set[str] = set()
            for key, value in entry.items():
                if key in ("name", "arguments"):
                    continue
                if key not in _SWITCH_KEYS:
                    raise InputError(
                        f"{where} ({name}): unknown field {key!r}; known: name, arguments, {_known(_SWITCH_KEYS)}",
                        source=source,
                    )
                if not isinstance(value, bool):
                    raise InputError(
                        f"{where} ({name}): {key} must be true or false, got {value!r}", source=source
                    )
                if not value:
                    disabled.add(_SWITCH_KEYS[key])
            args = _entry_arguments(entry, where=f"{where} ({name})", source=source)
            options.append(PluginOption(name=name, arguments=args, disabled=frozenset(disabled)))
        tiers.append(Tier(plugins=tuple(options)))
    metrics = raw.get("metrics")
    if metrics is not None and not isinstance(metrics, Mapping):
        raise InputError("metrics must be a map", source=source)
    configurations = _parse_configurations(
        raw.get("configurations"), source=source, known_actions=known_actions
    )
    return SchedulerConfig(
        actions=tuple(actions),
        tiers=tuple(tiers),
        metrics=metrics,
        source=source,
        configurations=configurations,
    )


def _entry_name(entry: Any, *, where: str, kind: str, known: Mapping[str, Any], source: str) -> str:
    """The name of a ``{name: ..., arguments: {...}}`` entry (a plugin's or an action's), which must be
    one of ``known``; ``kind`` says which in the error."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise InputError(f"{where} must be a map with a name", source=source)
    name: str = entry["name"]
    if name not in known:
        raise InputError(f"{where}: unknown {kind} {name!r}; known {kind}s: {_known(known)}", source=source)
    return name


def _entry_arguments(entry: Mapping[str, Any], *, where: str, source: str) -> dict[str, Any]:
    """An entry's ``arguments`` (a map; missing or null is none)."""
    args = entry.get("arguments") or {}
    if not isinstance(args, Mapping):
        raise InputError(f"{where}: arguments must be a map", source=source)
    return dict(args)


def _reject_non_finite(raw: Mapping[str, Any], *, source: str) -> None:
    """Every number in the config must be finite: ``.nan`` compares false with every bound, so a range
    check alone lets it through (``overcommit-factor: .nan`` silently disabled the limit)."""
    todo: list[tuple[str, Any]] = [("", raw)]
    while todo:  # iterative: the loader bounds the depth, but this stays safe for any parsed map
        path, value = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{path}: numbers must be finite, got {value}", source=source)
        if isinstance(value, Mapping):
            todo.extend((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((f"{path}[{i}]", v) for i, v in enumerate(value))


def _parse_configurations(
    raw: Any, *, source: str, known_actions: Mapping[str, Any]
) -> dict[str, Mapping[str, Any]]:
    """``configurations: [{name: <action>, arguments: {...}}]``: arguments for actions."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise InputError("configurations must be a list of {name, arguments}", source=source)
    out: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(raw):
        where = f"configurations[{i}]"
        name = _entry_name(entry, where=where, kind="action", known=known_actions, source=source)
        if name in out:
            raise InputError(f"{where}: action {name!r} is configured twice", source=source)
        extra = set(entry) - {"name", "arguments"}
        if extra:
            raise InputError(
                f"{where} ({name}): unknown field(s) {_known(extra)}; known: arguments, name", source=source
            )
        out[name] = _entry_arguments(entry, where=f"{where} ({name})", source=source)
    return out
