"""The rescheduling plugin's default evictor: which pods no strategy may move, and how many may move.

As the descheduler's DefaultEvictor (its option names and defaults, read from the plugin's arguments):
DaemonSet pods, mirror and static pods, pods with node-local storage (``emptyDir``, ``hostPath``),
system-critical pods, pods already being deleted and bare pods (no controller) are protected unless an
option allows them; ``ignorePvcPods``, ``ignorePodsWithoutPDB``, ``priorityThreshold``, ``minReplicas``,
``minPodAge`` and a ``labelSelector`` protect more. A pod annotated
``descheduler.alpha.kubernetes.io/evict`` passes these checks whatever they say. ``nodeFit`` and
``nodeSelector`` judge a pod once a strategy picks it (another ready node must take it), and the
limits (``maxNoOfPodsToEvictPerNode``, ``...PerNamespace``, ``...Total``) count the picks of one answer.
Where volsched differs on purpose is written in ``docs/rescheduling.md``.

Parsing and pure checks only: the plugin supplies what they read of the session (:class:`Cluster`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from volsched.framework.plugin import Arguments
from volsched.model.constraintdecode import parse_selector
from volsched.model.errors import InputError
from volsched.model.selectors import LabelSelector, Requirement
from volsched.model.vocabulary import Task, TaskStatus
from volsched.records import dataclass

#: kube-scheduler's system-critical priority: a pod at or above it is system-critical, whatever its class.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
#: A pod with this annotation may be evicted whatever the evictor's checks say.
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"

#: A pod with this annotation is moved last among its equals (``noEvictionPolicy: Preferred``, the
#: default) or never (``Mandatory``).
NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
NO_EVICTION_POLICIES = ("Preferred", "Mandatory")

#: The per-node limit's names: the descheduler's policy field, and the spelling of its older flag.
PER_NODE_NAMES = ("maxNoOfPodsToEvictPerNode", "maxPodsToEvictPerNode")

#: The descheduler's pod protections: on by default (``podProtections.defaultDisabled`` turns them off)
#: and extra (``podProtections.extraEnabled`` turns them on).
DEFAULT_PROTECTIONS = ("PodsWithLocalStorage", "SystemCriticalPods", "FailedBarePods", "DaemonSetPods")
EXTRA_PROTECTIONS = ("PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")
#: The older boolean options, each turning one protection off (evict...) or on (ignore...).
LEGACY_FLAGS = {
    "evictLocalStoragePods": ("PodsWithLocalStorage", False),
    "evictDaemonSetPods": ("DaemonSetPods", False),
    "evictSystemCriticalPods": ("SystemCriticalPods", False),
    "evictFailedBarePods": ("FailedBarePods", False),
    "ignorePvcPods": ("PodsWithPVC", True),
    "ignorePodsWithoutPDB": ("PodsWithoutPDB", True),
}

_REQUIREMENT = re.compile(
    r"\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[-A-Za-z0-9_.]*)"
    r"|\s(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$"
)


def parse_selector_string(text: str, *, where: str) -> LabelSelector:
    """A label selector written as ``kubectl -l`` takes it (``a=b,c!=d,e in (x,y),f notin (z),g,!h``)."""
    reqs: list[Requirement] = []
    # Commas inside parentheses belong to a set: split on the others.
    parts = re.split(r",(?![^(]*\))", text)
    for part in parts:
        if not part.strip():
            raise InputError(f"{where}: empty requirement in {text!r}")
        m = _REQUIREMENT.fullmatch(part)
        if m is None or (m["neg"] and (m["op"] or m["setop"])):
            raise InputError(
                f"{where}: cannot read {part.strip()!r} as a requirement "
                "(key=value, key!=value, key in (a,b), key notin (a,b), key or !key)"
            )
        key = m["key"]
        if m["op"]:
            reqs.append(Requirement(key, "NotIn" if m["op"] == "!=" else "In", (m["value"],)))
        elif m["setop"]:
            values = tuple(sorted(v.strip() for v in m["values"].split(",") if v.strip()))
            if not values:
                raise InputError(f"{where}: {key} {m['setop']} () names no value")
            reqs.append(Requirement(key, "In" if m["setop"] == "in" else "NotIn", values))
        else:
            reqs.append(Requirement(key, "DoesNotExist" if m["neg"] else "Exists"))
    return LabelSelector(tuple(reqs))


def _nest(flat: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """A label selector from its flattened argument keys (``matchLabels.<key>``, ``matchExpressions``)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if key.startswith("matchLabels."):
            out.setdefault("matchLabels", {})[key.removeprefix("matchLabels.")] = value
        elif key in ("matchLabels", "matchExpressions"):
            out[key] = value or None
        else:
            raise InputError(f"{where}.{key}: unknown field; known: matchLabels, matchExpressions")
    return out


