"""The operator's settings: nested dataclasses (:class:`Settings`) and the ``volsched run`` command line
that fills them (:func:`build_parser`, :func:`settings_from_args`).

Plain data and argument parsing only: nothing here talks to the cluster or starts anything; the
lifecycle that uses them is :class:`volsched.operator.Operator`.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import field

from volsched.kube.lease import LeaseSettings
from volsched.kube.writer import WriterSettings
from volsched.model import validation
from volsched.model.errors import InputError
from volsched.model.vocabulary import DEFAULT_SCHEDULER_NAMES
from volsched.pacing import MIN_GAP, PERIOD
from volsched.records import dataclass

DEFAULT_NAMESPACE = "volsched-system"


@dataclass
class SessionSettings:
    """When sessions run (period, gap) and how long assumptions last."""

    #: Seconds between the starts of two sessions when nothing calls for one sooner.
    period: float = PERIOD
    #: A session runs as soon as a pod of ours arrives pending (or capacity frees while pods wait), but at
    #: least this many seconds after the last one ended, and as long as it took (see
    #: ``volsched.pacing``); >= period: a session every period only. Small, because the gap
    #: also follows the last session's CPU time, which keeps the processor shared where sessions cost
    #: (figures: docs/benchmarks/2026-11-29.md); this floor only batches the pods of a small cluster's
    #: cheap sessions (a longer one kept arriving pods waiting for it).
    min_gap: float = MIN_GAP
    #: How long a bound pod is taken as bound without the watch confirming it.
    assume_ttl: float = 30.0
    #: A session that would decide nothing new is skipped, but one runs at least every this many
    #: seconds for time-based inputs (usage figures' age, rescheduling intervals) when a configured
    #: plugin reads them, and to retry status writes (see ``volsched.cycle.IdleSkip``). 0: never skip.
    max_idle: float = 10.0
    #: How often to look whether Volcano's CRDs were installed (or removed) since: read from then on.
    volcano_check_every: float = 60.0
    #: The time slice (seconds) asked of the kernel for the threads on an arriving pod's way (the pod
    #: watch's, the session thread), where it takes one (Linux 6.12 and later: ``volsched.threadslice``);
    #: 0: the kernel's own (the default: a short one measured no better, docs/benchmarks).
    thread_slice: float = 0.0


@dataclass
class ConfigSettings:
    """Where the scheduler config is read from (a ConfigMap's key) and how often."""

    namespace: str = DEFAULT_NAMESPACE
    name: str = "volsched-scheduler-config"
    key: str = "volsched-scheduler.conf"
    poll_every: float = 2.0


@dataclass
class HttpSettings:
    """Where the HTTP server listens and who may read /metrics and the dashboard's data."""

    host: str = "0.0.0.0"
    port: int = 8080  # 0: any free port (see Operator.http_port)
    #: Who may read /metrics and the dashboard's data: "kubernetes" (a bearer token the apiserver
    #: reviews) or "none" (whoever reaches the port; the health endpoints answer anyone either way).
    auth: str = "kubernetes"


@dataclass
class WebhookSettings:
    """Admission webhooks (volsched.operator.admission); off while ``port`` is 0."""

    port: int = 0
    #: The address to listen on; also the host in the URLs the webhook configurations name (a Service's
    #: DNS name needs ``url_host``).
    host: str = "127.0.0.1"
    url_host: str | None = None
    #: A directory with tls.crt, tls.key and ca.crt (cert-manager's Secret); None: a self-signed CA, in
    #: ``cert_secret`` or made at start.
    cert_dir: str | None = None
    #: A Secret (in the operator's namespace) holding the CA and the certificate every replica serves:
    #: created by the first replica, read by the others, renewed before they expire. None: each replica
    #: makes its own CA at start (one replica only).
    cert_secret: str | None = None
    #: Queues and PodGroups: let requests through when the webhook cannot answer (Ignore) or not (Fail).
    fail_open: bool = False
    #: "namespace/name[:port]" of a Service in front of the webhooks: the configurations name it (and the
    #: self-signed certificate its DNS name) instead of a URL.
    service: str | None = None


@dataclass
class Settings:
    """``volsched run``'s settings, from its command line."""

    kubeconfig: str | None = None
    session: SessionSettings = field(default_factory=SessionSettings)
    config: ConfigSettings = field(default_factory=ConfigSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    lease: LeaseSettings = field(default_factory=LeaseSettings)
    writer: WriterSettings = field(default_factory=WriterSettings)
    #: The spec.schedulerName values whose pods this operator schedules.
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES
    #: The Secret (in ``config.namespace``) holding the key the pods' bound-under records are signed with
    #: (``volsched.kube.recordkey``): made by the first replica that finds none.
    record_key_secret: str = "volsched-record-key"
    identity: str = field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    )


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` (to ``high``); anything else is refused at parse
    (exit 2, the flag named), never left to what it would start."""
    bounds = f">= {low}" if high is None else f"from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer {bounds}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be an integer {bounds}, got {value}")
        return value

    return parse


def number(*, positive: bool) -> Callable[[str], float]:
    """An argparse type: a finite number (seconds, or a rate), > 0 (``positive``) or >= 0."""
    bounds = "> 0" if positive else ">= 0"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number {bounds}, got {text!r}") from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(f"must be a number {bounds}, got {text}")
        return value

    return parse


PORT = integer(0, 65535)


def _slice_ms(text: str) -> float:
    """``--thread-slice``: 0 (the kernel's own), or milliseconds the kernel takes as they are (0.1 to 100)."""
    value = number(positive=False)(text)
    if value and not 0.1 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"must be 0 or from 0.1 to 100 (milliseconds), got {text}")
    return value


def parse_service(text: str) -> tuple[str, str, int]:
    """``--webhook-service``: ``namespace/name[:port]`` (port 443 when not given); ValueError otherwise."""
    ref, colon, port = text.partition(":")
    namespace, _, name = ref.partition("/")
    valid = (
        namespace and name and "/" not in name and (not colon or (port.isdigit() and 1 <= int(port) <= 65535))
    )
    if not valid:
        raise ValueError(f"expected namespace/name[:port] (a port from 1 to 65535), got {text!r}")
    return namespace, name, int(port or 443)


def kube_name(*, label: bool = False) -> Callable[[str], str]:
    """An argparse type: a name the apiserver takes (a DNS subdomain; with ``label``, a DNS label, as a
    namespace's name is), refused at parse as a number out of range is."""
    check = validation.dns_label if label else validation.dns_subdomain

    def parse(text: str) -> str:
        try:
            check(text, field="name")
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.message.removeprefix("name: ")) from None
        return text

    return parse


#: What a ConfigMap's data key may be (the apiserver's rule).
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]{1,253}")


def _config_key(text: str) -> str:
    """``--config-key``'s type: a key a ConfigMap can hold, refused at parse otherwise."""
    if not _CONFIG_KEY.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid: a ConfigMap key is 1 to 253 letters, digits, '-', '_' and '.'"
        )
    return text


def _service(text: str) -> str:
    """``--webhook-service``'s type: refused at parse, as a number out of range is."""
    try:
        parse_service(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


class _RunParser(argparse.ArgumentParser):
    """``volsched run``'s parser: the checks that span two flags refuse as a flag's own type does (exit 2,
    both flags named), and a flag left out takes a default that fits the others."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, rest = super().parse_known_args(args, namespace)
        first, most = parsed.bind_workers_first, parsed.bind_workers
        if first is None:  # left out: the default, or every bind worker where there are fewer
            parsed.bind_workers_first = min(WriterSettings().bind_workers_first, max(1, most))
        elif max(1, first) > max(1, most):  # (0 is one, for both)
            self.error(f"--bind-workers-first {first} is more than --bind-workers {most}")
        if _same_listener(parsed):
            self.error(
                f"--webhook-port {parsed.webhook_port} is --metrics-port's too, on the same address: the "
                "webhooks' server would fail to listen (the apiserver then refuses or lets through, by the "
                "failure policy, what it cannot ask about); give them different ports"
            )
        if parsed.webhook_cert_dir and parsed.webhook_cert_secret:
            self.error("--webhook-cert-dir and --webhook-cert-secret exclude each other")
        if parsed.webhook_cert_secret and not (parsed.webhook_service or parsed.webhook_url_host):
            # Each replica's own address in one shared certificate would make it grow with every new pod.
            self.error(
                "--webhook-cert-secret needs a name every replica answers to: --webhook-service "
                "(or --webhook-url-host)"
            )
        return parsed, rest


def build_parser() -> argparse.ArgumentParser:
    """``volsched run``'s parser; its options by what they set, in the order ``--help`` lists them."""
    d = Settings()
    p = _RunParser(prog="volsched run", description="Run the volsched scheduler operator.")
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: in-cluster, then the files $KUBECONFIG names, merged, or ~/.kube/config)",
    )
    _add_config(p, d)
    _add_sessions(p, d)
    _add_serving(p, d)
    _add_lease(p, d)
    _add_writes(p, d)
    p.add_argument(
        "--scheduler-names",
        type=_scheduler_names,
        default=os.environ.get("VOLSCHED_SCHEDULER_NAMES") or ",".join(sorted(d.scheduler_names)),
        help="comma-separated spec.schedulerName values whose pods volsched schedules "
        "(default: $VOLSCHED_SCHEDULER_NAMES, else volsched)",
    )
    p.add_argument(
        "--log-level",
        default=os.environ.get("VOLSCHED_LOG_LEVEL", "INFO"),
        type=_log_levels,
        help="the root logger's level, then optional LOGGER=LEVEL pairs, comma-separated (e.g. "
        "INFO,volsched.latency=DEBUG: where each pod's time goes; default: $VOLSCHED_LOG_LEVEL, else INFO)",
    )
    return p


def _add_config(p: argparse.ArgumentParser, d: Settings) -> None:
    """Where the scheduler config is read: its namespace (the Lease's too), ConfigMap and key."""
    p.add_argument(
        "--namespace",
        type=kube_name(label=True),
        default=d.config.namespace,
        help="namespace of the config ConfigMap and the Lease",
    )
    p.add_argument(
        "--config-map", type=kube_name(), default=d.config.name, help="name of the scheduler config ConfigMap"
    )
    p.add_argument(
        "--config-key", type=_config_key, default=d.config.key, help="key in the ConfigMap holding the config"
    )


def _add_sessions(p: argparse.ArgumentParser, d: Settings) -> None:
    """When sessions run: their period, the gap after one, idle skips, Volcano's CRDs looked for."""
    p.add_argument(
        "--period",
        type=number(positive=True),
        default=d.session.period,
        help="seconds between sessions when nothing calls for one sooner (> 0)",
    )
    p.add_argument(
        "--min-gap",
        type=number(positive=False),
        default=d.session.min_gap,
        help="a session runs soon after a pod arrives (or capacity frees while pods wait), but at least "
        "this many seconds after the last one ended, and as long as it took (>= 0; >= --period: a session "
        "every period only)",
    )
    p.add_argument(
        "--max-idle",
        type=number(positive=False),
        default=d.session.max_idle,
        help="skip sessions that would decide nothing new, but run one at least every this many seconds "
        "(>= 0; 0: never skip)",
    )
    p.add_argument(
        "--volcano-check-every",
        type=number(positive=True),
        default=d.session.volcano_check_every,
        help="seconds between looks whether Volcano's CRDs were installed or removed (followed, no restart; "
        "> 0)",
    )
    p.add_argument(
        "--thread-slice",
        type=_slice_ms,
        default=d.session.thread_slice * 1000.0,
        help="milliseconds of time slice asked of the kernel for the pod watch's and the session thread "
        "(0.1 to 100; e.g. 0.1: they run sooner when they wake, and yield sooner; Linux 6.12 and later, "
        "elsewhere nothing is asked; default 0: the kernel's own)",
    )


#: Addresses that listen on every interface (and so on any address another server names).
_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::", "*"})


def _same_listener(parsed: argparse.Namespace) -> bool:
    """Whether the webhooks and /healthz, /metrics would listen on the same port of the same address."""
    port = parsed.webhook_port
    if not port or port != parsed.metrics_port:
        return False
    http = {h.strip() for h in str(parsed.metrics_host or "").split(",")} or {""}
    hook = {str(parsed.webhook_host or "").strip()}
    return bool(http & hook or (http | hook) & _EVERY_ADDRESS)


def _add_serving(p: argparse.ArgumentParser, d: Settings) -> None:
    """What the operator serves: /healthz, /metrics and /ui, the admission webhooks, who may read."""
    p.add_argument(
        "--metrics-port",
        type=PORT,
        default=d.http.port,
        help="port for /healthz, /metrics and /ui (0 to 65535; 0: any free port)",
    )
    p.add_argument(
        "--metrics-host",
        default=d.http.host,
        help="address(es) to serve /healthz, /metrics and /ui on, comma-separated (e.g. the pod's IP and 127.0.0.1)",
    )
    p.add_argument(
        "--webhook-port",
        type=PORT,
        default=0,
        help="serve admission webhooks on this port (0 to 65535; 0: off)",
    )
    p.add_argument("--webhook-host", default="127.0.0.1", help="address the webhooks listen on")
    p.add_argument(
        "--webhook-url-host", default=None, help="host in the webhook URLs (default: --webhook-host)"
    )
    p.add_argument(
        "--webhook-cert-dir",
        default=None,
        help="tls.crt, tls.key and ca.crt (e.g. cert-manager's Secret); default: a self-signed CA made at start",
    )
    p.add_argument(
        "--record-key-secret",
        type=kube_name(),
        default=d.record_key_secret,
        help="a Secret in --namespace holding the key the pods' bound-under records are signed with "
        "(created by the first replica that finds none; needs get on it and create on Secrets)",
    )
    p.add_argument(
        "--webhook-cert-secret",
        type=kube_name(),
        default=None,
        help="a Secret in --namespace holding the self-signed CA and certificate every replica serves "
        "(created by the first, renewed before expiry); default: a CA made at every start (one replica only)",
    )
    p.add_argument(
        "--webhook-service",
        type=_service,
        default=None,
        help="namespace/name[:port] of the Service in front of the webhooks (default: a URL to --webhook-url-host)",
    )
    p.add_argument(
        "--webhook-failure-policy",
        choices=("Fail", "Ignore"),
        default="Fail",
        help="for Queues and PodGroups when the webhook cannot answer (pods: always Ignore)",
    )
    p.add_argument(
        "--http-auth",
        choices=("kubernetes", "none"),
        default=d.http.auth,
        help="who may read /metrics and the dashboard's data: a bearer token the apiserver reviews "
        "(TokenReview, SubjectAccessReview), or anyone who reaches the port (none)",
    )


def _add_lease(p: argparse.ArgumentParser, d: Settings) -> None:
    """The Lease the replicas share."""
    p.add_argument(
        "--lease-name",
        type=kube_name(),
        default=d.lease.name,
        help="name of the Lease in --namespace that replicas share: only its holder binds, evicts or "
        "writes status",
    )
    p.add_argument(
        "--lease-duration",
        type=number(positive=True),
        default=d.lease.duration,
        help="seconds a replica that stops renewing keeps the Lease (> 0)",
    )
    p.add_argument(
        "--no-lease", action="store_true", help="do not guard binds with a Lease (one replica only!)"
    )


def _add_writes(p: argparse.ArgumentParser, d: Settings) -> None:
    """The API writes: bind workers, other writers, the client-side rate limit."""
    p.add_argument(
        "--bind-workers",
        type=integer(0),
        default=d.writer.bind_workers,
        help="binds in flight at once at most (workers start only as binds wait; >= 0, 0: one)",
    )
    p.add_argument(
        "--bind-workers-first",
        type=integer(0),
        default=None,
        help="bind workers started as soon as binds wait; more (up to --bind-workers) only while more "
        f"than --bind-backlog binds wait (>= 0, 0: one; at most --bind-workers; default "
        f"{d.writer.bind_workers_first}, or --bind-workers where that is fewer)",
    )
    p.add_argument(
        "--bind-backlog",
        type=integer(0),
        default=d.writer.bind_backlog,
        help="binds waiting past which bind workers beyond --bind-workers-first start (>= 0)",
    )
    p.add_argument(
        "--volume-bind-timeout",
        type=number(positive=True),
        default=d.writer.volume_bind_timeout,
        help="seconds a pod's claims of a WaitForFirstConsumer StorageClass may take to be bound (by the "
        "PersistentVolume controller and the provisioner) before its bind is given up and the pod placed "
        "again (> 0; kube-scheduler's bindTimeoutSeconds)",
    )
    p.add_argument(
        "--workers",
        type=integer(0),
        default=d.writer.workers,
        help="other API writes in flight at once (status, conditions, events, evictions; >= 0, 0: one)",
    )
    p.add_argument(
        "--qps",
        type=number(positive=False),
        default=d.writer.qps,
        help="client-side limit on API requests per second (>= 0; 0: none, the apiserver's flow control "
        "decides)",
    )
    p.add_argument(
        "--burst",
        type=integer(0),
        default=d.writer.burst,
        help="with --qps: requests saved up (>= 0; 0: 2 x qps)",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    s = Settings(kubeconfig=args.kubeconfig)
    s.session.period = args.period
    s.session.min_gap = args.min_gap
    s.session.volcano_check_every = args.volcano_check_every
    s.session.max_idle = args.max_idle
    s.session.thread_slice = args.thread_slice / 1000.0
    s.config.namespace, s.config.name, s.config.key = args.namespace, args.config_map, args.config_key
    s.http.host, s.http.port = args.metrics_host, args.metrics_port
    s.http.auth = args.http_auth
    s.webhook.port, s.webhook.host = args.webhook_port, args.webhook_host
    s.webhook.url_host, s.webhook.cert_dir = args.webhook_url_host, args.webhook_cert_dir
    s.webhook.fail_open = args.webhook_failure_policy == "Ignore"
    s.webhook.service = args.webhook_service
    s.webhook.cert_secret = args.webhook_cert_secret
    s.record_key_secret = args.record_key_secret
    s.lease.namespace, s.lease.name, s.lease.duration = args.namespace, args.lease_name, args.lease_duration
    s.lease.renew_every = min(s.lease.renew_every, max(0.5, args.lease_duration / 3))
    s.lease.enabled = not args.no_lease
    s.writer.workers, s.writer.qps, s.writer.burst = args.workers, args.qps, args.burst
    s.writer.bind_workers = args.bind_workers
    s.writer.bind_workers_first = args.bind_workers_first
    s.writer.bind_backlog = args.bind_backlog
    s.writer.volume_bind_timeout = args.volume_bind_timeout
    s.scheduler_names = parse_scheduler_names(args.scheduler_names)
    return s


def parse_scheduler_names(text: str) -> frozenset[str]:
    """``"volsched, volcano"`` -> {"volsched", "volcano"}; empty -> the default. A name no pod can give
    (the apiserver holds ``spec.schedulerName`` to a DNS subdomain) raises :class:`InputError` naming it."""
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    for name in sorted(names):
        validation.dns_subdomain(name, field="scheduler name")
    return names or DEFAULT_SCHEDULER_NAMES


def _scheduler_names(text: str) -> str:
    """``--scheduler-names``' type (its default from the environment too): a name no pod can give is
    refused at parse; it was taken, and the operator scheduled nothing for it, saying nothing."""
    try:
        parse_scheduler_names(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(f"{exc.message}: no pod can name it in spec.schedulerName") from None
    return text


#: The level names ``--log-level`` takes, as the refusal lists them.
_LEVELS = "CRITICAL, ERROR, WARNING, INFO, DEBUG, NOTSET"


def parse_log_levels(text: str) -> dict[str, int]:
    """``--log-level``: the root's level, then ``LOGGER=LEVEL`` pairs (an empty part is passed over). The
    root is keyed ``""`` (INFO when not given). A level name logging does not know raises ValueError,
    naming it: it was ignored, and the logger named kept a level the user had not asked for."""
    levels: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, level = part.rpartition("=")
        value = logging.getLevelName(level.strip().upper())
        if not isinstance(value, int):
            whose = f" for logger {name.strip()!r}" if name.strip() else ""
            raise ValueError(f"unknown level {level.strip()!r}{whose}: a level is one of {_LEVELS}")
        levels[name.strip()] = value
    levels.setdefault("", logging.INFO)
    return levels


def _log_levels(text: str) -> str:
    """``--log-level``'s type: refused at parse (its default from the environment too) as a number out of
    range is."""
    try:
        parse_log_levels(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
