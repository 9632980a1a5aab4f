"""Reading a pod's placement constraints from its raw spec: ``spec.affinity.podAffinity``/``podAntiAffinity``
and ``spec.topologySpreadConstraints`` as Kubernetes defines them, into :mod:`volsched.model.selectors`' types.

A nil ``labelSelector`` matches no pod, an empty one every pod; a term with neither ``namespaces`` nor
``namespaceSelector`` means the pod's own namespace, an empty ``namespaceSelector`` every namespace;
``matchLabelKeys``/``mismatchLabelKeys`` are merged into the selector as ``key in (value)`` /
``key notin (value)`` with the pod's own label values. Bad input raises :class:`InputError` naming the field.
Part of decoding (:mod:`volsched.model.decode` calls it); no matching or counting happens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.model.errors import InputError
from volsched.model.selectors import (
    AffinityTerm,
    LabelSelector,
    PodConstraints,
    Requirement,
    SpreadConstraint,
    requirement_order,
)

_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def parse_selector(raw: Any, *, where: str) -> LabelSelector | None:
    """``matchLabels`` + ``matchExpressions``; None for a nil selector (which matches nothing)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: must be a map")
    reqs: set[Requirement] = set()
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise InputError(f"{where}.matchLabels: must be a map of strings")
    for k, v in labels.items():
        reqs.add(Requirement(str(k), "In", (str(v),)))
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise InputError(f"{where}.matchExpressions: must be a list")
    for i, e in enumerate(exprs):
        at = f"{where}.matchExpressions[{i}]"
        if not isinstance(e, Mapping) or not e.get("key"):
            raise InputError(f"{at}: needs key and operator")
        op = e.get("operator")
        if op not in _SELECTOR_OPS:
            raise InputError(f"{at}.operator: {op!r} is not one of {', '.join(_SELECTOR_OPS)}")
        values = e.get("values") or []
        if not isinstance(values, list):
            raise InputError(f"{at}.values: must be a list")
        if op in ("In", "NotIn") and not values:
            raise InputError(f"{at}.values: must not be empty for operator {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise InputError(f"{at}.values: must be empty for operator {op}")
        reqs.add(Requirement(str(e["key"]), str(op), tuple(sorted(str(v) for v in values))))
    return LabelSelector(tuple(sorted(reqs, key=requirement_order)))


def _merge_label_keys(
    selector: LabelSelector | None, raw: Mapping[str, Any], labels: Mapping[str, str], *, where: str
) -> LabelSelector | None:
    extra: list[Requirement] = []
    for field_name, op in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        keys = raw.get(field_name) or []
        if not isinstance(keys, list):
            raise InputError(f"{where}.{field_name}: must be a list of label keys")
        extra.extend(Requirement(str(k), op, (labels[str(k)],)) for k in keys if str(k) in labels)
    if selector is None or not extra:
        return selector
    return selector.merged(extra)


def _term(raw: Any, *, namespace: str, labels: Mapping[str, str], where: str) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: must be a map")
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.topologyKey: required (a node label key)")
    selector = parse_selector(raw.get("labelSelector"), where=f"{where}.labelSelector")
    selector = _merge_label_keys(selector, raw, labels, where=where)
    names = raw.get("namespaces") or []
    if not isinstance(names, list):
        raise InputError(f"{where}.namespaces: must be a list")
    ns_selector = parse_selector(raw.get("namespaceSelector"), where=f"{where}.namespaceSelector")
    namespaces = frozenset(str(n) for n in names)
    if not namespaces and ns_selector is None:
        namespaces = frozenset({namespace})
    return AffinityTerm(selector, key, namespaces, ns_selector)


def _terms(
    block: Mapping[str, Any], *, namespace: str, labels: Mapping[str, str], where: str
) -> tuple[tuple[AffinityTerm, ...], tuple[tuple[AffinityTerm, int], ...]]:
    req_where = f"{where}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _term(t, namespace=namespace, labels=labels, where=f"{req_where}[{i}]")
        for i, t in enumerate(
            _as_list(block.get("requiredDuringSchedulingIgnoredDuringExecution"), req_where)
        )
    )
    pref_where = f"{where}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred: list[tuple[AffinityTerm, int]] = []
    for i, p in enumerate(_as_list(block.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_where)):
        at = f"{pref_where}[{i}]"
        if not isinstance(p, Mapping):
            raise InputError(f"{at}: must be a map")
        weight = p.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InputError(f"{at}.weight: expected an integer 1..100, got {weight!r}")
        preferred.append(
            (
                _term(
                    p.get("podAffinityTerm"),
                    namespace=namespace,
                    labels=labels,
                    where=f"{at}.podAffinityTerm",
                ),
                weight,
            )
        )
    return required, tuple(preferred)