def _protections(args: Arguments, where: str) -> frozenset[str]:
    """The protections in force: the defaults, changed either by the older boolean options or by
    ``podProtections`` (``defaultDisabled``, ``extraEnabled``), never both, as in the descheduler."""
    legacy = {flag: args.boolean(flag, False) for flag in LEGACY_FLAGS}
    parts = dict(args.with_prefix("podProtections."))
    if args.raw("podProtections") not in (None, {}):
        raise InputError(f"{where} podProtections: expected a map with defaultDisabled and/or extraEnabled")
    out = set(DEFAULT_PROTECTIONS)
    if not parts:
        for flag, (protection, adds) in LEGACY_FLAGS.items():
            if legacy[flag]:
                (out.add if adds else out.discard)(protection)
        return frozenset(out)
    for key in parts:
        if key.startswith("config."):
            raise InputError(
                f"{where} podProtections.{key}: not supported (volsched does not read storage classes); "
                "PodsWithPVC protects every pod with a claim"
            )
        if key not in ("defaultDisabled", "extraEnabled"):
            raise InputError(
                f"{where} podProtections.{key}: unknown field; known: defaultDisabled, extraEnabled"
            )
    used = [flag for flag, on in legacy.items() if on]
    if used:
        raise InputError(
            f"{where} podProtections: not with the older options ({', '.join(used)}); give one form"
        )
    for key, known in (("defaultDisabled", DEFAULT_PROTECTIONS), ("extraEnabled", EXTRA_PROTECTIONS)):
        names = parts.get(key) or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputError(f"{where} podProtections.{key}: expected a list of protections, got {names!r}")
        bad = [n for n in names if n not in known]
        if bad:
            raise InputError(
                f"{where} podProtections.{key}: unknown {', '.join(bad)}; known: {', '.join(known)}"
            )
        if len(set(names)) != len(names):
            raise InputError(f"{where} podProtections.{key}: lists a protection twice")
        (out.difference_update if key == "defaultDisabled" else out.update)(names)
    return frozenset(out)


@dataclass(frozen=True)
class Cluster:
    """What the evictor's checks read of the session."""

    now: float
    #: Pods of the pod's controller (``namespace``, ``kind/name``) in the cluster, in any phase.
    replicas: Callable[[Task], int]
    #: Whether a PodDisruptionBudget selects the pod.
    covered: Callable[[Task], bool]
    #: A namespace's labels.
    namespace_labels: Callable[[str], Mapping[str, str]] = lambda _: {}


