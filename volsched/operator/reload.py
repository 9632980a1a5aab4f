"""The scheduler config from its ConfigMap (:class:`ConfigReloader`): read at start and whenever its
resourceVersion changes (the operator watches it; polled every ``config.poll_every`` seconds while that
watch is not answered: not started yet, refused, or the apiserver away); a config that does not load is
rejected with an event on the ConfigMap and a log line, and the last good one stays in force (when
none of the user's has loaded yet, the built-in default runs and ``standing_in`` says why: the operator
is not ready until a config of theirs loads, or the ConfigMap goes). Until the
ConfigMap has been read once (found absent counts: the built-in default is then the user's choice), no
config is the user's: ``known`` is False, the read is retried at each session's turn (at most every
:data:`UNREAD_RETRY` seconds), and the operator runs no session (a failed first read never lets the
default decide what the user's config forbids).

Once known, a poll's read is made on a thread of its own and its answer judged at the next ``reload``
(on the caller's thread, as before): a session does not wait for its round trip. A read that fails there
is said as it fails (the log, or an outage told to ``health``), and the config in force is kept; a read
the apiserver throttles (429) is asked again at the next poll, quietly, until the reads have been
throttled for :data:`THROTTLED_WARNING` seconds in a row: then one warning says the config in force is
kept, and one line when a read is answered again (``volsched_config_reloads_total{result="throttled"}``
counts every throttled read). A failure is logged by its status and reason only. When
that read shows another resourceVersion, ``on_fetched`` is called, so the operator can call for a
session (its ``reload`` loads it) rather than wait for the next poll. The watch's events (:meth:`watched`)
are kept and told in the same way, and judged at the next ``reload`` alike.

Reading and judging the ConfigMap only: what a config means is :mod:`volsched.framework.registry`
(``load_config``) and :mod:`volsched.metrics.config`; the session that uses it is the operator's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from volsched.framework.config import SchedulerConfig
from volsched.framework.registry import load_config, placement_gap
from volsched.kube import status as render
from volsched.kube.configsource import ConfigMapText, parse_config_map
from volsched.kube.health import ApiHealth, back_pressure, is_throttled, is_unreachable
from volsched.kube.writer import KubeWriter
from volsched.metrics.config import MetricsConfigError, parse_metrics_config
from volsched.model.errors import InputError
from volsched.operator.settings import ConfigSettings
from volsched.redaction import error_summary, redact

if TYPE_CHECKING:  # a type only
    from volsched.operator.series import CounterSeries

log = logging.getLogger("volsched.operator")

#: Seconds between reads while the ConfigMap has never been read (sessions wait for it).
UNREAD_RETRY = 0.5
#: Seconds a poll's read behind waits at most for :attr:`ConfigReloader.wait_quiet` (the sessions quiet).
QUIET_WAIT = 0.1
#: Seconds of reads all throttled (429) after which a warning says the config in force is kept.
THROTTLED_WARNING = 30.0


class ConfigReloader:
    """``config`` is the config in force (the built-in default until a ConfigMap loads); ``error`` why
    the last one read was rejected (None once one loads). ``read(at_start)`` reads the ConfigMap (None: it does
    not exist; only the forced read at start waits out a throttled answer); ``on_load`` is called with each config loaded.
    ``known``: the ConfigMap has been read (or found absent) at least once; until then no session may run."""

    def __init__(
        self,
        settings: ConfigSettings,
        *,
        health: ApiHealth,
        writer: KubeWriter,
        reloads: CounterSeries,
        read: Callable[[bool], ConfigMapText | None],
        on_load: Callable[[SchedulerConfig], object],
    ) -> None:
        self.read = read
        self.settings = settings
        self.health = health
        self.writer = writer
        self.reloads = reloads
        self.on_load = on_load
        self.config: SchedulerConfig = load_config()
        self.version: str | None = None
        self.error: str | None = None
        self.known = False
        #: Why the built-in default stands in for the user's config: their ConfigMap's config was
        #: rejected and none of theirs has loaded yet (the operator is not ready meanwhile); else None.
        self.standing_in: str | None = None
        self._loaded_once = False  # a config of the ConfigMap's has loaded (the default is not in force)
        #: Why the last read failed, while the ConfigMap has never been read (its status, or the
        #: failure's type: never the answer's text).
        self.unread = "not read yet"
        self._held = False  # said that sessions wait for the first read
        self._checked = 0.0
        #: Called (on the reading thread; must not block) when a read made behind shows another
        #: resourceVersion than the one in force: ``reload`` has a config to judge (a failed read is
        #: said on the reading thread as it fails).
        self.on_fetched: Callable[[], None] | None = None
        self._fetch_lock = threading.Lock()
        self._fetching = False
        #: Called on the poll's own thread before it reads behind, with the most it may wait (seconds): the
        #: operator waits there for its sessions to be quiet (the session that found the poll due has
        #: only begun), so that the read's work does not share the interpreter with it.
        self.wait_quiet: Callable[[float], object] | None = None
        #: A read made behind and not judged yet: its answer.
        self._fetched: tuple[ConfigMapText | None] | None = None
        #: Whether a watch of the ConfigMap keeps ``_fetched`` current (its events: :meth:`watched`): no poll
        #: is read meanwhile. None: no watch.
        self.watching: Callable[[], bool] | None = None
        #: The watch's events so far: a poll's read begun before the last of them is dropped (older).
        self._events = 0
        #: Said that the ConfigMap is polled while its watch is not answered (once each time).
        self._said_polled = False
        #: When the reads began to be throttled (429), while none has been answered since; and whether
        #: that was warned of (once per such run).
        self._throttled_since: float | None = None
        self._throttle_warned = False

    def due(self, now: float) -> bool:
        """Whether :meth:`reload` would do more now than look at the clock: judge an answer read behind (a
        config to load, an event to post), read the ConfigMap itself (never read yet) or start a poll's
        read behind (a thread; none while a watch of the ConfigMap is answered: it tells of every change).
        An arriving pod's session on the pod watch's thread leaves that to the session thread."""
        if self._fetched is not None or not self.known:
            return True
        if now - self._checked < self.settings.poll_every:
            return False
        return self.watching is None or not self.watching()

    def reload(self, *, force: bool = False) -> bool:
        """Load the ConfigMap when its resourceVersion changed; keep the last good config on errors.
        Returns whether a new config is in force (the first read counts: the config is known from then on)."""
        s = self.settings
        now = time.monotonic()
        with self._fetch_lock:
            fetched, self._fetched = self._fetched, None
        if fetched is not None and not force:  # a poll read behind: judged now (a forced read reads now)
            return self._judge(fetched[0])
        if not force and now - self._checked < (
            s.poll_every if self.known else min(s.poll_every, UNREAD_RETRY)
        ):
            return False
        self._checked = now
        if self.known and not force:  # a poll: read behind, judged at the next call
            if self.watching is None:
                self._read_behind()
            elif self.watching():  # a watch tells of every change itself
                self._said_polled = False
            else:
                self._polled_meanwhile()
                self._read_behind()
            return False
        try:
            cm = self.read(force)  # forced: the read at start, which waits out throttling
        except Exception as exc:
            self._read_failed(exc)
            return False
        self._answered()
        return self._judge(cm)

    def _polled_meanwhile(self) -> None:
        """Said once each time the ConfigMap's watch is found not answered at a poll (refused under an
        older RBAC, say): the config is still reloaded, polled instead."""
        if self._said_polled:
            return
        self._said_polled = True
        s = self.settings
        log.info(
            "ConfigMap %s/%s: its watch is not answered (see the watch's own line); read every %.1fs "
            "until it is", s.namespace, s.name, s.poll_every,
        )  # fmt: skip

    def _answered(self) -> None:
        """A read was answered: the apiserver is up, and a run of throttled reads is over."""
        self.health.ok()
        since, warned = self._throttled_since, self._throttle_warned
        self._throttled_since, self._throttle_warned = None, False
        if since is not None and warned:
            s = self.settings
            log.info(
                "ConfigMap %s/%s read again after %.0fs of throttled reads",
                s.namespace, s.name, time.monotonic() - since,
            )  # fmt: skip

    def _throttled(self) -> None:
        """A poll the apiserver throttled (429) while it is up: quiet, but warned of once the reads have
        been throttled for :data:`THROTTLED_WARNING` seconds in a row (the config in force is kept)."""
        s = self.settings
        self.reloads.labels("throttled").inc()
        now = time.monotonic()
        if self._throttled_since is None:
            self._throttled_since = now
        lasted = now - self._throttled_since
        if lasted < THROTTLED_WARNING or self._throttle_warned:
            log.debug("ConfigMap %s/%s: throttled (429); read again at the next poll", s.namespace, s.name)
            return
        self._throttle_warned = True
        log.warning(
            "ConfigMap %s/%s: every read throttled by the apiserver (429) for %.0fs; the config in force "
            "(%s) is kept until a read is answered (asked again every %.1fs)",
            s.namespace, s.name, lasted, self.config.source, s.poll_every,
        )  # fmt: skip

    def _read_failed(self, exc: Exception) -> None:
        """Say why a read failed (on the thread that made it, when it failed): a throttled answer quietly,
        an outage to ``health``, anything else in the log; while the ConfigMap was never read, that no
        session runs until it is."""
        s = self.settings
        status = getattr(exc, "status", None)
        self.unread = f"{status} {getattr(exc, 'reason', '')}".strip() if status else type(exc).__name__
        throttled = is_throttled(exc)
        if back_pressure(self.health, throttled=throttled):  # an answer: the next poll asks again
            self._throttled()
        elif is_unreachable(exc) or throttled:  # a 429 during an outage is counted with it
            self.health.failed(f"ConfigMap {s.namespace}/{s.name}", exc)  # said by its status
        else:  # said once while sessions wait for the first read (asked at each turn)
            repeat = log.debug if self._held and not self.known else log.warning
            repeat("cannot read ConfigMap %s/%s: %s", s.namespace, s.name, error_summary(exc))
        if not self.known and not self._held:
            self._held = True
            log.warning(
                "no session runs until the scheduler config (ConfigMap %s/%s) is read; "
                "asked again at each session's turn, at most every %.1fs",
                s.namespace, s.name, min(s.poll_every, UNREAD_RETRY),
            )  # fmt: skip

    def _user_config(self) -> None:
        """The config in force is the user's choice now: the default no longer stands in for one."""
        if self.standing_in is not None:
            self.standing_in = None
            log.info("ready: the scheduler config in force is %s", self.config.source)

    def _read_behind(self) -> None:
        """The poll's read on a thread of its own (one at a time). Whether the apiserver answered is told
        to ``health`` as the answer comes, and a failure said then (a verdict judged later, on another
        thread, would tell of an outage over by then, or of an answer from before one began); an answer
        is kept for the next :meth:`reload`, and ``on_fetched`` called when it has news."""
        with self._fetch_lock:
            if self._fetching:
                return
            self._fetching = True
            events = self._events

        def read() -> None:
            try:
                if self.wait_quiet is not None:
                    self.wait_quiet(QUIET_WAIT)
                answer = self.read(False)
            except Exception as exc:
                with self._fetch_lock:
                    self._fetching = False
                self._read_failed(exc)
                return
            self._answered()
            with self._fetch_lock:
                self._fetching = False
                if self._events != events:  # the watch told of the ConfigMap since: this read is older
                    return
                self._fetched = (answer,)
            self._tell(answer)

        threading.Thread(target=read, name="volsched-config-read", daemon=True).start()

    def watched(self, type_: str, obj: dict[str, Any]) -> None:
        """An event of the ConfigMap's watch (on the watch's thread; must not block): the ConfigMap as
        it is now (None once deleted), kept for the next :meth:`reload` as a poll's answer is."""
        answer = None if type_ == "DELETED" else parse_config_map(obj, self.settings.key)
        with self._fetch_lock:
            self._events += 1
            self._fetched = (answer,)
        self._tell(answer)

    def _tell(self, answer: ConfigMapText | None) -> None:
        """``on_fetched`` when ``answer`` is another version than the one in force."""
        if (None if answer is None else answer.resource_version) != self.version and self.on_fetched:
            self.on_fetched()

    def _judge(self, cm: ConfigMapText | None) -> bool:
        """A read's answer: load it when its resourceVersion is new (see :meth:`reload`)."""
        s = self.settings
        first = not self.known
        self.known = True
        if first and self._held:
            log.info("ConfigMap %s/%s read; sessions run from now on", s.namespace, s.name)
        version = None if cm is None else cm.resource_version
        if version == self.version:
            return first
        self.version = version
        if cm is None or cm.text is None:
            what = f"ConfigMap {s.namespace}/{s.name}" + ("" if cm is None else f" has no key {s.key!r}")
            log.info("%s; using %s", what if cm is not None else f"{what} not found", self.config.source)
            self._user_config()  # no config of theirs: what is in force is what they chose
            return first
        source = f"ConfigMap {s.namespace}/{s.name} key {s.key} (resourceVersion {version})"
        try:
            config = load_config(text=cm.text)
            parse_metrics_config(config.metrics)  # a bad metrics: section rejects the whole config
        except Exception as exc:  # whatever loading raises is the config's rejection, never the session's
            if isinstance(exc, InputError):
                message = exc.message
            elif isinstance(exc, MetricsConfigError):
                message = str(exc)
            else:
                log.debug("loading the scheduler config raised", exc_info=True)
                message = f"cannot load it ({type(exc).__name__}: {str(exc)[:200]})"
            message = redact(message)  # a URL with credentials in the config is never echoed
            self.reloads.labels("rejected").inc()  # counted before it shows, as a load is
            self.error = message
            log.error(
                "rejected scheduler config from %s: %s; keeping %s", source, message, self.config.source
            )
            body = render.object_event(
                kind="ConfigMap", api_version="v1", namespace=s.namespace, name=s.name, uid=cm.uid,
                reason="InvalidSchedulerConfig",
                message=f"rejected: {message}; keeping the last good config ({self.config.source})",
                now=render.now_rfc3339(), event_name=f"{s.name}.volsched-config-{version}",
            )  # fmt: skip
            error = self.writer.post_event(body)
            if error:
                log.warning("%s", error)
            if not self._loaded_once:  # the built-in default is in force: say so until one of theirs is
                self.standing_in = f"{source}: {message}"
                log.warning(
                    "not ready: the built-in default config runs in place of the rejected one (%s) "
                    "until a config of yours loads",
                    source,
                )
            return first
        self.reloads.labels("loaded").inc()  # counted before a session can run under it
        self.config = replace(config, source=source)
        self.error = None
        self._loaded_once = True
        self._user_config()
        self.on_load(config)
        log.info("loaded scheduler config from %s: actions %s", source, ", ".join(config.actions))
        gap = placement_gap(config)
        if gap is not None:  # valid, and perhaps meant (a descheduler only), but never silent
            log.warning("%s: %s; every pending pod says so", source, gap)
        return True