def _as_list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: must be a list")
    return value


def _spread(raw: Any, *, namespace: str, labels: Mapping[str, str], where: str) -> SpreadConstraint:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: must be a map")
    skew = raw.get("maxSkew")
    if isinstance(skew, bool) or not isinstance(skew, int) or skew < 1:
        raise InputError(f"{where}.maxSkew: expected an integer >= 1, got {skew!r}")
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.topologyKey: required (a node label key)")
    when = raw.get("whenUnsatisfiable")
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise InputError(f"{where}.whenUnsatisfiable: expected DoNotSchedule or ScheduleAnyway, got {when!r}")
    min_domains = raw.get("minDomains")
    if min_domains is not None:
        if isinstance(min_domains, bool) or not isinstance(min_domains, int) or min_domains < 1:
            raise InputError(f"{where}.minDomains: expected an integer >= 1, got {min_domains!r}")
        if when != "DoNotSchedule":
            raise InputError(f"{where}.minDomains: only allowed with whenUnsatisfiable DoNotSchedule")
    policies: dict[str, bool] = {}
    for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
        value = raw.get(name) or default
        if value not in ("Honor", "Ignore"):
            raise InputError(f"{where}.{name}: expected Honor or Ignore, got {value!r}")
        policies[name] = value == "Honor"
    selector = parse_selector(raw.get("labelSelector"), where=f"{where}.labelSelector")
    selector = _merge_label_keys(selector, {"matchLabelKeys": raw.get("matchLabelKeys")}, labels, where=where)
    return SpreadConstraint(
        max_skew=skew,
        topology_key=key,
        hard=when == "DoNotSchedule",
        selector=selector,
        namespace=namespace,
        min_domains=min_domains,
        honor_node_affinity=policies["nodeAffinityPolicy"],
        honor_taints=policies["nodeTaintsPolicy"],
    )


def parse_pod_constraints(
    spec: Mapping[str, Any], *, namespace: str, labels: Mapping[str, str], where: str
) -> PodConstraints | None:
    """The pod-level constraints of a pod spec, or None when it has none."""
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, Mapping):
        raise InputError(f"{where}: spec.affinity must be a map")
    out: dict[str, Any] = {}
    preferred: list[tuple[AffinityTerm, int]] = []
    for name, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
        block = affinity.get(name)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise InputError(f"{where}: spec.affinity.{name} must be a map")
        required, pref = _terms(
            block, namespace=namespace, labels=labels, where=f"{where}: spec.affinity.{name}"
        )
        out["affinity" if sign > 0 else "anti_affinity"] = required
        preferred.extend((t, sign * w) for t, w in pref)
    spread_where = f"{where}: spec.topologySpreadConstraints"
    spread = tuple(
        _spread(c, namespace=namespace, labels=labels, where=f"{spread_where}[{i}]")
        for i, c in enumerate(_as_list(spec.get("topologySpreadConstraints"), spread_where))
    )
    result = PodConstraints(
        affinity=out.get("affinity", ()),
        anti_affinity=out.get("anti_affinity", ()),
        preferred=tuple(preferred),
        spread=spread,
    )
    return result if result else None
