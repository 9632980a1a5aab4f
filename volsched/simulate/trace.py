"""Workload traces for the time mode: one record per job, read from CSV, JSON Lines or YAML, checked
against ``trace.schema.json`` and volsched's own rules, and turned into a PodGroup and its pods when
the job arrives.

A record: ``submit`` (seconds from the replay's start, or a duration like ``1h30m``), ``queue``,
``namespace``, ``priority`` (or ``priorityClass``), ``pods``, ``minMember``, ``requests`` (per pod),
``duration`` (per pod), ``nodeSelector``, ``tolerations``, ``class`` (for the report) and
``onEviction``. In CSV, a column ``requests.<resource>`` or ``nodeSelector.<label>`` gives one entry of
the map, and ``tolerations`` is JSON. A bad record raises :class:`InputError` naming the file, the
line and the field. Parsing and building only: no clock, no cache.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from volsched.model import validation, yamlload
from volsched.model.errors import InputError
from volsched.model.resources import parse_amount
from volsched.model.scalars import duration_seconds
from volsched.model.vocabulary import API_GROUP, GROUP_ANNOTATION
from volsched.records import dataclass
from volsched.simulate.annotations import CLASS_ANNOTATION, DURATION_ANNOTATION, EVICTION_POLICY_ANNOTATION
from volsched.simulate.documents import Document, iso

#: File suffixes of each format.
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yaml": "yaml", ".yml": "yaml"}
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
    return f"trace-priority-{value}" if value >= 0 else f"trace-priority-minus-{-value}"


def priority_classes(jobs: Iterable[TraceJob]) -> list[dict[str, Any]]:
    """The PriorityClasses the jobs' ``priority`` values stand for."""
    values = sorted({j.priority for j in jobs if j.priority is not None})
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class_for(v)},
            "value": v,
        }
        for v in values
    ]


# --- reading ------------------------------------------------------------------------------------------


