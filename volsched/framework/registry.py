"""Registries of actions and plugins by name, filled by the built-in modules on first use, and
:func:`load_config`, which checks a config's names and arguments against them.

A built-in action or plugin is imported when a config names it (or something asks for it by name), not
when this module is: the operator's start-up pays only for the engine its config uses. The names of
the built-ins are known without importing them, so a config naming an unknown one is refused as before.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from volsched.framework.config import DEFAULT_CONFIG_YAML, SchedulerConfig, parse_config
from volsched.framework.plugin import Arguments
from volsched.model.errors import InputError
from volsched.records import dataclass

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


#: Held while a built-in module is imported; the modules being imported. A module registers its class
#: as its body runs, before the rest of the body has: a thread that finds the class registered while
#: another imports it waits for that import to end before it uses the class.
_import_lock = threading.RLock()
_importing: set[str] = set()


def _import_builtin(package: str, name: str) -> None:
    module = f"volsched.{package}.{name}"
    with _import_lock:
        _importing.add(module)
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
        finally:
            _importing.discard(module)


def load_builtins() -> None:
    """Import every built-in action and plugin (each registers itself)."""
    for name in _BUILTIN_ACTIONS:
        _import_builtin("actions", name)
    for name in _BUILTIN_PLUGINS:
        _import_builtin("plugins", name)


def _registered(table: dict[str, T], package: str, builtins: tuple[str, ...], name: str) -> T:
    found = table.get(name)
    if found is not None and not _importing:
        return found
    if name in builtins:
        with _import_lock:  # an import under way on another thread ends first
            if name not in table:
                _import_builtin(package, name)
    return table[name]


def action_class(name: str) -> Callable[[], Action]:
    """The action registered as ``name``, its built-in module imported first if need be (KeyError if
    there is none)."""
    return _registered(ACTIONS, "actions", _BUILTIN_ACTIONS, name)


def plugin_class(name: str) -> Callable[[Arguments], Plugin]:
    """The plugin registered as ``name``, its built-in module imported first if need be (KeyError if
    there is none)."""
    return _registered(PLUGINS, "plugins", _BUILTIN_PLUGINS, name)


class _Known(Mapping[str, object]):
    """The names a config may use: those registered and the built-ins not imported yet (only their names
    are read: ``in`` and the list of known names in an error)."""

    def __init__(self, registered: Mapping[str, object], builtins: tuple[str, ...]) -> None:
        self._names = dict.fromkeys([*builtins, *registered])

    def __getitem__(self, name: str) -> object:
        return self._names[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def make_plugin(name: str, raw_arguments: dict[str, Any]) -> Plugin:
    args = Arguments(name, raw_arguments)
    plugin = plugin_class(name)(args)
    unknown = args.unknown()
    if unknown:
        known = [k for k in args.known() if k not in unknown]
        hint = f"; known: {', '.join(known)}" if known else ""
        raise InputError(f"plugin {name}: unknown argument(s) {', '.join(unknown)}{hint}")
    return plugin


def make_plugins(config: SchedulerConfig) -> list[Plugin]:
    return [make_plugin(opt.name, dict(opt.arguments)) for opt in config.plugin_options()]


@dataclass(frozen=True, slots=True)
class PluginsAhead:
    """A config's plugins made ahead of its session (never opened), with the very config object they were
    made from: a session opens them only under that object (``open_session``), never under another
    config, not even one with the same plugin names and other arguments."""

    config: SchedulerConfig
    plugins: tuple[Plugin, ...]


def make_plugins_ahead(config: SchedulerConfig) -> PluginsAhead:
    return PluginsAhead(config, tuple(make_plugins(config)))


def make_actions(config: SchedulerConfig) -> list[Action]:
    return [action_class(name)() for name in config.actions]


def placement_gap(config: SchedulerConfig) -> str | None:
    """Why a config that loads places no pod that requests resources (no action of it places every
    pod, as allocate does; a descheduler-only config may mean it), or None. The warning on load, on
    ``/readyz`` and on every pending pod says it in these words."""
    placing = {name: getattr(action_class(name), "places", "") for name in config.actions}
    if "every pod" in placing.values():
        return None
    for name in _BUILTIN_ACTIONS:  # the message names every action that would place them
        if name not in ACTIONS:
            _import_builtin("actions", name)
    wanted = sorted(name for name, cls in ACTIONS.items() if getattr(cls, "places", "") == "every pod")
    some = [f"{name} places only {what}" for name, what in placing.items() if what]
    return (
        f"the scheduler config's actions ({', '.join(config.actions)}) place no pod that requests "
        f"resources: {' or '.join(wanted)} is not among them" + "".join(f" ({s})" for s in some)
    )


def validate_plugin_arguments(config: SchedulerConfig) -> None:
    """Build every plugin once, and check every action's arguments (an action class may have a
    ``check_arguments(Arguments)`` static method; one without reads none, so any given is refused), so a
    malformed or unread argument fails at load time."""
    try:
        make_plugins(config)
        for name, raw in config.configurations.items():
            check = getattr(action_class(name), "check_arguments", None)
            if check is not None:
                check(Arguments(name, raw))
            elif raw:
                raise InputError(
                    f"configurations: action {name} reads no arguments; got {', '.join(sorted(map(str, raw)))}"
                )
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
        config = parse_config(
            data,
            source=source,
            known_actions=_Known(ACTIONS, _BUILTIN_ACTIONS),
            known_plugins=_Known(PLUGINS, _BUILTIN_PLUGINS),
        )
        validate_plugin_arguments(config)
    except InputError:
        raise
    except Exception as exc:  # a plugin's constructor tripping on a value: still the config's fault
        raise InputError(f"cannot load it ({type(exc).__name__}: {str(exc)[:200]})", source=source) from exc
    return config
