"""Node-level matching: a pod's tolerations against a node's taints, its node selector, and node selector
terms (required node affinity, a device's node terms) against a node's name and labels, as kube-scheduler
reads them.

Pure functions over raw terms and anything with a ``name`` and ``labels`` (a :class:`NodeSpec`); below the
vocabulary so that devices and the scheduler's predicates share them. Masks over all nodes for a task are
:func:`volsched.model.constraints.node_placement_masks`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from volsched.model.validation import label_key_problem, label_value_ok

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
#: The taint effects that keep a pod that does not tolerate them off a node (PreferNoSchedule only scores).
HARD_EFFECTS = ("NoSchedule", "NoExecute")


class Labelled(Protocol):
    """What node matching reads of a node."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...


#: What Go's strconv.ParseInt takes in base 10: an optional sign and digits.
_INTEGER = re.compile(r"[+-]?[0-9]+")


def tolerates(tolerations: Sequence[Any], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for tol in tolerations:
        if not isinstance(tol, Mapping):
            continue
        t_effect = tol.get("effect") or ""
        if t_effect and t_effect != effect:
            continue
        op = tol.get("operator") or "Equal"
        t_key = tol.get("key") or ""
        if not t_key:
            if op == "Exists":
                return True
            continue
        if t_key != key:
            continue
        if op == "Exists" or (op == "Equal" and str(tol.get("value") or "") == value):
            return True
        if op in ("Lt", "Gt") and _compares(str(tol.get("value") or ""), value, less=op == "Lt"):
            return True
    return False


def _compares(mine: str, theirs: str, *, less: bool) -> bool:
    """Kubernetes' numeric toleration operators (1.35, ``TaintTolerationComparisonOperators``): the
    toleration's value below (``Lt``) or above (``Gt``) the taint's, both 64-bit integers; a value that
    is not one matches nothing (as does an operator Kubernetes does not know)."""
    try:
        a, b = _int64(mine), _int64(theirs)
    except ValueError:
        return False
    return a < b if less else a > b


def _int64(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError(text)
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(text)
    return value


def _match_expression(spec: Labelled, expr: Mapping[str, Any], *, field: bool) -> bool:
    key = expr["key"]
    op = expr["operator"]
    values = [str(v) for v in expr.get("values") or []]
    if field:
        present, value = (True, spec.name) if key == "metadata.name" else (False, "")
    else:
        present, value = key in spec.labels, spec.labels.get(key, "")
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present or len(values) != 1:
        return False
    try:
        left, right = int(value), int(values[0])
    except ValueError:
        return False
    return left > right if op == "Gt" else left < right


#: Gt and Lt compare whole numbers, written as Go's strconv.ParseInt reads them (a sign, then digits).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


def _requirement_parses(expr: Mapping[str, Any], *, field: bool) -> bool:
    """Whether Kubernetes can read one expression of a node selector term (``labels.NewRequirement``
    for a label, a one-value ``In``/``NotIn`` for a field). The API server stores a pod's node affinity
    without checking its label values; kube-scheduler then matches a term it cannot read with no node."""
    op = expr.get("operator")
    values = expr.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return False
    if field:
        return op in ("In", "NotIn") and len(values) == 1
    key = expr.get("key")
    if not isinstance(key, str) or label_key_problem(key) is not None:
        return False
    if op in ("In", "NotIn"):
        if not values:
            return False
    elif op in ("Exists", "DoesNotExist"):
        if values:
            return False
    elif op in ("Gt", "Lt"):
        if len(values) != 1 or not _INTEGER.fullmatch(values[0]) or not -_INT64 <= int(values[0]) < _INT64:
            return False
    else:
        return False
    return all(label_value_ok(v) for v in values)


def node_term_parses(term: Mapping[str, Any]) -> bool:
    """Every expression and field of a node selector term is one Kubernetes can read."""
    return all(_requirement_parses(e, field=False) for e in term.get("matchExpressions") or []) and all(
        _requirement_parses(e, field=True) for e in term.get("matchFields") or []
    )


def matches_node_selector(spec: Labelled, selector: Mapping[str, str]) -> bool:
    """A pod's ``nodeSelector``: the node has every label with the value given (an empty one matches)."""
    labels = spec.labels
    return all(labels.get(k) == v for k, v in selector.items())


def matches_node_term(spec: Labelled, term: Mapping[str, Any]) -> bool:
    """One node selector term: every expression and field matches; an empty term, or one with an
    expression Kubernetes cannot read (a value that is no label value, ``NotIn`` of nothing, ``Exists``
    with values, ``Gt`` of a word, a field compared with two values...), matches nothing."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not node_term_parses(term):
        return False
    return all(_match_expression(spec, e, field=False) for e in exprs) and all(
        _match_expression(spec, e, field=True) for e in fields
    )


def matches_affinity(spec: Labelled, terms: Sequence[Any]) -> bool:
    """Required node affinity: any term matches; inside a term every expression matches."""
    if not terms:
        return True
    return any(matches_node_term(spec, term) for term in terms)
