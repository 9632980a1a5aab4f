"""``volsched simulate --replay --compare OTHER``: the same workload replayed twice, as given and with one
change, and the differences side by side.

The change is a scheduler config (a file with ``actions``/``tiers``: it replaces the config) or
Kubernetes objects (files of ``kind``-ed objects: each replaces the input's object of the same kind,
namespace and name, or is added), e.g. a Queue with a new weight. Replays are deterministic and a trace
is data, so both see exactly the same arrivals. Pure: documents and reports in, a document out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volsched.model import yamlload
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.simulate.documents import Document, load_documents


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = meta_of(obj)
    return (str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))


def is_scheduler_config(path: str | Path) -> bool:
    """Whether ``path`` holds a scheduler config (``actions``/``tiers``) rather than Kubernetes objects."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    docs = [d for d in yamlload.load_all(data, source=str(path)) if d is not None]
    if len(docs) == 1 and isinstance(docs[0], dict) and "kind" not in docs[0]:
        if {"actions", "tiers"} & set(docs[0]):
            return True
        raise InputError(
            "--compare takes a scheduler config (actions, tiers) or Kubernetes objects (with kind)",
            source=str(path),
        )
    return False


def override(documents: Sequence[Document], path: str | Path) -> list[Document]:
    """The input with each object of ``path`` in place of the one of the same kind, namespace and name
    (or added)."""
    changes = load_documents([path])
    by_key = {_key(d.obj): d for d in changes}
    out = [by_key.pop(_key(d.obj), d) for d in documents]
    return out + [d for d in changes if _key(d.obj) in by_key]


#: The figures the comparison sets side by side, per queue: (name, where in a report group).
FIGURES = (
    ("waitP50", ("wait", "p50")),
    ("waitP95", ("wait", "p95")),
    ("waitMax", ("wait", "max")),
    ("completionP50", ("completion", "p50")),
    ("slowdownMean", ("slowdown", "mean")),
)


def _figure(group: Mapping[str, Any] | None, path: tuple[str, str]) -> float | None:
    if group is None:
        return None
    value = group[path[0]][path[1]]
    return None if value is None else float(value)


def diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Per queue (and ``all``), each figure of ``FIGURES`` in both reports and B minus A."""
    out: dict[str, Any] = {}
    groups = [("all", a["all"], b["all"])] + [
        (q, a["queues"].get(q), b["queues"].get(q)) for q in sorted(set(a["queues"]) | set(b["queues"]))
    ]
    for name, ga, gb in groups:
        row: dict[str, Any] = {}
        for figure, path in FIGURES:
            va, vb = _figure(ga, path), _figure(gb, path)
            row[figure] = {
                "a": va,
                "b": vb,
                "change": None if va is None or vb is None else round(vb - va, 3),
            }
        row["waitingAtEnd"] = {"a": (ga or {}).get("waiting"), "b": (gb or {}).get("waiting")}
        out[name] = row
    return out


def comparison_json(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The ``-o json`` of a comparison: both runs' documents under their labels, and the differences."""
    (la, a), (lb, b) = runs
    return {"a": {"label": la, **a}, "b": {"label": lb, **b}, "diff": diff(a["report"], b["report"])}
