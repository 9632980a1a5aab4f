"""The simulator's input: Kubernetes objects read from YAML files, and the simulated clock they start on.

Files are read with the bounded loader (``volsched.model.yamlload``); a multi-document file or a List
gives one :class:`Document` per object, each remembering where it came from for error messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from volsched.model import yamlload
from volsched.model.errors import InputError
from volsched.model.scalars import LATEST_RFC3339, rfc3339
from volsched.records import dataclass

#: Simulated clock start for objects without a creationTimestamp (input order decides ties).
EPOCH = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
#: The latest instant an object's time (a creationTimestamp, a startTime: RFC 3339, years up to 9999) can
#: say: the simulated clock never passes it (see ``volsched.simulate.replay``).
LATEST = LATEST_RFC3339


@dataclass
class Document:
    """One object of an input file, with where it came from."""

    source: str  # "file: document N"
    obj: dict[str, Any]


def load_documents(paths: Sequence[str | Path]) -> list[Document]:
    """The objects of YAML files (multi-document, or a List), read with the bounded loader. An object
    whose ``kind`` is missing or not a string, or whose ``apiVersion`` is not a string, is an error naming
    the file, the document, the line and the field."""
    docs: list[Document] = []
    for path in paths:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
        for i, (doc, node) in enumerate(yamlload.load_all_nodes(data, source=str(path)), start=1):
            if doc is None:
                continue
            source = f"{path}: document {i}"
            if not isinstance(doc, dict):
                raise InputError("expected a Kubernetes object (a map with kind)", source=source)
            if "kind" not in doc and ("actions" in doc or "tiers" in doc):
                raise InputError(
                    "this is a scheduler config (actions, tiers), not a Kubernetes object: pass it with "
                    f"--config {path}, not -f",
                    source=source,
                )
            _check_type_fields(doc, node, [], source=source)
            if doc["kind"] == "List" or doc["kind"].endswith("List"):
                items = doc.get("items")
                if not isinstance(items, list):
                    raise InputError("a List needs a list field items", source=source)
                for j, item in enumerate(items):
                    if not isinstance(item, dict):
                        raise InputError(f"items[{j}] is not an object", source=source)
                    _check_type_fields(item, node, ["items", j], source=source)
                    docs.append(Document(f"{source}, items[{j}]", item))
            else:
                docs.append(Document(source, doc))
    return docs


def _check_type_fields(obj: dict[str, Any], node: Any, path: list[str | int], *, source: str) -> None:
    """``obj`` (at ``path`` in the document ``node``) has a string ``kind`` and, if any, ``apiVersion``."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    for field, required in (("kind", True), ("apiVersion", False)):
        value = obj.get(field)
        if (isinstance(value, str) and value) or (value is None and not required):
            continue
        line = yamlload.line_of(node, [*path, field] if field in obj else path)
        at = f"line {line}: " if line is not None else ""
        name = f"{where}.{field}" if where else field
        if field not in obj:
            raise InputError(f"{at}missing field {name}", source=source)
        raise InputError(f"{at}{name}: must be a non-empty string, got {repr(value)[:80]}", source=source)


#: Unix seconds as the simulator stamps its objects' times.
iso = rfc3339