def load_trace(path: str | Path) -> list[TraceJob]:
    """The jobs of a trace file, by submit time (file order breaks ties); :class:`InputError` names the
    file, the line and the field of the first bad record."""
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise InputError(
            f"unknown trace format {path.suffix or '(no suffix)'!r}: use .csv, .jsonl or .yaml",
            source=str(path),
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    text = yamlload.decode_utf8(data, source=str(path))
    records = {"csv": _csv_records, "jsonl": _jsonl_records, "yaml": _yaml_records}[kind](text, str(path))
    return parse_records(records, source=str(path))


def parse_records(records: Iterable[tuple[int, Any]], *, source: str) -> list[TraceJob]:
    """Check and read ``(line, record)`` pairs (see :func:`load_trace`)."""
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


def _csv_records(text: str, source: str) -> Iterator[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        return
    for row in reader:
        line = reader.line_num
        if None in row:
            raise InputError(f"{source}: line {line}: more cells than the header has columns")
        record: dict[str, Any] = {}
        for column, cell in row.items():
            if cell is None or cell.strip() == "":
                continue
            cell = cell.strip()
            head, dot, rest = column.partition(".")
            if dot and head in ("requests", "nodeSelector"):
                record.setdefault(head, {})[rest] = cell
            elif column in ("pods", "minMember", "priority"):
                record[column] = _int_cell(cell)
            elif column in ("submit", "duration"):
                record[column] = _number_cell(cell)
            elif column == "tolerations":
                try:
                    record[column] = json.loads(cell)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{source}: line {line}: tolerations: not JSON ({exc.msg})") from None
            else:
                record[column] = cell
        yield line, record


def _int_cell(cell: str) -> int | str:
    try:
        return int(cell)
    except ValueError:
        return cell  # the schema says what is wrong with it


def _number_cell(cell: str) -> float | str:
    try:
        return float(cell)
    except ValueError:
        return cell  # a duration like 10m


def _jsonl_records(text: str, source: str) -> Iterator[tuple[int, Any]]:
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            yield line, json.loads(content)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: line {line}: not JSON ({exc.msg}, column {exc.colno})") from None


def _yaml_records(text: str, source: str) -> Iterator[tuple[int, Any]]:
    data = yamlload.load_one(text, source=source)
    if data is None:
        return
    if isinstance(data, dict) and isinstance(data.get("jobs"), list):
        data = data["jobs"]
    if not isinstance(data, list):
        raise InputError("a YAML trace is a list of job records (or a map with a list jobs)", source=source)
    lines = _yaml_lines(text, len(data))
    for i, record in enumerate(data):
        yield lines[i] if i < len(lines) else 0, record


def _yaml_lines(text: str, count: int) -> list[int]:
    """The line each item of the trace's list starts on (composed only: the bounded load passed)."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "jobs":
                node = value
    if not isinstance(node, yaml.SequenceNode):
        return [0] * count
    return [item.start_mark.line + 1 for item in node.value]


def _fail(where: str, field_name: str, message: str) -> InputError:
    return InputError(f"{where}: {field_name}: {message}")


def _job(record: Any, *, number: int, where: str) -> TraceJob:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a job record (a map), got {type(record).__name__}")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(record))
    if error is not None:
        path = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else "(record)"
            raise _fail(where, missing, "missing (a record needs submit, queue, requests and duration)")
        if error.validator == "additionalProperties" and not path:
            known = schema()["properties"]
            unknown = sorted(k for k in record if k not in known)
            raise _fail(
                where,
                unknown[0] if unknown else "(record)",
                f"unknown field (known fields: {', '.join(sorted(known))})",
            )
        raise _fail(where, path or "(record)", error.message)
    submit = _seconds(record["submit"], where=where, field_name="submit")
    if submit > MAX_SUBMIT:  # (a duration; a number past it the schema refused)
        raise _fail(
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
        raise _fail(where, "minMember", f"{min_member} is more than its {pods} pod(s)")
    if "priority" in record and "priorityClass" in record:
        raise _fail(where, "priorityClass", "give priority or priorityClass, not both")
    selector = record.get("nodeSelector") or {}
    validation.label_map(selector, field=f"{where}: nodeSelector")
    tolerations = record.get("tolerations") or []
    for i, toleration in enumerate(tolerations):
        extra = set(toleration) - _TOLERATION_KEYS
        if extra:
            raise _fail(
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
        raise _fail(
            where, field_name, f"expected seconds or a duration like 90s, 10m or 1h30m, got {value!r}"
        )
    return seconds


# --- writing and building ---------------------------------------------------------------------------------


def dump_jsonl(jobs: Sequence[TraceJob]) -> str:
    return "".join(json.dumps(j.record(), separators=(",", ":")) + "\n" for j in jobs)


def job_documents(job: TraceJob, *, at: float, scheduler_name: str = "volsched") -> list[Document]:
    """The PodGroup and pods of ``job``, created at ``at`` (Unix seconds)."""
    created = iso(at)
    meta = {"namespace": job.namespace, "creationTimestamp": created}
    priority_class = job.priority_class_name()
    group_spec: dict[str, Any] = {"minMember": job.min_member, "queue": job.queue}
    if priority_class:
        group_spec["priorityClassName"] = priority_class
    docs = [
        Document(
            job.where,
            {
                "apiVersion": f"{API_GROUP}/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": job.name, **meta},
                "spec": group_spec,
            },
        )
    ]
    annotations = {GROUP_ANNOTATION: job.name, DURATION_ANNOTATION: repr(float(job.duration))}
    if job.job_class:
        annotations[CLASS_ANNOTATION] = job.job_class
    if job.on_eviction:
        annotations[EVICTION_POLICY_ANNOTATION] = job.on_eviction
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [{"name": "main", "image": "trace", "resources": {"requests": dict(job.requests)}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if job.node_selector:
        spec["nodeSelector"] = dict(job.node_selector)
    if job.tolerations:
        spec["tolerations"] = [dict(t) for t in job.tolerations]
    for i in range(job.pods):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{job.name}-{i}", **meta, "annotations": annotations},
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        docs.append(Document(job.where, pod))
    return docs


def check_references(
    jobs: Sequence[TraceJob], *, queues: Iterable[str], priority_classes: Iterable[str]
) -> None:
    """Every job's queue and PriorityClass is in the cluster's files (checked before the replay runs,
    not when the job arrives)."""
    known_queues, known_classes = set(queues), set(priority_classes)
    for job in jobs:
        if job.queue not in known_queues:
            raise _fail(
                job.where,
                "queue",
                f"queue {job.queue!r} is not in the input (queues: {', '.join(sorted(known_queues))})",
            )
        if job.priority_class is not None and job.priority_class not in known_classes:
            raise _fail(
                job.where, "priorityClass", f"PriorityClass {job.priority_class!r} is not in the input"
            )


def dump_csv(jobs: Sequence[TraceJob]) -> str:
    """The jobs as CSV: maps flattened to ``requests.<resource>`` and ``nodeSelector.<label>`` columns,
    tolerations as JSON."""
    records = [j.record() for j in jobs]
    columns: dict[str, None] = {}
    rows = []
    for record in records:
        row: dict[str, Any] = {}
        for key, value in record.items():
            if key in ("requests", "nodeSelector"):
                for inner, amount in value.items():
                    row[f"{key}.{inner}"] = amount
            elif key == "tolerations":
                row[key] = json.dumps(value, separators=(",", ":"))
            else:
                row[key] = value
        columns.update(dict.fromkeys(row))
        rows.append(row)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def dump_yaml(jobs: Sequence[TraceJob]) -> str:
    return yaml.safe_dump([j.record() for j in jobs], sort_keys=False, default_flow_style=None)


DUMPERS = {"jsonl": dump_jsonl, "csv": dump_csv, "yaml": dump_yaml}
