"""Workload traces for the time mode: what a trace's record is, checked against ``trace.schema.json``
and volsched's own rules.

A record: ``submit`` (seconds from the replay's start, or a duration like ``1h30m``), ``queue``,
``namespace``, ``priority`` (or ``priorityClass``), ``pods``, ``minMember``, ``requests`` (per pod),
``duration`` (per pod), ``nodeSelector``, ``tolerations``, ``class`` (for the report) and
``onEviction``. A bad record raises :class:`InputError` naming the file, the line and the field.
Checking only: the files a trace is read from and written to are :mod:`volsched.simulate.tracefiles`,
the objects its jobs become :mod:`volsched.simulate.traceobjects`; no clock, no cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import field
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from volsched.model import validation
from volsched.model.errors import InputError
from volsched.model.resources import parse_amount
from volsched.model.scalars import duration_seconds
from volsched.records import dataclass

_TOLERATION_KEYS = frozenset({"key", "operator", "value", "effect", "tolerationSeconds"})
#: The latest ``submit`` (seconds from the replay's start): 100 years, the schema's maximum. A job's objects
#: are stamped with its submit time, and a time past the year 9999 is none.
MAX_SUBMIT = 3_153_600_000


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of one record (``volsched/simulate/trace.schema.json``)."""
    text = (resources.files("volsched.simulate") / "trace.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema())


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace (times in seconds from the replay's start)."""

    name: str
    submit: float
    queue: str
    requests: Mapping[str, str | float]
    duration: float
    namespace: str = "default"
    pods: int = 1
    min_member: int = 1
    priority: int | None = None
    priority_class: str | None = None
    job_class: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    on_eviction: str | None = None
    #: Where it was read: "file: line N" (for errors found later).
    where: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def priority_class_name(self) -> str | None:
        """The PriorityClass its pods and PodGroup name: its own, or the one made for its priority."""
        if self.priority is not None:
            return priority_class_for(self.priority)
        return self.priority_class

    def record(self) -> dict[str, Any]:
        """The record as a trace file holds it (defaults left out)."""
        out: dict[str, Any] = {"name": self.name, "submit": self.submit, "queue": self.queue}
        if self.namespace != "default":
            out["namespace"] = self.namespace
        if self.job_class is not None:
            out["class"] = self.job_class
        if self.priority is not None:
            out["priority"] = self.priority
        if self.priority_class is not None:
            out["priorityClass"] = self.priority_class
        out["pods"] = self.pods
        out["minMember"] = self.min_member
        out["requests"] = dict(self.requests)
        out["duration"] = self.duration
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        if self.on_eviction is not None:
            out["onEviction"] = self.on_eviction
        return out


def priority_class_for(value: int) -> str:
    """The name of the PriorityClass made for a record's ``priority``."""
    return f"trace-priority-{value}" if value >= 0 else f"trace-priority-minus-{-value}"


def parse_records(records: Iterable[tuple[int, Any]], *, source: str) -> list[TraceJob]:
    """Check and read ``(line, record)`` pairs (a file's, from :func:`volsched.simulate.tracefiles.load_trace`):
    the jobs by submit time (file order breaks ties); :class:`InputError` names the line and the field of
    the first bad record."""
    jobs: list[TraceJob] = []
    names: dict[str, int] = {}
    for number, (line, record) in enumerate(records, start=1):
        job = _job(record, number=number, where=f"{source}: line {line}")
        if job.key in names:
            raise InputError(
                f"{source}: line {line}: name: job {job.key} is already on line {names[job.key]}"
            )
        names[job.key] = line
        jobs.append(job)
    jobs.sort(key=lambda j: j.submit)  # stable: file order breaks ties
    return jobs


def field_error(where: str, field_name: str, message: str) -> InputError:
    """The error for one field of the record read at ``where``."""
    return InputError(f"{where}: {field_name}: {message}")


def _job(record: Any, *, number: int, where: str) -> TraceJob:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a job record (a map), got {type(record).__name__}")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(record))
    if error is not None:
        path = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else "(record)"
            raise field_error(where, missing, "missing (a record needs submit, queue, requests and duration)")
        if error.validator == "additionalProperties" and not path:
            known = schema()["properties"]
            unknown = sorted(k for k in record if k not in known)
            raise field_error(
                where,
                unknown[0] if unknown else "(record)",
                f"unknown field (known fields: {', '.join(sorted(known))})",
            )
        raise field_error(where, path or "(record)", error.message)
    submit = _seconds(record["submit"], where=where, field_name="submit")
    if submit > MAX_SUBMIT:  # (a duration; a number past it the schema refused)
        raise field_error(
            where,
            "submit",
            f"{record['submit']!r} is past {MAX_SUBMIT} seconds (100 years) from the replay's start",
        )
    duration = _seconds(record["duration"], where=where, field_name="duration")
    for resource, amount in record["requests"].items():
        parse_amount(amount, where=f"{where}: requests.{resource}")
    pods = int(record.get("pods", 1))
    min_member = int(record.get("minMember", pods))
    if min_member > pods:
        raise field_error(where, "minMember", f"{min_member} is more than its {pods} pod(s)")
    if "priority" in record and "priorityClass" in record:
        raise field_error(where, "priorityClass", "give priority or priorityClass, not both")
    selector = record.get("nodeSelector") or {}
    validation.label_map(selector, field=f"{where}: nodeSelector")
    tolerations = record.get("tolerations") or []
    for i, toleration in enumerate(tolerations):
        extra = set(toleration) - _TOLERATION_KEYS
        if extra:
            raise field_error(
                where,
                f"tolerations[{i}]",
                f"unknown field(s) {', '.join(sorted(extra))}; known: {', '.join(sorted(_TOLERATION_KEYS))}",
            )
    return TraceJob(
        name=record.get("name") or f"job-{number}",
        submit=submit,
        queue=record["queue"],
        requests=dict(record["requests"]),
        duration=duration,
        namespace=record.get("namespace") or "default",
        pods=pods,
        min_member=min_member,
        priority=record.get("priority"),
        priority_class=record.get("priorityClass"),
        job_class=record.get("class"),
        node_selector=dict(selector),
        tolerations=tuple(tolerations),
        on_eviction=record.get("onEviction"),
        where=where,
    )


def _seconds(value: Any, *, where: str, field_name: str) -> float:
    seconds = duration_seconds(value)
    if seconds is None or seconds < 0:
        raise field_error(
            where, field_name, f"expected seconds or a duration like 90s, 10m or 1h30m, got {value!r}"
        )
    return seconds
