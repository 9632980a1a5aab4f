"""The simulator's input: Kubernetes objects read from YAML files, and the simulated clock they start on.

Files are read with the bounded loader (``volsched.model.yamlload``); a multi-document file or a List
gives one :class:`Document` per object, each remembering where it came from for error messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from volsched.model import yamlload
from volsched.model.errors import InputError

#: Simulated clock start for objects without a creationTimestamp (input order decides ties).
EPOCH = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


@dataclass
class Document:
    source: str  # "file: document N"
    obj: dict[str, Any]


def load_documents(paths: Sequence[str | Path]) -> list[Document]:
    """The objects of YAML files (multi-document, or a List), read with the bounded loader."""
    docs: list[Document] = []
    for path in paths:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
        for i, doc in enumerate(yamlload.load_all(data, source=str(path)), start=1):
            if doc is None:
                continue
            source = f"{path}: document {i}"
            if not isinstance(doc, dict):
                raise InputError("expected a Kubernetes object (a map with kind)", source=source)
            if doc.get("kind") == "List" or (
                isinstance(doc.get("kind"), str) and doc["kind"].endswith("List")
            ):
                items = doc.get("items")
                if not isinstance(items, list):
                    raise InputError("a List needs a list field items", source=source)
                for j, item in enumerate(items):
                    if not isinstance(item, dict):
                        raise InputError(f"items[{j}] is not an object", source=source)
                    docs.append(Document(f"{source}, items[{j}]", item))
            else:
                docs.append(Document(source, doc))
    return docs


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
