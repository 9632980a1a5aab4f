"""``volsched check-config FILE``: whether the operator would load a scheduler config, before it runs.

A file (``-``: standard input) holds, in any of its YAML documents, a scheduler config (``actions``,
``tiers``, ``metrics``...), a ConfigMap with the key ``volsched-scheduler.conf`` (what ``helm template``
renders), or the chart's values (``schedulerConfig`` and ``metrics.source``, joined as the chart joins
them). Each is checked as the operator checks a ConfigMap's config (``load_config``, then its
``metrics:`` section); other documents are passed over. Every problem is one line
``FILE:LINE: field: why`` (the line of the field where it can be told); :func:`check` returns them,
the command exits 2 when there are any.

Checking only: what a config means is :mod:`volsched.framework.registry` and :mod:`volsched.metrics.config`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from volsched.framework.registry import load_config, placement_gap
from volsched.metrics.config import MetricsConfigError, parse_metrics_config
from volsched.model.errors import InputError
from volsched.model.yamlload import line_of, load_all_nodes

#: The ConfigMap key the operator reads (``--config-key``'s default, the chart's key).
CONFIG_KEY = "volsched-scheduler.conf"

_PLUGIN_ARGUMENT = re.compile(r"plugin (\S+): (?:argument (\S+?):|unknown argument\(s\) (\S+?)[;,\s])")
_TIER_PLUGIN = re.compile(r"tiers\[(\d+)\](?:\.plugins\[(\d+)\])?")
_UNKNOWN_FIELD = re.compile(r"unknown field\(s\) (\S+?)[;,\s]")


class _Config:
    """One config found in the file: its text or object, and how its fields map to the file's lines."""

    def __init__(
        self,
        *,
        where: str,
        raw: Any,
        node: Node | None,
        text: str | None = None,
        prefix: Sequence[str | int] = (),
        metrics_prefix: Sequence[str | int] | None = None,
        offset: int | None = 0,
    ) -> None:
        self.where = where
        self.raw = raw
        self.node = node
        self.text = text  # a ConfigMap's text, loaded as the operator loads it
        self.prefix = list(prefix)
        self.metrics_prefix = None if metrics_prefix is None else list(metrics_prefix)
        #: Lines in the file before the config's own (a ConfigMap's block scalar); None: not known.
        self.offset = offset

    def line(self, path: Sequence[str | int]) -> int | None:
        if self.node is None or self.offset is None:
            return None
        if path and path[0] == "metrics" and self.metrics_prefix is not None:
            full = [*self.metrics_prefix, *path[1:]]
        else:
            full = [*self.prefix, *path]
        line = line_of(self.node, full)
        return None if line is None else line + self.offset


def _argument_path(node: Node | None, key: str) -> list[str]:
    """The path to a plugin argument ``key`` (dotted) under ``arguments``, flat or nested."""
    if not isinstance(node, MappingNode):
        return [key]
    if any(isinstance(k, ScalarNode) and k.value == key for k, _ in node.value):
        return [key]
    parts = key.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        for k, v in node.value:
            if isinstance(k, ScalarNode) and k.value == head:
                return [head, *_argument_path(v, ".".join(parts[cut:]))]
    return [key]


def _child(node: Node | None, path: Sequence[str | int]) -> Node | None:
    for part in path:
        if node is None:
            return None
        if isinstance(node, MappingNode):
            found = [v for k, v in node.value if isinstance(k, ScalarNode) and k.value == str(part)]
            if not found:
                return None
            node = found[0]
        elif isinstance(part, int) and isinstance(node.value, list) and 0 <= part < len(node.value):
            node = node.value[part]
        else:
            return None
    return node


