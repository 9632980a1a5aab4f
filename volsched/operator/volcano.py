"""Which of Volcano's kinds the cluster serves, and their watches (:class:`VolcanoKinds`).

Volcano's PodGroups and Queues are read as volsched's own while their CRDs are installed: looked for at
start and every ``session.volcano_check_every`` seconds through API discovery (no CRD read, no extra
permission); a kind found is listed and watched on its own thread, a kind no longer served stops being
watched and what the cache holds of it is dropped. It decides nothing and parses nothing: each watch hands
its events to the operator's handler, the cache decodes them (``volsched.cache.volcano``).

Kubernetes' own ``scheduling.k8s.io/v1beta1`` PodGroups (the Workload API; served in 1.37 only with the
GenericWorkload feature gate and its runtime config) are looked for and followed the same way
(``volsched.cache.workload`` decodes them).

A Volcano kind found is also checked against the operator's rights (:func:`status_rights_problem`): its status
is written through the status subresource where its CRD has one, else as a field of the object, which
needs ``patch`` on the object itself; a warning says so when the rights granted do not fit the CRD.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_VERSION
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_VERSION
from volsched.kube.lister import VOLCANO_WATCHED, WORKLOAD_WATCHED, WatchedKind, served_resources
from volsched.kube.rest import LeanRest
from volsched.kube.reviews import self_may
from volsched.kube.watch import ListWatch
from volsched.operator.settings import SessionSettings

log = logging.getLogger("volsched.operator")

#: What a watch hands over: the kind (Volcano's own name for it), the event type and the object.
Handler = Callable[[str, str, dict[str, Any]], None]
#: A new (not yet started) watch of a kind, handing its events to the callback.
NewWatch = Callable[[WatchedKind, Callable[[str, dict[str, Any]], None]], ListWatch]
#: The API groups looked for, each with the kinds read from it when served: (group, version, kinds, whose).
SOURCES: tuple[tuple[str, str, tuple[WatchedKind, ...], str], ...] = (
    (VOLCANO_GROUP, VOLCANO_VERSION, VOLCANO_WATCHED, "Volcano"),
    (WORKLOAD_GROUP, WORKLOAD_VERSION, WORKLOAD_WATCHED, "Kubernetes' Workload API"),
)
#: Every kind the operator watches only while it is served.
OPTIONAL_WATCHED: tuple[WatchedKind, ...] = tuple(k for _, _, kinds, _ in SOURCES for k in kinds)


def status_rights_problem(
    kind: WatchedKind, *, has_status: bool, may_status: bool, may_object: bool
) -> tuple[int, str] | None:
    """Why the rights to write ``kind``'s status do not fit its CRD, and how loud (a logging level: a
    right missing is a warning, one wider than needed is told at INFO); None: they fit. With a status
    subresource, ``patch`` on it is needed and ``patch`` on the objects is not; without one, the status
    is a field of the object and ``patch`` on the objects is needed."""
    where = f"{kind.plural}.{VOLCANO_GROUP}"
    name = kind.kind.removeprefix("Volcano")  # the cache's name for it: VolcanoPodGroup
    if has_status and not may_status:
        return logging.WARNING, (
            f"Volcano's {name} CRD has a status subresource, but this operator may not patch "
            f"{kind.plural}/status in {VOLCANO_GROUP}: the status of Volcano {kind.plural} (phase, "
            "conditions) will not be written; grant it (manifests/10-rbac.yaml, the chart's ClusterRole)"
        )
    if not has_status and not may_object:
        return logging.WARNING, (
            f"Volcano's {name} CRD has no status subresource, so their status is written as a field "
            f"of the object, which needs patch on {where}, not granted: the status of Volcano "
            f"{kind.plural} will not be written; add {kind.plural} to the chart's rbac.volcanoPatchObjects"
        )
    if has_status and may_object:
        return logging.INFO, (
            f"Volcano's {name} CRD has a status subresource, yet this operator may patch the "
            f"{where} objects themselves, which it does not need: remove {kind.plural} from the chart's "
            "rbac.volcanoPatchObjects"
        )
    return None


class VolcanoKinds:
    """Volcano's kinds the cluster serves, by kind, each with its :class:`ListWatch` (``watches``).

    Only the thread running sessions (or the start) changes ``watches``, holding ``lock``, which
    :meth:`stopped` holds too (a session stuck at shutdown may still change it)."""

    def __init__(
        self,
        *,
        reads: LeanRest,
        new_watch: NewWatch,
        session: SessionSettings,
        on_event: Handler,
        on_status_subresource: Callable[[str, bool], None] | None = None,
    ) -> None:
        """``on_status_subresource(plural, served)``: at each look, whether a Volcano kind served has a
        status subresource (else its status is a field of the object)."""
        self.reads = reads
        self.on_status_subresource = on_status_subresource
        self.new_watch = new_watch
        self.session = session  # read at each look: volcano_check_every may change
        self.on_event = on_event
        self.watches: dict[str, ListWatch] = {}
        self.lock = threading.Lock()
        self._checked = 0.0
        self._started = False

    def discover(self) -> None:
        """At start: list and watch Volcano's PodGroups and Queues too when their CRDs are installed
        (the watch feed's prelist lists them, its start watches on: :mod:`~volsched.operator.watches`)."""
        self.follow(force=True)
        missing = [k.plural for k in VOLCANO_WATCHED if k.kind not in self.watches]
        if missing:
            log.info(
                "%s/%s %s not served (yet): volsched reads Volcano objects once Volcano's CRDs are "
                "installed (looked for every %gs)",
                VOLCANO_GROUP, VOLCANO_VERSION, " and ".join(missing),
                self.session.volcano_check_every,
            )  # fmt: skip
        if any(k.kind not in self.watches for k in WORKLOAD_WATCHED):
            log.info(
                "%s/%s podgroups not served: volsched reads Kubernetes' own PodGroups (the Workload API) "
                "once the apiserver serves them (Kubernetes 1.37: --feature-gates=GenericWorkload=true "
                "--runtime-config=%s/%s=true; looked for every %gs)",
                WORKLOAD_GROUP, WORKLOAD_VERSION, WORKLOAD_GROUP, WORKLOAD_VERSION,
                self.session.volcano_check_every,
            )  # fmt: skip

    def due(self, now: float) -> bool:
        """Whether :meth:`follow` would look now (API discovery, and a kind's watch started or stopped,
        its rights checked): an arriving pod's session on the pod watch's thread leaves that to the
        session thread."""
        return now - self._checked >= self.session.volcano_check_every

    def follow(self, *, force: bool = False) -> None:
        """Every ``session.volcano_check_every`` seconds (leader and followers alike: a follower's cache
        stays warm), read which of Volcano's kinds the cluster serves (API discovery: no CRD read, no
        extra permission). A kind served since the last look is listed and watched from now on; a kind
        no longer served (its CRD deleted, which deletes its objects first) stops being watched and
        what the cache still holds of it is dropped: its objects no longer count. When discovery
        fails, nothing changes."""
        now = time.monotonic()
        if not force and now - self._checked < self.session.volcano_check_every:
            return
        self._checked = now
        for group, version, kinds, _ in SOURCES:
            try:
                names = served_resources(self.reads, group, version)
            except Exception as exc:
                log.log(
                    logging.WARNING if force else logging.DEBUG,
                    "cannot tell whether %s is served (%s); looking again in %gs",
                    group, exc, self.session.volcano_check_every,
                )  # fmt: skip
                continue
            served = {n for n in names if "/" not in n}
            for kind in kinds:
                if group == VOLCANO_GROUP and kind.plural in served and self.on_status_subresource:
                    self.on_status_subresource(kind.plural, f"{kind.plural}/status" in names)
                if kind.plural in served and kind.kind not in self.watches:
                    self._watch(kind)
                    if group == VOLCANO_GROUP:  # Kubernetes' PodGroups always have a status subresource
                        self._check_rights(kind, has_status=f"{kind.plural}/status" in names)
                elif kind.plural not in served and kind.kind in self.watches:
                    self._unwatch(kind)

    def started(self) -> tuple[ListWatch, ...]:
        """The watches to start now; kinds found from now on are watched at once."""
        with self.lock:
            self._started = True
            return tuple(self.watches.values())

    def stopped(self) -> tuple[ListWatch, ...]:
        """The watches to stop now; kinds found from now on are not watched (nothing would stop them)."""
        with self.lock:
            self._started = False
            return tuple(self.watches.values())

    def _watch(self, kind: WatchedKind) -> None:
        log.info(
            "reading %s %s (%s/%s) as volsched's; volsched's own objects win on a name clash",
            _whose(kind), kind.plural, kind.group, kind.version,
        )  # fmt: skip

        def on_event(type_: str, obj: dict[str, Any]) -> None:
            self.on_event(kind.kind, type_, obj)

        w = self.new_watch(kind, on_event)
        with self.lock:
            self.watches[kind.kind] = w
            if self._started:  # found after the start: lists, then watches, on its own thread
                w.start()

    def _check_rights(self, kind: WatchedKind, *, has_status: bool) -> None:
        """Warn when the rights to write ``kind``'s status do not fit its CRD (SelfSubjectAccessReviews)."""
        try:
            problem = status_rights_problem(
                kind,
                has_status=has_status,
                may_status=self_may(
                    self.reads, verb="patch", group=VOLCANO_GROUP, resource=kind.plural, subresource="status"
                ),
                may_object=self_may(self.reads, verb="patch", group=VOLCANO_GROUP, resource=kind.plural),
            )
        except Exception as exc:
            log.debug("cannot check the rights on Volcano %s (%s)", kind.plural, exc)
            return
        if problem is not None:
            log.log(problem[0], "%s", problem[1])

    def _unwatch(self, kind: WatchedKind) -> None:
        with self.lock:
            w = self.watches.pop(kind.kind)
        w.stop()  # gives up on a stuck thread after a while: drop_known makes whatever it brings late void
        # Their deletions came before the CRD's; any the watch missed go now, and nothing comes after.
        left = w.drop_known()
        log.warning(
            "%s/%s %s no longer served: no longer reading %s %s (%d left in the cache dropped); they are "
            "read again once they are served again",
            kind.group, kind.version, kind.plural, _whose(kind), kind.plural, left,
        )  # fmt: skip


def _whose(kind: WatchedKind) -> str:
    return next(whose for group, _, _, whose in SOURCES if group == kind.group)
