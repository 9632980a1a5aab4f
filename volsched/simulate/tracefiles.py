"""A trace's files: CSV, JSON Lines and YAML read into records (each with the line it starts on) and
written from them. In CSV, a column ``requests.<resource>`` or ``nodeSelector.<label>`` gives one entry
of the map, and ``tolerations`` is JSON. A file that cannot be read, or a line that is not of its format,
raises :class:`InputError` naming the file and the line; what a record must say is
:mod:`volsched.simulate.trace`'s.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from volsched.model import yamlload
from volsched.model.errors import InputError
from volsched.simulate.trace import TraceJob, parse_records

#: File suffixes of each format.
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yaml": "yaml", ".yml": "yaml"}


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
    # (a byte-order mark, as a spreadsheet writes one before a CSV's header, is not part of the text)
    text = yamlload.decode_utf8(data, source=str(path)).removeprefix("\ufeff")
    records = {"csv": _csv_records, "jsonl": _jsonl_records, "yaml": _yaml_records}[kind](text, str(path))
    return parse_records(records, source=str(path))


# --- reading ------------------------------------------------------------------------------------------


def _csv_records(text: str, source: str) -> Iterator[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        yield from _csv_rows(reader, source)
    except csv.Error as exc:  # (a cell past the module's field limit, a NUL byte...)
        raise InputError(f"{source}: line {reader.line_num + 1}: not CSV ({exc})") from None


def _csv_rows(reader: csv.DictReader[str], source: str) -> Iterator[tuple[int, Any]]:
    if not reader.fieldnames:
        return
    twice = sorted({c for c in reader.fieldnames if reader.fieldnames.count(c) > 1})
    if twice:  # (the row's map would keep the last cell only)
        raise InputError(f"{source}: line 1: column {twice[0]} appears more than once in the header")
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
                except RecursionError:
                    raise InputError(f"{source}: line {line}: tolerations: not JSON ({_TOO_DEEP})") from None
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


#: Why a JSON value nested past what the parser recurses into is refused (it ended in a traceback).
_TOO_DEEP = "nested too deeply"


def _jsonl_records(text: str, source: str) -> Iterator[tuple[int, Any]]:
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            record = json.loads(content)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: line {line}: not JSON ({exc.msg}, column {exc.colno})") from None
        except RecursionError:
            raise InputError(f"{source}: line {line}: not JSON ({_TOO_DEEP})") from None
        yield line, record


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


# --- writing ------------------------------------------------------------------------------------------


def dump_jsonl(jobs: Sequence[TraceJob]) -> str:
    """The jobs as JSON Lines, one record a line."""
    return "".join(json.dumps(j.record(), separators=(",", ":")) + "\n" for j in jobs)


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
    """The jobs as a YAML list of records."""
    return yaml.safe_dump([j.record() for j in jobs], sort_keys=False, default_flow_style=None)


#: The writer of each format (``volsched trace generate --format``).
DUMPERS = {"jsonl": dump_jsonl, "csv": dump_csv, "yaml": dump_yaml}