@dataclass(frozen=True)
class Evictor:
    """The options, parsed and checked at load."""

    #: The protections in force (names as :data:`DEFAULT_PROTECTIONS`, :data:`EXTRA_PROTECTIONS`).
    protections: frozenset[str] = frozenset(DEFAULT_PROTECTIONS)
    node_fit: bool = False
    priority_threshold: int | None = None
    min_replicas: int = 0
    min_pod_age: float | None = None
    #: The descheduler's ``labelSelector`` (matchLabels/matchExpressions); None: every pod.
    labels: LabelSelector | None = None
    node_selector: LabelSelector | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    #: The descheduler's ``namespaceLabelSelector``: only pods of namespaces it selects move.
    namespaces: LabelSelector | None = None
    #: ``noEvictionPolicy: Mandatory``: a pod annotated prefer-no-eviction never moves.
    no_eviction_mandatory: bool = False

    @classmethod
    def parse(cls, args: Arguments, *, label_selector: Mapping[str, Any] | None) -> Evictor:
        """From the rescheduling plugin's arguments; ``label_selector`` is its ``labelSelector`` when
        written as the descheduler writes one (matchLabels, matchExpressions)."""
        where = f"plugin {args.plugin}: argument"

        def count(key: str) -> int | None:
            if not args.has(key):
                args.raw(key)
                return None
            value = args.number(key, 0, minimum=0)
            if value != int(value):
                raise InputError(f"{where} {key}: expected a whole number, got {value:g}")
            return int(value)

        given = [k for k in PER_NODE_NAMES if args.has(k)]
        if len(given) > 1:
            raise InputError(f"{where} {given[1]}: the same limit as {given[0]}; give one of them")
        per_node = None
        for key in PER_NODE_NAMES:
            per_node = count(key) if per_node is None else per_node
        threshold: int | None = None
        value, name = args.raw("priorityThreshold.value"), args.raw("priorityThreshold.name")
        rest = [k for k, _ in args.with_prefix("priorityThreshold.") if k not in ("value", "name")]
        empty = args.raw("priorityThreshold")
        if rest or empty not in (None, {}):
            raise InputError(f"{where} priorityThreshold: expected a map with value (a priority)")
        if name is not None:
            raise InputError(
                f"{where} priorityThreshold.name: not supported (the scheduler's sessions see no "
                "PriorityClass objects); give priorityThreshold.value, the class's value"
            )
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) > SYSTEM_CRITICAL_PRIORITY:
                raise InputError(
                    f"{where} priorityThreshold.value: expected an integer priority <= "
                    f"{SYSTEM_CRITICAL_PRIORITY}, got {value!r}"
                )
            threshold = value
        min_age = None
        if args.has("minPodAge"):
            min_age = args.duration("minPodAge", 0.0, allow_zero=True)
        else:
            args.raw("minPodAge")
        node_selector = args.raw("nodeSelector")
        if any(True for _ in args.with_prefix("nodeSelector.")) or (
            node_selector is not None and not isinstance(node_selector, str)
        ):
            raise InputError(
                f"{where} nodeSelector: expected a label selector string like 'zone=a,disk!=hdd', "
                f"got {node_selector or 'a map'!r}"
            )
        replicas = count("minReplicas")
        policy = args.raw("noEvictionPolicy")
        if policy not in (None, "", *NO_EVICTION_POLICIES):
            raise InputError(
                f"{where} noEvictionPolicy: expected one of {', '.join(NO_EVICTION_POLICIES)}, got {policy!r}"
            )
        namespaces = dict(args.with_prefix("namespaceLabelSelector."))
        if args.raw("namespaceLabelSelector") not in (None, {}):
            raise InputError(f"{where} namespaceLabelSelector: expected matchLabels and/or matchExpressions")
        return cls(
            protections=_protections(args, where),
            node_fit=args.boolean("nodeFit", False),
            priority_threshold=threshold,
            min_replicas=replicas or 0,
            min_pod_age=min_age,
            labels=(
                None
                if label_selector is None
                else parse_selector(label_selector, where=f"{where} labelSelector")
            ),
            node_selector=(
                parse_selector_string(node_selector, where=f"{where} nodeSelector")
                if node_selector and node_selector.strip()
                else None
            ),
            max_per_node=per_node,
            max_per_namespace=count("maxNoOfPodsToEvictPerNamespace"),
            max_total=count("maxNoOfPodsToEvictTotal"),
            namespaces=(
                parse_selector(
                    _nest(namespaces, where=f"{where} namespaceLabelSelector"),
                    where=f"{where} namespaceLabelSelector",
                )
                if namespaces
                else None
            ),
            no_eviction_mandatory=policy == "Mandatory",
        )

    def protects(self, task: Task, cluster: Cluster) -> str | None:
        """Why no strategy may move ``task`` (None: it may move). Read in this order, as the
        descheduler's checks: the evict annotation first, then every protection."""
        if EVICT_ANNOTATION in task.annotations:
            return None
        rt = task.runtime
        # Only the kubelet's own mirror: a tenant may write the annotations (``kubernetes.io/config.mirror``,
        # ``kubernetes.io/config.source: file``) on its pods, not the controller reference to their Node.
        if task.kubelet_mirror:
            return "a mirror pod (its node's kubelet runs it as a static pod)"
        if self.no_eviction_mandatory and NO_EVICTION_ANNOTATION in task.annotations:
            return "annotated prefer-no-eviction, and noEvictionPolicy is Mandatory"
        if rt.deleting or task.status is TaskStatus.RELEASING:
            return "already being deleted"
        on = self.protections
        # A controller recreates the pod it evicts; a bare pod is lost, unless it failed anyway.
        if task.owner is None and ("FailedBarePods" in on or task.status is not TaskStatus.FAILED):
            return "no controller owns it"
        if "SystemCriticalPods" in on:
            if task.critical or task.priority >= SYSTEM_CRITICAL_PRIORITY:
                return "system-critical"
            if self.priority_threshold is not None and task.priority >= self.priority_threshold:
                return f"priority {task.priority} is not below priorityThreshold {self.priority_threshold}"
        if "PodsWithLocalStorage" in on and rt.local_storage:
            return "it has local storage (emptyDir or hostPath)"
        if "DaemonSetPods" in on and "DaemonSet" in rt.owner_kinds:
            return "a DaemonSet pod"
        if "PodsWithPVC" in on and task.claims:
            return "it mounts a PersistentVolumeClaim"
        if "PodsWithResourceClaims" in on and task.resource_claims:
            return "it claims devices (resourceClaims)"
        if "PodsWithoutPDB" in on and not cluster.covered(task):
            return "no PodDisruptionBudget covers it"
        if self.labels is not None and not self.labels.matches(task.labels):
            return "its labels do not match labelSelector"
        if self.namespaces is not None and not self.namespaces.matches(
            cluster.namespace_labels(task.namespace)
        ):
            return "its namespace's labels do not match namespaceLabelSelector"
        if self.min_replicas > 1 and len(rt.owner_kinds) == 1 and task.owner is not None:
            have = cluster.replicas(task)
            if have < self.min_replicas:
                return f"its owner has {have} pods, fewer than minReplicas {self.min_replicas}"
        if self.min_pod_age is not None and (
            not task.start_time or cluster.now - task.start_time < self.min_pod_age
        ):
            return f"started less than minPodAge {self.min_pod_age:g}s ago"
        return None
