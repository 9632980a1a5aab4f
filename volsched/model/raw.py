"""The type of a raw Kubernetes object (a decoded JSON or YAML map) as the edges pass it around, and the
few metadata reads the edges (cache, watches, writer, simulator) make on one before it is decoded.

Not decoding: building the scheduler's specs out of a raw object is :mod:`volsched.model.decode`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: A raw object as read: a watch event's, a YAML document's, a patch's body.
Raw = Mapping[str, Any]
#: A raw object being built or trimmed in place (the watch's pruned copies).
RawDict = dict[str, Any]


def meta_of(obj: Raw) -> Raw:
    """``metadata``, or an empty map when the object has none."""
    return obj.get("metadata") or {}


def uid_of(obj: Raw) -> str:
    """``metadata.uid`` as a string ("" when unset)."""
    return str(meta_of(obj).get("uid") or "")


def version_of(obj: Raw) -> str:
    """``metadata.resourceVersion`` as a string ("" when unset)."""
    return str(meta_of(obj).get("resourceVersion") or "")
