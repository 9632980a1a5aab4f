"""What a plugin is built from: its :class:`Arguments`, and :class:`BasePlugin`.

The two small contracts themselves are declared beside what they receive, so the framework's modules
import each other in one direction only (an import-linter contract in ``make lint`` holds it):
:class:`~volsched.framework.points.Plugin` (``name``, ``on_session_open(session)``,
``on_session_close(session)``; in ``on_session_open`` it only registers callbacks,
``session.add_job_key_fn(self.name, fn)``) receives the
:class:`~volsched.framework.points.ExtensionPoints`, and :class:`~volsched.framework.session.Action`
(``name``, ``execute(session)``, never naming a plugin) the whole Session.

:class:`Arguments` reads a plugin's ``arguments`` map with typed getters whose errors name the plugin
and the key; keys a plugin never read are reported as unknown.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from volsched.model.errors import InputError
from volsched.model.scalars import boolean_value, parse_duration

if TYPE_CHECKING:
    from volsched.framework.points import ExtensionPoints


#: No number argument (a weight, a factor, a count, a threshold) is larger than this in magnitude.
NUMBER_LIMIT = 1e9


class Arguments:
    """A plugin's arguments. Accepts flat dotted keys (``usage.weight``) and nested maps alike."""

    def __init__(self, plugin: str, raw: Mapping[str, Any]) -> None:
        self.plugin = plugin
        self._flat: dict[str, Any] = {}
        self._flatten("", raw)
        self._read: set[str] = set()

    def _flatten(self, prefix: str, raw: Mapping[str, Any]) -> None:
        for key, value in raw.items():
            full = f"{prefix}{key}"
            if isinstance(value, Mapping) and value:
                self._flatten(f"{full}.", value)
            else:
                self._flat[full] = value

    def _error(self, key: str, message: str) -> InputError:
        return InputError(f"plugin {self.plugin}: argument {key}: {message}")

    def raw(self, key: str, default: Any = None) -> Any:
        self._read.add(key)
        return self._flat.get(key, default)

    def has(self, key: str) -> bool:
        return key in self._flat

    def with_prefix(self, prefix: str) -> Iterator[tuple[str, Any]]:
        for key in sorted(self._flat):
            if key.startswith(prefix):
                self._read.add(key)
                yield key[len(prefix) :], self._flat[key]

    def number(
        self, key: str, default: float, *, minimum: float | None = None, maximum: float | None = None
    ) -> float:
        """A finite number within [minimum, maximum]; beyond +-:data:`NUMBER_LIMIT` whatever the bounds."""
        value = self.raw(key, default)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise self._error(key, f"expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._error(key, f"expected a number, got {value!r}")
        if not -NUMBER_LIMIT <= value <= NUMBER_LIMIT:  # also false for NaN
            shown = (
                f"{value:.6g}" if isinstance(value, float) else f"an integer of {len(str(abs(value)))} digits"
            )
            raise self._error(key, f"expected a finite number of magnitude <= {NUMBER_LIMIT:g}, got {shown}")
        if minimum is not None and value < minimum:
            raise self._error(key, f"must be >= {minimum:g}, got {value:g}")
        if maximum is not None and value > maximum:
            raise self._error(key, f"must be <= {maximum:g}, got {value:g}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        parsed = boolean_value(value)
        if parsed is None:
            raise self._error(key, f"expected true or false, got {value!r}")
        return parsed

    def duration(self, key: str, default: float, *, allow_zero: bool = False) -> float:
        """A Go-style duration (``30s``, ``5m``, ``1h30m``) or a number of seconds, as seconds."""
        if not self.has(key):
            self.raw(key)
            return default
        return parse_duration(
            self.raw(key), where=f"plugin {self.plugin}: argument {key}", allow_zero=allow_zero
        )

    def unknown(self) -> list[str]:
        return sorted(set(self._flat) - self._read)

    def known(self) -> list[str]:
        """The keys the plugin asked for (what a user may set)."""
        return sorted(self._read)


class BasePlugin:
    """Convenience base: stores arguments; on_session_close does nothing by default."""

    name: ClassVar[str] = ""
    #: Whether what it answers may depend on the session's clock (``session.now``) or on its carryover,
    #: so that a session on an unchanged cache may decide otherwise later (see ``volsched.cycle.IdleSkip``).
    #: True unless the plugin says it does not.
    reads_clock: ClassVar[bool] = True
    #: Whether what it answers about a job (and its pods) depends only on the job's shape (queue,
    #: namespace, priority, minMember, its phase now and when the session opened, its pods' requests,
    #: placement, constraints, labels and annotations) and on the cluster, never on the job's or its
    #: pods' names, uids or creation times:
    #: then two jobs alike that wait side by side get the same answers, and an action may ask for one of
    #: them only (see ``volsched.actions.eviction.job_shape``). False unless the plugin says so.
    answers_by_shape: ClassVar[bool] = False
    #: Whether its job order key, job validity and whether a job starves (``add_job_key_fn``,
    #: ``add_job_valid_fn``, ``add_job_starving_fn``), if it gives them, read nothing but the job (its
    #: fields, its PodGroup, its tasks), the session's Queues, the namespaces' labels and the ready
    #: nodes' total (no clock, no carryover, no other job, nothing a placement moves): then an answer
    #: asked of a job that nothing changed since is kept, from one session to the next while none of
    #: those changed (keys and validity: ``volsched.actions.kept``), from one action to the next of a
    #: session (starving: ``volsched.actions.eviction.starving_by_queue``). False unless the plugin
    #: says so.
    job_answers_kept: ClassVar[bool] = False

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, session: ExtensionPoints) -> None:
        raise NotImplementedError

    def on_session_close(self, session: ExtensionPoints) -> None:
        return None