def _path_of(message: str, config: _Config) -> list[str | int]:
    """Where in the config an error's message points (as precisely as it says)."""
    match = _PLUGIN_ARGUMENT.search(message)
    if match:
        name, key = match[1], match[2] or match[3]
        tiers = config.raw.get("tiers") if isinstance(config.raw, Mapping) else None
        for ti, tier in enumerate(tiers if isinstance(tiers, list) else []):
            plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
            for pi, entry in enumerate(plugins if isinstance(plugins, list) else []):
                if isinstance(entry, Mapping) and entry.get("name") == name:
                    at: list[str | int] = ["tiers", ti, "plugins", pi]
                    args = _child(config.node, [*config.prefix, *at, "arguments"]) if config.node else None
                    return [*at, "arguments", *_argument_path(args, key)]
    match = _TIER_PLUGIN.search(message)
    if match:
        path: list[str | int] = ["tiers", int(match[1])]
        return [*path, "plugins", int(match[2])] if match[2] else path
    match = _UNKNOWN_FIELD.search(message + " ")
    if match:
        return [match[1]]
    for field in ("actions", "tiers", "configurations", "metrics"):
        if field in message:
            return [field]
    return []


def _located(config: _Config, path: Sequence[str | int], message: str) -> str:
    line = config.line(path) if path else None
    return f"{config.where}:{line}: {message}" if line is not None else f"{config.where}: {message}"


def _check_one(config: _Config, warnings: list[str] | None = None) -> str | None:
    """The problem with one config, located, or None when the operator would load it (then what the
    operator would warn of on loading it goes to ``warnings``, if given)."""
    try:
        text = config.text if config.text is not None else yaml.safe_dump(config.raw, sort_keys=False)
        loaded = load_config(text=text)
        parse_metrics_config(loaded.metrics, env={})
    except MetricsConfigError as exc:
        return _located(config, exc.field.split("."), str(exc))
    except InputError as exc:
        return _located(config, _path_of(exc.message, config), exc.message)
    gap = placement_gap(loaded)
    if gap is not None and warnings is not None:
        warnings.append(_located(config, ["actions"], f"warning: {gap}"))
    return None


def _configs(where: str, docs: list[tuple[Any, Node]]) -> list[_Config]:
    """The configs the file's documents hold (see the module's docstring)."""
    out: list[_Config] = []
    for doc, node in docs:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "ConfigMap":
            data = doc.get("data")
            text = data.get(CONFIG_KEY) if isinstance(data, Mapping) else None
            if isinstance(text, str):
                value = _child(node, ["data", CONFIG_KEY])
                block = isinstance(value, ScalarNode) and value.style in ("|", ">")
                try:  # the text's own fields, to find their lines (a block scalar's lines follow its key)
                    [(raw, inner)] = load_all_nodes(text, source=where)
                except (InputError, ValueError):  # load_config says what is wrong with it
                    raw, inner = None, None
                offset = value.start_mark.line + 1 if block and value is not None else None
                out.append(_Config(where=where, raw=raw, node=inner, text=text, offset=offset))
        elif "schedulerConfig" in doc or ("metrics" in doc and "actions" not in doc and "tiers" not in doc):
            config: dict[str, Any] = dict(doc.get("schedulerConfig") or {})
            metrics = doc.get("metrics")
            source = metrics.get("source") if isinstance(metrics, Mapping) else None
            if source:
                config["metrics"] = source
            out.append(
                _Config(
                    where=where,
                    raw=config,
                    node=node,
                    prefix=["schedulerConfig"],
                    metrics_prefix=["metrics", "source"] if source else ["schedulerConfig", "metrics"],
                )
            )
        elif "actions" in doc or "tiers" in doc:
            out.append(_Config(where=where, raw=doc, node=node))
    return out


def check(path: str, warnings: list[str] | None = None) -> list[str]:
    """Every problem with the configs in file ``path`` (``-``: standard input), one line each; what the
    operator would warn of on loading them (a config that places no pod) goes to ``warnings``."""
    where = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        return [f"{where}: cannot read it: {exc.strerror}"]
    try:
        docs = load_all_nodes(data, source=where)
    except InputError as exc:
        return [str(exc)]
    configs = _configs(where, docs)
    if not configs:
        return [
            f"{where}: no scheduler config in it (a config with actions and tiers, a ConfigMap with key "
            f"{CONFIG_KEY}, or the chart's values with schedulerConfig)"
        ]
    return [p for p in (_check_one(c, warnings) for c in configs) if p is not None]
