"""Registries of actions and plugins by name, filled by the built-in modules on first use, and
:func:`load_config`, which checks a config's names and arguments against them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from volsched.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig, parse_config
from volsched.framework.plugin import Arguments
from volsched.model.errors import InputError

if TYPE_CHECKING:
    from volsched.framework.points import Plugin
    from volsched.framework.session import Action

ACTIONS: dict[str, Callable[[], Action]] = {}
PLUGINS: dict[str, Callable[[Arguments], Plugin]] = {}


_BUILTIN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle")
_BUILTIN_PLUGINS = (
    "priority",
    "gang",
    "conformance",
    "pdb",
    "overcommit",
    "drf",
    "predicates",
    "proportion",
    "nodeorder",
    "binpack",
    "usage",
    "rescheduling",
    "minruntime",
    "reservation",
)

T = TypeVar("T")


def register_action(cls: T) -> T:
    ACTIONS[cls.name] = cls  # type: ignore[attr-defined,assignment]
    return cls


def register_plugin(cls: T) -> T:
    PLUGINS[cls.name] = cls  # type: ignore[attr-defined,assignment]
    return cls


def load_builtins() -> None:
    for name in _BUILTIN_ACTIONS:
        try:
            importlib.import_module(f"volsched.actions.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"volsched.actions.{name}":
                raise
    for name in _BUILTIN_PLUGINS:
        try:
            importlib.import_module(f"volsched.plugins.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"volsched.plugins.{name}":
                raise


def make_plugin(name: str, raw_arguments: dict[str, Any]) -> Plugin:
    args = Arguments(name, raw_arguments)
    plugin = PLUGINS[name](args)
    unknown = args.unknown()
    if unknown:
        known = [k for k in args.known() if k not in unknown]
        hint = f"; known: {', '.join(known)}" if known else ""
        raise InputError(f"plugin {name}: unknown argument(s) {', '.join(unknown)}{hint}")
    return plugin


def make_plugins(config: SchedulerConfig) -> list[Plugin]:
    return [make_plugin(opt.name, dict(opt.arguments)) for opt in config.plugin_options()]


def make_actions(config: SchedulerConfig) -> list[Action]:
    return [ACTIONS[name]() for name in config.actions]


def placement_gap(config: SchedulerConfig) -> str | None:
    """Why a config that loads places no pod that requests resources (no action of it places every
    pod, as allocate does; a descheduler-only config may mean it), or None. The warning on load, on
    ``/readyz`` and on every pending pod says it in these words."""
    placing = {name: getattr(ACTIONS[name], "places", "") for name in config.actions}
    if "every pod" in placing.values():
        return None
    wanted = sorted(name for name, cls in ACTIONS.items() if getattr(cls, "places", "") == "every pod")
    some = [f"{name} places only {what}" for name, what in placing.items() if what]
    return (
        f"the scheduler config's actions ({', '.join(config.actions)}) place no pod that requests "
        f"resources: {' or '.join(wanted)} is not among them" + "".join(f" ({s})" for s in some)
    )


def validate_plugin_arguments(config: SchedulerConfig) -> None:
    """Build every plugin once, and check every action's arguments (an action class may have a
    ``check_arguments(Arguments)`` static method), so a malformed argument fails at load time."""
    try:
        make_plugins(config)
        for name, raw in config.configurations.items():
            check = getattr(ACTIONS[name], "check_arguments", None)
            if check is not None:
                check(Arguments(name, raw))
    except InputError as exc:
        raise exc.located(config.source) from None


def load_config(path: str | Path | None = None, *, text: str | None = None) -> SchedulerConfig:
    """Load and validate a config from a file, from text, or the built-in default."""
    data: str | bytes
    if path is not None:
        source = str(path)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read scheduler config: {exc.strerror}", source=source) from None
    else:
        source = "<inline>" if text is not None else "<default>"
        data = DEFAULT_CONFIG_YAML if text is None else text
    try:
        config = parse_config(data, source=source, known_actions=ACTIONS, known_plugins=PLUGINS)
        validate_plugin_arguments(config)
    except InputError:
        raise
    except Exception as exc:  # a plugin's constructor tripping on a value: still the config's fault
        raise InputError(f"cannot load it ({type(exc).__name__}: {str(exc)[:200]})", source=source) from exc
    return config


load_builtins()
