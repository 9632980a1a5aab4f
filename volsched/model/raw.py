"""The type of a raw Kubernetes object (a decoded JSON or YAML map) as the edges pass it around.

Only a name for a type: reading fields out of a raw object is :mod:`volsched.model.decode`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: A raw object as read: a watch event's, a YAML document's, a patch's body.
Raw = Mapping[str, Any]
#: A raw object being built or trimmed in place (the watch's pruned copies).
RawDict = dict[str, Any]
